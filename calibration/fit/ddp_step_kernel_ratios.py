#!/usr/bin/env python3
"""Rank 0's memory-bound kernels in the real DP4 eager step, beside DDP's all-reduces against the
same kernels without them: ddp_bucket_timeline.py's profiled timelines of the step with DDP's
all-reduces on ("sync") and under no_sync. Per kernel name: the median duration of its instances
with at least 90% of their span under an NCCL kernel (sync run) over the median of its instances
in the no_sync run, and the time that adds (two profiled steps).

    python3 calibration/fit/ddp_step_kernel_ratios.py \\
        calibration/measurements/h100-x4/ddp_bucket_timeline_2026-11-26/ddp_bucket_timeline.json

A kernel name can cover several shapes (the medians then mix them; the bf16 mul's 2.9x is such a
mix); the ones that matter here (silu_backward, the SwiGLU cat, the fp32 muls of the RMSNorm
backward) have one shape per step.
"""
import collections
import json
import re
import statistics
import sys


def timeline(doc, sync):
    for rec in doc["results"]:
        if rec["strategy"] == "DP4" and rec["build"] == "eager" and rec["sync"] == sync:
            return rec["ranks"][0]["timeline"]
    raise SystemExit("no DP4 eager %s timeline" % ("sync" if sync else "no_sync"))


def split(tl):
    names, rows = tl["names"], tl["kernels"]
    nccl = [(r[2], r[2] + r[3]) for r in rows if r[1] == "communication"]
    out = collections.defaultdict(lambda: {"beside": [], "alone": []})
    for r in rows:
        if r[1] not in ("elementwise", "norm", "other") or "spin_kernel" in names[r[0]]:
            continue
        s, e = r[2], r[2] + r[3]
        ov = max((min(e, b) - max(s, a) for a, b in nccl), default=0.0)
        if ov >= 0.9 * r[3]:
            out[names[r[0]]]["beside"].append(r[3])
        elif ov <= 0:
            out[names[r[0]]]["alone"].append(r[3])
    return out


def main():
    doc = json.load(open(sys.argv[1]))
    on, off = split(timeline(doc, True)), split(timeline(doc, False))
    rows = []
    for name, v in on.items():
        ref = off.get(name, {}).get("alone")
        if not v["beside"] or not ref:
            continue
        b, a = statistics.median(v["beside"]), statistics.median(ref)
        rows.append((sum(v["beside"]) - a * len(v["beside"]), name, len(v["beside"]), a, b))
    rows.sort(reverse=True)
    print("| kernel (rank 0, DP4 eager, 4x H100) | beside NCCL | no_sync us | beside us | ratio |")
    print("|---|---:|---:|---:|---:|")
    for extra, name, n, a, b in rows:
        if extra < 50.0:
            continue
        short = re.sub(r"at::native::|\(anonymous namespace\)::|void |c10::", "", name)
        short = re.sub(r"\)\(.*$", ")", short)[:110]
        print(f"| {short} | {n} | {a:.1f} | {b:.1f} | {b / a:.2f} |")
    print("added per step: %.1f ms" % (sum(r[0] for r in rows) / 2e3))


if __name__ == "__main__":
    main()
