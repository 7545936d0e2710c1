#!/usr/bin/env python3
"""Fits the two physical quantities of gcsim's framework profiles and reports the held-out error.

    python3 calibration/fit/framework_fit.py --gcsim build/gcsim \
        --measurement calibration/measurements/h200-x1/framework_step_2026-11-26/framework_step.json

For each build (eager -> pytorch-eager, compile -> torch-compile):
  * elementwise_bandwidth (fraction of the achieved HBM bandwidth, <= 1) on the fit shape: gcsim's
    elementwise + norm kernel time is L + B / f (launch and wave overheads L, bytes over bandwidth
    B), read from two runs at f = 1 and f = 0.5; f = B / (measured - L), capped at 1;
  * optimizer_bandwidth (the same for the foreach AdamW passes) on the fit shape, from one run at 1;
  * host_overhead (host µs per launched kernel) on the launch-bound small shape, the only one whose
    step the host bounds: bisection on the simulated step against the measured one.
Then every shape runs with the fitted values (and with the Megatron profile, gcsim before framework
profiles) and the table gives step and per-class errors, and the host issue time per step
(kernels x fitted cost) against the measured one. Measured classes: gemm, attention, optimizer
(multi-tensor kernels) and elementwise (everything else: elementwise, norm, copies, cross entropy,
the embedding's sort; torch.profiler's per-kernel sums).
"""
import argparse
import json
import os
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIGS = os.path.join(HERE, "..", "validation", "framework_step")
FRAMEWORK = {"eager": "pytorch-eager", "compile": "torch-compile"}


def measured_classes(r):
    c = {"gemm": 0.0, "attention": 0.0, "elementwise": 0.0, "optimizer": 0.0}
    for k in r["kernels"]:
        cls = k["class"]
        c[cls if cls in ("gemm", "attention", "optimizer") else "elementwise"] += k["per_step_us"]
    return c


def run_gcsim(gcsim, shape, framework, overrides=()):
    with tempfile.TemporaryDirectory() as out:
        cmd = [gcsim, "run", os.path.join(CONFIGS, shape + ".yaml"), "-o", out, "-q",
               "-s", "workload.framework=" + framework]
        for o in overrides:
            cmd += ["-s", o]
        subprocess.run(cmd, check=True, capture_output=True)
        with open(os.path.join(out, "summary.json")) as f:
            s = json.load(f)
    k = s["breakdown"]["kernel_classes"]
    us = lambda v: v * 1e6  # noqa: E731
    return {"step": us(s["step_time_s"]), "gemm": us(k["gemm"]), "attention": us(k["attention"]),
            "elementwise": us(k["elementwise"] + k["norm"]), "optimizer": us(k["optimizer"]),
            "kernels": s["breakdown"]["host"]["kernels_per_step"],
            "host": us(s["breakdown"]["host"]["issue_s"])}


def fit(gcsim, results):
    fitted = {}
    for build, fw in FRAMEWORK.items():
        fit_r = next(r for r in results if r["build"] == build and r["shape"]["role"] == "fit")
        small = next(r for r in results if r["build"] == build and "launch-bound" in r["shape"]["role"])
        m = measured_classes(fit_r)["elementwise"]
        e1 = run_gcsim(gcsim, fit_r["shape"]["name"], fw, ["workload.elementwise_bandwidth=1"])["elementwise"]
        e05 = run_gcsim(gcsim, fit_r["shape"]["name"], fw, ["workload.elementwise_bandwidth=0.5"])["elementwise"]
        b = e05 - e1
        lat = e1 - b
        f = min(1.0, b / (m - lat))
        # The foreach optimizer's passes: time ~ bytes / (bandwidth x fraction); overheads are
        # ten launches, under 0.5%.
        o1 = run_gcsim(gcsim, fit_r["shape"]["name"], fw, ["workload.optimizer_bandwidth=1"])["optimizer"]
        fo = min(1.0, o1 / measured_classes(fit_r)["optimizer"])
        lo, hi = 0.0, 200.0
        for _ in range(16):
            mid = 0.5 * (lo + hi)
            s = run_gcsim(gcsim, small["shape"]["name"], fw,
                          ["workload.host_overhead=%.4fus" % mid, "workload.elementwise_bandwidth=%.4f" % f,
                           "workload.optimizer_bandwidth=%.4f" % fo])
            if s["step"] < small["step_us"]:
                lo = mid
            else:
                hi = mid
        fitted[build] = {"elementwise_bandwidth": f, "host_us_per_kernel": 0.5 * (lo + hi),
                         "optimizer_bandwidth": fo,
                         "bytes_time_us": b, "overhead_us": lat, "measured_elementwise_us": m}
    return fitted


