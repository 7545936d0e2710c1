#!/usr/bin/env python3
"""gcsim against calibration/microbench/strategy_step_bench.py's measurement: per strategy and
build, the step time, the kernel classes (mean over the ranks, as gcsim's breakdown.kernel_classes)
and the peak memory (the fullest rank), as a Markdown table with the errors and the strategy order.

    python3 calibration/fit/strategy_compare.py MEASUREMENT.json [--gcsim build/gcsim]
            [--gpu h100-sxm] [--split] [--stages] [-s key=value ...]

The configs are calibration/validation/strategy_step/<strategy>.yaml for the bench's default model
(strategy_step_gqa/ for `--model gqa`'s, chosen by the JSON's model name; eager as measured;
workload.framework=torch-compile for the compiled build); --gpu picks the preset of the measured
GPU (default: from the JSON's device name). --split adds, for rank 0, the elementwise kernels
split by access pattern (generic: PyTorch's non-vectorised kernels and inductor's cats, against
gcsim's generic passes; reduction: inductor's fused reductions; vectorized: the rest;
framework_fit.py's PassSplit and access_of). --stages adds, for each pipeline, the NCCL time per
step of each stage as the profiler counts it (measured: the mean of the stage's ranks; gcsim:
summary.json's per_rank communication_with_waits_s).
tests/scenario/test_strategy_measured.cpp checks the same numbers.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from framework_fit import PassSplit, access_of  # noqa: E402
CONFIG = {"DP4": "dp4", "TP4": "tp4", "TP2xDP2": "tp2_dp2", "PP2xDP2": "pp2_dp2", "PP4": "pp4",
          "TP2xPP2": "tp2_pp2", "DP4flush": "dp4_flush"}
# The bench's model (the JSON's model.name) -> the folder of its configs.
CONFIG_DIRS = {"llama_h4096_L8_s4096": "strategy_step", "llama3_h3072_L8_s4096_gqa8": "strategy_step_gqa"}
FRAMEWORK = {"eager": "pytorch-eager", "compile": "torch-compile"}
CLASSES = ["gemm", "attention", "elementwise+norm", "optimizer", "communication"]


def gpu_preset(device_name):
    n = device_name.lower()
    return "h200-sxm" if "h200" in n else "h100-sxm"


def measured_classes(rec):
    """Kernel time per step by class, the mean over ranks; elementwise + norm + other together
    (the profile's passes do not follow PyTorch's kernel names one to one)."""
    out = {c: 0.0 for c in CLASSES}
    for r in rec["ranks"]:
        for c, v in r["classes"].items():
            key = c if c in ("gemm", "attention", "optimizer", "communication") else "elementwise+norm"
            out[key] += v["us"] * 1e-6 / len(rec["ranks"])
    return out


def measured_stages(rec):
    """NCCL kernel time per step of each pipeline stage, the mean over its ranks (s)."""
    sums, counts = {}, {}
    for r in rec["ranks"]:
        p = r["pp_rank"]
        sums[p] = sums.get(p, 0.0) + r["classes"].get("communication", {"us": 0.0})["us"] * 1e-6
        counts[p] = counts.get(p, 0) + 1
    return {p: sums[p] / counts[p] for p in sums}


def leftovers(results):
    """Bytes a point holds between its steps beyond its parameters, Adam's m and v (12 B per
    parameter) and DDP's fp32 buckets (4 B), above the least any point holds: memory an earlier
    point left allocated (PP4 after PP2xDP2 kept the latter's buckets), taken off the peak."""
    held = {}
    for rec in results:
        for r in rec["ranks"]:
            held[(rec["strategy"], rec["build"], r["rank"])] = (
                r["memory_between_steps_bytes"] - r["params"] * (12 + (4 if rec["dp"] > 1 else 0)))
    floor = min(held.values())
    return {k: (v - floor if v - floor > 0.5e9 else 0.0) for k, v in held.items()}


def simulate(gcsim, rec, gpu, overrides):
    with tempfile.TemporaryDirectory() as tmp:
        cfg = config_path(rec["strategy"])
        cmd = [gcsim, "run", cfg, "-s", "workload.framework=" + FRAMEWORK[rec["build"]], "-s",
               "cluster.gpu=" + gpu, "-o", os.path.join(tmp, "out"), "-q"]
        for o in overrides:
            cmd += ["-s", o]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(tmp, "out", "summary.json")) as f:
            s = json.load(f)
    k = s["breakdown"]["kernel_classes"]
    classes = {"gemm": k["gemm"], "attention": k["attention"], "elementwise+norm": k["elementwise"] + k["norm"],
               "optimizer": k["optimizer"],
               # As the profiler counts NCCL kernels: from each rank's issue, waits for peers included.
               "communication": s["breakdown"]["communication_with_waits_s"]}
    stages = {r["pipeline_rank"]: r["communication_with_waits_s"] for r in s["per_rank"]}
    return s["step_time_s"], classes, s["memory"]["peak_bytes_per_gpu"], stages


CONFIG_DIR = ["strategy_step"]  # set by main() from the measurement's model


def config_path(strategy):
    return os.path.join(ROOT, "calibration/validation", CONFIG_DIR[0], CONFIG[strategy] + ".yaml")


