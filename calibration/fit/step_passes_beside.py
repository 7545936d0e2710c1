#!/usr/bin/env python3
"""The DP4 step's eager backward passes beside DDP's all-reduces: measured one at a time in the
steady harness (gemm_beside_nccl.py --suite step: each pass back to back beside back-to-back fp32
all-reduces of the step's 344 MiB fc1 bucket, 4 GPUs) against what gcsim charges the same passes in
the simulated DP4 step (calibration/validation/strategy_step/dp4.yaml, pytorch-eager): on rank 0,
each kernel of the pass that runs wholly inside a DP all-reduce, its span over its time alone (its
tile time plus the 1 us per-wave overhead, times its waves alone; ddp_bucket_compare.py's measure);
"inside" is at least 90% of its span under one all-reduce.

    python3 calibration/fit/step_passes_beside.py W4_DDP.json [--gcsim build/gcsim] [-s key=value]

The harnesses differ (steady back-to-back pairs against the step's kernel mix beside buckets of
64-500 MiB), so this is a check of the charge per pass, not a replay.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
# measured kernel name -> regular expression over gcsim's kernel names (layer number dropped)
PASSES = {
    "step_cat_bf16_2x172MiB": r"act bwd cat$",
    "step_silu_bwd_bf16_172MiB": r"act bwd silu bwd$",
    "step_mul_bf16_172MiB": r"act bwd mul silu$",
    "step_pow_fp32_128MiB": r"norm[12] bwd pow$",
    "step_mul_rsqrt_fp32_128MiB": r"norm[12] bwd mul rsqrt$",
    "step_rmsnorm_bwd_eager_64MiB": None,  # a whole backward: no one gcsim kernel
}


def measured(path, comm):
    d = json.load(open(path))
    out = {}
    for key, o in d["ranks"]["0"].get("interf", {}).items():
        if o.get("comm") != comm or o.get("kernel") not in PASSES:
            continue
        ks = [r["interf"][key]["ratio_kernel"] for r in d["ranks"].values()
              if key in r.get("interf", {}) and r["interf"][key].get("ratio_kernel")]
        out[o["kernel"]] = (statistics.mean(ks) if ks else None, o["kernel_alone_us"])
    return out


def simulated(gcsim, overrides, gpu):
    cfg = os.path.join(ROOT, "calibration/validation/strategy_step/dp4.yaml")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out")
        subprocess.run([gcsim, "run", cfg, "-s", "workload.framework=pytorch-eager", "-s",
                        "cluster.gpu=" + gpu, "-o", out, "-q", "--trace"] +
                       [x for o in overrides for x in ("-s", o)], check=True,
                       stdout=subprocess.DEVNULL)
        t = json.load(open(os.path.join(out, "trace.json")))
    ev = t["traceEvents"] if isinstance(t, dict) else t
    x = [e for e in ev if e.get("ph") == "X" and e.get("pid") == 0]
    coll = [(e["ts"], e["ts"] + e["dur"]) for e in x if e.get("cat") == "collective"
            and " grad bucket " in e["name"]]
    out = {}
    for name, pat in PASSES.items():
        if pat is None:
            continue
        ratios, alone = [], []
        for e in x:
            if e.get("cat") != "compute" or not re.search(pat, re.sub(r"L\d+ ", "", e["name"])):
                continue
            a = e["args"]
            t_alone = (a["tile_us"] + 1.0) * a["waves_alone"]
            s, f = e["ts"], e["ts"] + e["dur"]
            alone.append(t_alone)
            if max((min(f, ce) - max(s, cs) for cs, ce in coll), default=0.0) >= 0.9 * (f - s):
                ratios.append(e["dur"] / t_alone)
        out[name] = (statistics.median(ratios) if ratios else None, len(ratios),
                     statistics.median(alone) if alone else None)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("measurement")
    ap.add_argument("--gcsim", default=os.path.join(ROOT, "build/gcsim"))
    ap.add_argument("--comm", default="ar344MiBx2_fp32")
    ap.add_argument("--gpu", default=None)
    ap.add_argument("-s", action="append", default=[])
    a = ap.parse_args()
    doc = json.load(open(a.measurement))
    name = (doc.get("meta", {}).get("devices") or [{}])[0].get("name", "")
    gpu = a.gpu or ("h200-sxm" if "h200" in name.lower() else "h100-sxm")
    m = measured(a.measurement, a.comm)
    g = simulated(a.gcsim, a.s, gpu)
    print(f"| pass ({name or gpu}; beside {a.comm}) | alone measured us | gcsim alone us | "
          "measured beside/alone | gcsim in the step | gcsim kernels inside an all-reduce |")
    print("|---|---:|---:|---:|---:|---:|")
    for k in PASSES:
        mr, ma = m.get(k, (None, None))
        gr, n, ga = g.get(k, (None, 0, None))

        def f(v, p=3):
            return "-" if v is None else f"{v:.{p}f}"
        print(f"| {k} | {f(ma, 1)} | {f(ga, 1)} | {f(mr)} | {f(gr)} | {n} |")


if __name__ == "__main__":
    main()
