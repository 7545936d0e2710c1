#!/usr/bin/env python3
"""Fits gcsim's pytorch-eager serving profile on serving_step_bench.py's measurement and reports the
error at every measured point, before (gcsim's vLLM kernels, no host cost: the model before
`workload.framework` existed) and after.

    python3 calibration/fit/serving_fit.py --gcsim build/gcsim \
        --measurement calibration/measurements/h100-x4/serving_step_2026-11-26/serving_step.json

For a held-out model's measurement (serving_step_bench.py --model l3_8b) pass the fitted values,
--host-us 39.62 --bandwidth 1.0, so nothing is refitted; the configs are chosen by the JSON's model.
Fitted, each on its own points (everything else is held out):
  * host_overhead (host µs per launched kernel, outside CUDA graphs): bisection on gcsim's eager
    step at each FIT_HOST decode point (host-bound) against the measured step, averaged;
  * elementwise_bandwidth (the vectorized passes' fraction of the achieved HBM bandwidth, <= 1):
    bisection on gcsim's elementwise + norm class of the FIT_BANDWIDTH prefill against the measured
    elementwise + norm + other kernels (generic_ops_per_element stays the training eager profile's).
The configs are calibration/validation/serving/*.yaml (calibration/fit/serving_configs.py); the
eager build runs them as they are, the graph build with serving.cuda_graphs=true. gcsim's step is
summary.json's breakdown.decode_steps (or prefill_steps) mean_step_s; the classes its
kernel_classes_s. Measured: the replica's slowest rank's median step; classes are rank 0's
torch.profiler sums (communication is the NCCL kernels, their waits for the other ranks included).
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

from serving_configs import name as config_file

HERE = os.path.dirname(os.path.abspath(__file__))
# The bench's model (the JSON's model.name) -> the folder of its configs (serving_configs.py --model).
CONFIG_DIRS = {"llama2_70b_shape_L8": "serving", "llama3_8b_shape_L8": "serving_l3_8b",
               "llama2_70b_full": "serving_l70_full"}
CONFIGS = os.path.join(HERE, "..", "validation", "serving")  # main() sets the measurement's
FIT_HOST = [(4, "decode", 1, 512), (4, "decode", 256, 2048)]
FIT_BANDWIDTH = (4, "prefill", 1, 8192)
CLASSES = ["gemm", "attention", "elementwise+norm", "communication"]


def config_of(tp, kind, batch, kv):
    return os.path.join(CONFIGS, config_file(tp, kind, batch, kv))


def key(r):
    return (r["tp"], r["kind"], r["batch"], r["kv_len"])


def measured_classes(build):
    c = {k: v["us"] for k, v in build["classes_rank0"].items()}
    return {"gemm": c.get("gemm", 0.0), "attention": c.get("attention", 0.0),
            "elementwise+norm": c.get("elementwise", 0.0) + c.get("norm", 0.0) + c.get("other", 0.0),
            "communication": c.get("communication", 0.0)}


def run_gcsim(gcsim, cfg, kind, overrides):
    with tempfile.TemporaryDirectory() as d:
        cmd = [gcsim, "run", cfg, "-o", d, "-q"]
        for o in overrides:
            cmd += ["-s", o]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(d, "summary.json")) as f:
            s = json.load(f)
    b = s["breakdown"]["decode_steps" if kind == "decode" else "prefill_steps"]
    c = {k: v * 1e6 for k, v in b["kernel_classes_s"].items()}
    return {"step_us": b["mean_step_s"] * 1e6, "kernels": b["kernels_per_step"],
            "classes": {"gemm": c["gemm"], "attention": c["attention"],
                        "elementwise+norm": c["elementwise"] + c["norm"], "communication": c["communication"]}}


def fit_host(gcsim, points):
    """Bisection on gcsim's eager step at each FIT_HOST point against the measured one (host-bound:
    the step is its launches x the cost), averaged. The bench's host_us is not used: its 5 steps
    behind a 60 ms GPU sleep filled CUDA's launch queue, so the host waited for the GPU (~17 ms per
    step, more than the steps themselves)."""
    per = []
    for k in FIT_HOST:
        r = points.get(k)
        if not (r and "eager" in r["builds"]):
            continue
        want = r["builds"]["eager"]["step_us"]
        cfg = config_of(*k)
        lo, hi = 0.0, 200.0
        for _ in range(30):
            mid = 0.5 * (lo + hi)
            if run_gcsim(gcsim, cfg, k[1], ["workload.host_overhead=%.4fus" % mid])["step_us"] > want:
                hi = mid
            else:
                lo = mid
        per.append(lo)
        print("host fit point TP%d %s b%d kv%d: measured eager step %.0f us -> %.3f us per launch" % (k + (want, lo)))
    return statistics.mean(per) if per else None


def fit_bandwidth(gcsim, points, host_us):
    r = points.get(FIT_BANDWIDTH)
    if not r:
        return None
    want = measured_classes(r["builds"]["eager"])["elementwise+norm"]
    cfg = config_of(*FIT_BANDWIDTH)

    def model(f):
        return run_gcsim(gcsim, cfg, "prefill", ["workload.host_overhead=%.3fus" % host_us,
                                                 "workload.elementwise_bandwidth=%.6f" % f])["classes"]["elementwise+norm"]

    lo, hi = 0.2, 1.0
    if model(hi) >= want:
        print("bandwidth: even at 1.0 the model's class is above the measured one: capped at 1.0")
        return 1.0
    for _ in range(30):
        mid = 0.5 * (lo + hi)
        if model(mid) > want:
            lo = mid
        else:
            hi = mid
    print("bandwidth fit point TP%d %s b%d kv%d: measured elementwise+norm %.1f us -> fraction %.4f" % (
        FIT_BANDWIDTH + (want, hi)))
    return hi


def pct(model, meas):
    return 100.0 * (model - meas) / meas if meas else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gcsim", default="build/gcsim")
    ap.add_argument("--measurement", required=True)
    ap.add_argument("--host-us", type=float, help="skip the host fit: use this")
    ap.add_argument("--bandwidth", type=float, help="skip the bandwidth fit: use this")
    a = ap.parse_args()
    with open(a.measurement) as f:
        doc = json.load(f)
    global CONFIGS
    CONFIGS = os.path.join(HERE, "..", "validation",
                           CONFIG_DIRS[doc.get("model", {}).get("name", "llama2_70b_shape_L8")])
    points = {key(r): r for r in doc["results"]}
    host = a.host_us if a.host_us is not None else fit_host(a.gcsim, points)
    bw = a.bandwidth if a.bandwidth is not None else fit_bandwidth(gcsim=a.gcsim, points=points, host_us=host)
    print("\nfitted: host_overhead %.3f us per kernel, elementwise_bandwidth %.4f\n" % (host, bw))
    after = ["workload.host_overhead=%.3fus" % host, "workload.elementwise_bandwidth=%.6f" % bw]
    fitted = set(FIT_HOST) | {FIT_BANDWIDTH}
    print("| point | build | measured (us) | before | after | kernels meas/gcsim | "
          + " | ".join("%s meas / after" % c for c in CLASSES) + " |")
    print("|---|---|---:|---:|---:|---:|" + "---:|" * len(CLASSES))
    errs = {"before": {}, "after": {}}
    for k in sorted(points, key=lambda k: (-k[0], k[1], k[2], k[3])):
        r = points[k]
        tp, kind, batch, kv = k
        for build, extra in (("eager", []), ("graph", ["workload.serving.cuda_graphs=true"])):
            if build not in r["builds"]:
                continue
            m = r["builds"][build]
            cfg = config_of(*k)
            before = run_gcsim(a.gcsim, cfg, kind, ["workload.framework=vllm"] + extra)
            aft = run_gcsim(a.gcsim, cfg, kind, after + extra)
            eb, ea = pct(before["step_us"], m["step_us"]), pct(aft["step_us"], m["step_us"])
            errs["before"].setdefault(build, []).append(eb)
            if k not in fitted:
                errs["after"].setdefault(build, []).append(ea)
            mc = measured_classes(m)
            cells = " | ".join("%.0f / %+.0f%%" % (mc[c], pct(aft["classes"][c], mc[c])) for c in CLASSES)
            label = "TP%d %s %s%s" % (tp, kind, "b%d kv%d" % (batch, kv) if kind == "decode" else "s%d" % kv,
                                      " (fit)" if k in fitted else "")
            print("| %s | %s | %.1f | %+.1f%% | %+.1f%% | %.0f / %.0f | %s |" % (
                label, build, m["step_us"], eb, ea, m["kernels_per_step"], aft["kernels"], cells))
    for when in ("before", "after"):
        for build, e in errs[when].items():
            print("%s, %s (%s): %+.1f .. %+.1f%%, mean |err| %.1f%% over %d points" % (
                when, build, "all points" if when == "before" else "held out", min(e), max(e),
                statistics.mean(abs(x) for x in e), len(e)))


if __name__ == "__main__":
    main()