def split_row(gcsim, rec, gpu, overrides):
    """Rank 0's elementwise kernels by access pattern: measured and gcsim, ms per step."""
    meas = {"generic": 0.0, "reduction": 0.0, "vectorized": 0.0, "streaming": 0.0}
    for k in rec["rank0_kernels"]:
        if k["class"] in ("gemm", "attention", "optimizer", "communication"):
            continue
        meas[access_of(k["name"])] += k["per_step_us"] * 1e-3
    extra = ["cluster.gpu=" + gpu] + list(overrides)
    sim = PassSplit(gcsim, config_path(rec["strategy"]), FRAMEWORK[rec["build"]], extra).times(extra)
    return " | ".join("%.1f | %.1f | %+.0f%%" % (meas[c], sim[c] * 1e-3, err(sim[c] * 1e-3, meas[c]))
                      for c in ("generic", "reduction", "vectorized", "streaming"))


def err(sim, meas):
    return 100.0 * (sim - meas) / meas if meas else float("nan")


def order(names, times):
    return [n for _, n in sorted(zip(times, names))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("measurement")
    ap.add_argument("--gcsim", default=os.path.join(ROOT, "build", "gcsim"))
    ap.add_argument("--gpu", default=None)
    ap.add_argument("--split", action="store_true", help="rank 0's elementwise kernels by access pattern")
    ap.add_argument("--stages", action="store_true", help="each pipeline stage's NCCL time per step")
    ap.add_argument("-s", action="append", default=[], help="an override passed to every gcsim run")
    a = ap.parse_args()
    with open(a.measurement) as f:
        doc = json.load(f)
    gpu = a.gpu or gpu_preset(doc["meta"]["device_name"])
    model = doc.get("model", {}).get("name", "llama_h4096_L8_s4096")  # early files: the default model
    if model not in CONFIG_DIRS:
        print("%s: no configs for model %r (known: %s)" % (a.measurement, model, ", ".join(CONFIG_DIRS)),
              file=sys.stderr)
        return 2
    CONFIG_DIR[0] = CONFIG_DIRS[model]
    print("Measured: %s x%d, %s; gcsim preset %s\n" % (doc["meta"]["device_name"], doc["meta"]["world_size"],
                                                       doc["meta"]["date_utc"], gpu))
    print("| strategy | build | step meas. ms | gcsim ms | err | " +
          " | ".join(CLASSES) + " | peak meas. GiB | gcsim GiB | err |")
    print("|---|---|---:|---:|---:|" + "---:|" * len(CLASSES) + "---:|---:|---:|")
    by_build = {}
    per_stage = {}
    extra = leftovers(doc["results"])
    for rec in doc["results"]:
        t, cls, peak, stages = simulate(a.gcsim, rec, gpu, a.s)
        if rec["pp"] > 1:
            per_stage[(rec["strategy"], rec["build"])] = (measured_stages(rec), stages)
        mcls = measured_classes(rec)
        e = err(t * 1e6, rec["step_us"])
        pm = max(r["peak_memory_bytes"] - extra[(rec["strategy"], rec["build"], r["rank"])]
                 for r in rec["ranks"])
        by_build.setdefault(rec["build"], []).append((rec["strategy"], rec["step_us"], t * 1e6, e))
        print("| %s | %s | %.1f | %.1f | %+.1f%% | %s | %.1f | %.1f | %+.1f%% |" % (
            rec["strategy"], rec["build"], rec["step_us"] / 1e3, t * 1e3, e,
            " | ".join("%+.0f%% (%.1f)" % (err(cls[c], mcls[c]), mcls[c] * 1e3) for c in CLASSES),
            pm / 2**30, peak / 2**30, err(peak, pm)))
    if a.stages:
        print("\n| strategy | build | stage | NCCL meas. ms | gcsim ms | err |")
        print("|---|---|---:|---:|---:|---:|")
        for (strategy, build), (meas, sim) in per_stage.items():
            for stage in sorted(meas):
                print("| %s | %s | %d | %.1f | %.1f | %+.1f%% |" % (
                    strategy, build, stage, meas[stage] * 1e3, sim[stage] * 1e3,
                    err(sim[stage], meas[stage])))
    if a.split:
        print("\n| strategy | build | generic meas. ms | gcsim ms | err | reduction meas. ms | gcsim ms | err | "
              "vectorized meas. ms | gcsim ms | err | streaming meas. ms | gcsim ms | err |")
        print("|---|---|" + "---:|" * 12)
        for rec in doc["results"]:
            print("| %s | %s | %s |" % (rec["strategy"], rec["build"], split_row(a.gcsim, rec, gpu, a.s)))
    print()
    for build, rows in by_build.items():
        errs = [abs(r[3]) for r in rows]
        names = [r[0] for r in rows]
        mo, so = order(names, [r[1] for r in rows]), order(names, [r[2] for r in rows])
        print("%s: mean |err| %.1f%%, max %.1f%%; measured order %s; gcsim %s (%s)" % (
            build, sum(errs) / len(errs), max(errs), " < ".join(mo), " < ".join(so),
            "same" if mo == so else "DIFFERENT"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
