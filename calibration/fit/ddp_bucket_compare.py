#!/usr/bin/env python3
"""DDP's gradient buckets measured (calibration/microbench/ddp_bucket_timeline.py) against gcsim's
(workloads/training/grad_buckets.h): per point the all-reduces DDP launched (count, sizes), where
rank 0's NCCL kernels ran in the backward, which kernel classes ran beside them, and each class with
the all-reduces on against the same step under no_sync; then gcsim's buckets and classes for the
same config (calibration/validation/strategy_step/<strategy>.yaml).

    python3 calibration/fit/ddp_bucket_compare.py MEASUREMENT.json [--gcsim build/gcsim]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CONFIG = {"DP4": "dp4", "TP2xDP2": "tp2_dp2"}
FRAMEWORK = {"eager": "pytorch-eager", "compile": "torch-compile"}


def group(c):
    return "elementwise+norm" if c in ("elementwise", "norm", "other") else c


def overlap_split(timeline):
    """Kernel time per class on rank 0, split by whether an NCCL kernel ran beside it."""
    names = timeline["names"]
    rows = timeline["kernels"]
    nccl = [(r[2], r[2] + r[3]) for r in rows if r[1] == "communication"]
    out = {}
    for r in rows:
        if r[1] == "communication" or "spin_kernel" in names[r[0]]:
            continue
        s, e = r[2], r[2] + r[3]
        beside = any(a < e and b > s for a, b in nccl)
        d = out.setdefault(group(r[1]), {"beside": 0.0, "alone": 0.0})
        d["beside" if beside else "alone"] += r[3] / 2.0  # two profiled steps
    return out


def measured(doc):
    for rec in doc["results"]:
        r0 = rec["ranks"][0]
        label = "%s %s %s" % (rec["strategy"], rec["build"], "sync" if rec["sync"] else "no_sync")
        print("## %s: step %.1f ms" % (label, rec["step_us"] / 1e3))
        launches = r0.get("allreduce_launches", [])
        if launches:
            sizes = [x["numel"] * 4 for x in launches]
            print("all-reduce launches on rank 0 (one step): %d; bytes (fp32): %s" % (
                len(sizes), ", ".join("%.1f MiB" % (b / 2**20) for b in sizes)))
        for k, v in sorted(r0.get("ddp_logging", {}).items()):
            print("  ddp %s = %s" % (k, v[:200]))
        tl = r0.get("timeline")
        if tl:
            marks = tl["markers_us"]
            rows = tl["kernels"]
            if len(marks) >= 3:
                bwd0, bwd1 = marks[1], marks[2]
                end = marks[3] if len(marks) > 3 else float("inf")  # the second step's forward
                starts = [r[2] for r in rows if r[1] == "communication" and bwd0 <= r[2] < end]
                print("backward %.1f .. %.1f ms; NCCL kernel starts (ms into the backward): %s" % (
                    bwd0 / 1e3, bwd1 / 1e3, " ".join("%.1f" % ((s - bwd0) / 1e3) for s in starts)))
            split = overlap_split(tl)
            print("rank 0 class time per step, beside NCCL / alone (ms): " + "; ".join(
                "%s %.1f / %.1f" % (c, v["beside"] / 1e3, v["alone"] / 1e3) for c, v in sorted(split.items())))
        cls = {}
        for r in rec["ranks"]:
            for c, v in r["classes"].items():
                cls[group(c)] = cls.get(group(c), 0.0) + v["us"] / 1e3 / len(rec["ranks"])
        print("classes, mean over ranks (ms): " + ", ".join("%s %.1f" % (c, v) for c, v in sorted(cls.items())))
        print()


def simulated(gcsim, strategy, build, gpu, overrides=()):
    cfg = os.path.join(ROOT, "calibration/validation/strategy_step/%s.yaml" % CONFIG[strategy])
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out")
        subprocess.run([gcsim, "run", cfg, "-s", "workload.framework=" + FRAMEWORK[build], "-s",
                        "cluster.gpu=" + gpu, "-o", out, "-q", "--trace"] +
                       [x for o in overrides for x in ("-s", o)], check=True, stdout=subprocess.DEVNULL)
        s = json.load(open(os.path.join(out, "summary.json")))
        t = json.load(open(os.path.join(out, "trace.json")))
    ev = t["traceEvents"] if isinstance(t, dict) else t
    dp = [e for e in ev if e.get("ph") == "X" and e.get("pid") == 0 and e.get("cat") == "collective"
          and " grad bucket " in e["name"]]
    dp.sort(key=lambda e: e["ts"])
    sizes = [e["args"]["bytes"] for e in dp]
    print("## gcsim %s %s (%s): step %.1f ms; %d DP buckets: %s" % (
        strategy, build, gpu, s["step_time_s"] * 1e3, len(sizes), ", ".join("%.1f MiB" % (b / 2**20) for b in sizes)))
    cls = {}
    for c, v in s["breakdown"]["kernel_classes"].items():
        cls[group(c)] = cls.get(group(c), 0.0) + v * 1e3
    print("classes (ms): " + ", ".join("%s %.1f" % (c, v) for c, v in sorted(cls.items())))
    n, beside, alone = memory_kernels_beside(ev)
    print("rank 0's memory-bound kernels beside a collective: %d, %.1f ms (%.1f ms alone, +%.1f ms)" % (
        n, beside / 1e3, alone / 1e3, (beside - alone) / 1e3))
    print()


MEMORY_KERNELS = ("elementwise", "layer_norm", "rms_norm", "softmax", "memcpy")


def memory_kernels_beside(events):
    """gcsim's trace, rank 0: the memory-bound kernels that overlap a collective, their summed span
    and their time alone (each kernel's tile time on all SMs per wave plus the 1 us per-wave
    overhead; the launch latency is in neither: spans start at the first tile), in us."""
    x = [e for e in events if e.get("ph") == "X" and e.get("pid") == 0]
    coll = [(e["ts"], e["ts"] + e["dur"]) for e in x if e.get("cat") == "collective"]
    n, beside, alone = 0, 0.0, 0.0
    for e in x:
        a = e.get("args", {})
        if e.get("cat") != "compute" or not a.get("kernel", "").startswith(MEMORY_KERNELS):
            continue
        s, f = e["ts"], e["ts"] + e["dur"]
        if any(cs < f and ce > s for cs, ce in coll):
            n += 1
            beside += e["dur"]
            alone += (a["tile_us"] + 1.0) * a["waves_alone"]
    return n, beside, alone


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("measurement")
    ap.add_argument("--gcsim", default=os.path.join(ROOT, "build/gcsim"))
    ap.add_argument("-s", action="append", default=[], help="an override passed to every gcsim run")
    a = ap.parse_args()
    doc = json.load(open(a.measurement))
    measured(doc)
    gpu = "h200-sxm" if "h200" in doc.get("meta", {}).get("device_name", "").lower() else "h100-sxm"
    seen = set()
    for rec in doc["results"]:
        key = (rec["strategy"], rec["build"])
        if key in seen or rec["strategy"] not in CONFIG:
            continue
        seen.add(key)
        simulated(a.gcsim, rec["strategy"], rec["build"], gpu, a.s)
    return 0


if __name__ == "__main__":
    sys.exit(main())