def err(p, m):
    return 100.0 * (p - m) / m if m else float("nan")


def table(gcsim, results, fitted):
    rows = []
    for r in results:
        build, name = r["build"], r["shape"]["name"]
        f = fitted[build]
        g = run_gcsim(gcsim, name, FRAMEWORK[build],
                      ["workload.host_overhead=%.4fus" % f["host_us_per_kernel"],
                       "workload.elementwise_bandwidth=%.4f" % f["elementwise_bandwidth"],
                       "workload.optimizer_bandwidth=%.4f" % f["optimizer_bandwidth"]])
        before = run_gcsim(gcsim, name, "megatron")
        m = measured_classes(r)
        rows.append({"shape": name, "role": r["shape"]["role"], "build": build, "measured": m,
                     "measured_step": r["step_us"], "measured_host": r["host_us"],
                     "measured_kernels": r["kernels_per_step"], "gcsim": g, "before": before})
    return rows


def markdown(rows, fitted):
    out = ["| shape | build | role | class | measured (µs) | before (megatron) | err | after | err |",
           "|---|---|---|---|---:|---:|---:|---:|---:|"]
    for x in rows:
        for cls in ("step", "gemm", "attention", "elementwise", "optimizer"):
            m = x["measured_step"] if cls == "step" else x["measured"][cls]
            b, a = x["before"][cls], x["gcsim"][cls]
            out.append("| %s | %s | %s | %s | %.0f | %.0f | %+.1f%% | %.0f | %+.1f%% |" % (
                x["shape"], x["build"], x["role"], cls, m, b, err(b, m), a, err(a, m)))
    out.append("")
    out.append("| shape | build | measured host issue (µs/step) | gcsim kernels x cost | err | measured kernels | gcsim kernels |")
    out.append("|---|---|---:|---:|---:|---:|---:|")
    for x in rows:
        out.append("| %s | %s | %.0f | %.0f | %+.1f%% | %.0f | %.0f |" % (
            x["shape"], x["build"], x["measured_host"], x["gcsim"]["host"], err(x["gcsim"]["host"], x["measured_host"]),
            x["measured_kernels"], x["gcsim"]["kernels"]))
    out.append("")
    for b, f in fitted.items():
        out.append("- %s: elementwise_bandwidth %.3f (bytes time %.0f µs, overheads %.0f µs, measured %.0f µs), "
                   "optimizer_bandwidth %.3f, host %.1f µs per kernel" % (
                       b, f["elementwise_bandwidth"], f["bytes_time_us"], f["overhead_us"],
                       f["measured_elementwise_us"], f["optimizer_bandwidth"], f["host_us_per_kernel"]))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gcsim", required=True)
    ap.add_argument("--measurement", required=True)
    ap.add_argument("--json", help="write the rows and fitted values here")
    a = ap.parse_args()
    with open(a.measurement) as f:
        results = json.load(f)["results"]
    fitted = fit(a.gcsim, results)
    rows = table(a.gcsim, results, fitted)
    print(markdown(rows, fitted))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"fitted": fitted, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
