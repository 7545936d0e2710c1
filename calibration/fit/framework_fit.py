#!/usr/bin/env python3
"""Fits the physical quantities of gcsim's framework profiles and reports the held-out error.

    python3 calibration/fit/framework_fit.py --gcsim build/gcsim \
        --measurement calibration/measurements/h200-x1/framework_step_2026-11-26/framework_step.json \
        [--heldout calibration/measurements/h100-sxm/framework_step_2026-11-26/framework_step.json]

For each build (eager -> pytorch-eager, compile -> torch-compile), on the fit shape:
  * the measured elementwise kernels split by access pattern (generic_kernel(): PyTorch's
    non-vectorised TensorIterator kernels, the non-vectorised cat, inductor's kernels that cat
    halves) against gcsim's passes split the same way (framework_profile.h, PassAccess): gcsim's
    passes are told apart in its trace, the kernels whose time doubles with
    workload.generic_ops_per_element (generic) or as workload.elementwise_bandwidth halves
    (vectorized);
  * elementwise_bandwidth (fraction of the achieved HBM bandwidth, <= 1): the vectorized passes'
    time is L + B / f (launch and wave overheads L, bytes over bandwidth B; runs at f = 1 and
    0.5), f = B / (measured vectorized - L), capped at 1;
  * generic_ops_per_element (SM operations per element of the generic passes, at the GPU's
    vector rate): bisection on the generic passes' time against the measured generic kernels;
  * optimizer_bandwidth (the same for the foreach AdamW passes) on the fit shape, from one run at 1;
  * host_overhead (host µs per launched kernel) on the launch-bound small shape, the only one whose
    step the host bounds: bisection on the simulated step against the measured one.
Then every shape runs with the fitted values (and with the Megatron profile, gcsim before framework
profiles) and the table gives step and per-class errors, and the host issue time per step
(kernels x fitted cost) against the measured one. --heldout runs the same table, nothing refitted,
on another GPU's measurement (its preset from the device name). Measured classes: gemm, attention,
optimizer (multi-tensor kernels) and elementwise (everything else: elementwise, norm, copies,
cross entropy, the embedding's sort; torch.profiler's per-kernel sums).
"""
import argparse
import json
import os
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIGS = os.path.join(HERE, "..", "validation", "framework_step")
FRAMEWORK = {"eager": "pytorch-eager", "compile": "torch-compile"}


def generic_kernel(name):
    """A measured kernel on the SM-bound generic path (framework_profile.h, PassAccess::generic):
    PyTorch's non-vectorised elementwise kernels (broadcasts, strided views, casting copies,
    mixed-type adds), the non-vectorised cat, the embedding backward's scatter, and inductor's
    pointwise kernels that cat two halves (rotary, SwiGLU backward)."""
    if name.startswith("triton_"):
        return "_cat_" in name
    return any(p in name for p in ("at::native::elementwise_kernel<", "unrolled_elementwise_kernel<",
                                   "CatArrayBatchedCopy<", "sum_and_scatter", "compute_grad_weight"))


def reduction_kernel(name):
    """A measured kernel of the reduction kind (framework_profile.h, PassAccess::reduction):
    inductor's log-softmax forward (online softmax) and backward over the vocabulary, a row per
    CTA. The norms' reductions and the loss's small nll kernel stream and stay with the
    vectorized kernels, as their passes do; so do eager's reductions."""
    return name.startswith("triton_") and ("prepare_softmax_online" in name or
                                           "log_softmax_backward" in name)


def streaming_kernel(name):
    """A measured kernel of the streaming kind (framework_profile.h, PassAccess::streaming):
    PyTorch's vectorised cat of contiguous tensors (SwiGLU's gradient) and the eager loss's
    (log_)softmax row kernels, plain contiguous loads at the achieved copy rate."""
    return "CatArrayBatchedCopy_vectorized" in name or "cunn_SoftMax" in name


# gcsim's eager passes of that kind, by the end of their names (framework_profile.cpp).
STREAMING_PASSES = ("cross entropy log_softmax", "cross entropy log_softmax bwd", "act bwd cat")
# Streaming passes whose measured kernels share their names with other vectorized kernels (PyTorch's
# bf16 copy and fp32 add, inductor's casts, DDP's memcpys): compared within the vectorized class
# (where they are the fixed part of L + B / f).
WEIGHT_PASSES = (" weight cast", " grad cast", " grad accumulate", " ddp bucket copy", " ddp copy back",
                 " tp piece cast", " tp piece grad add")


def access_of(name):
    return ("generic" if generic_kernel(name) else "reduction" if reduction_kernel(name)
            else "streaming" if streaming_kernel(name) else "vectorized")


def measured_classes(r):
    c = {"gemm": 0.0, "attention": 0.0, "elementwise": 0.0, "optimizer": 0.0, "generic": 0.0,
         "reduction": 0.0, "vectorized": 0.0, "streaming": 0.0}
    for k in r["kernels"]:
        cls = k["class"]
        c[cls if cls in ("gemm", "attention", "optimizer") else "elementwise"] += k["per_step_us"]
        if cls not in ("gemm", "attention", "optimizer"):
            c[access_of(k["name"])] += k["per_step_us"]
    return c


def gpu_preset(device_name):
    return "h200-sxm" if "h200" in device_name.lower() else "h100-sxm"


def run_gcsim(gcsim, shape, framework, overrides=(), trace=False):
    with tempfile.TemporaryDirectory() as out:
        config = shape if shape.endswith(".yaml") else os.path.join(CONFIGS, shape + ".yaml")
        cmd = [gcsim, "run", config, "-o", out, "-q",
               "-s", "workload.framework=" + framework]
        if trace:
            cmd.append("--trace")
        for o in overrides:
            cmd += ["-s", o]
        subprocess.run(cmd, check=True, capture_output=True)
        with open(os.path.join(out, "summary.json")) as f:
            s = json.load(f)
        spans = {}
        if trace:
            with open(os.path.join(out, "trace.json")) as f:
                seen = {}
                for e in json.load(f)["traceEvents"]:
                    if e.get("ph") != "X" or e.get("pid") != 0 or e.get("cat") != "compute":
                        continue
                    key = (e.get("tid"), e["name"])
                    seen[key] = seen.get(key, 0) + 1
                    spans[key + (seen[key],)] = e["dur"]
    k = s["breakdown"]["kernel_classes"]
    us = lambda v: v * 1e6  # noqa: E731
    return {"step": us(s["step_time_s"]), "gemm": us(k["gemm"]), "attention": us(k["attention"]),
            "elementwise": us(k["elementwise"] + k["norm"]), "optimizer": us(k["optimizer"]),
            "kernels": s["breakdown"]["host"]["kernels_per_step"],
            "host": us(s["breakdown"]["host"]["issue_s"]), "spans": spans}


class PassSplit:
    """gcsim's framework passes of one config on rank 0, told apart in the trace (one step): a
    generic pass is a kernel whose time doubles from 400 to 800 generic_ops_per_element (there
    every generic pass is bound by its SM work), a reduction pass one whose time doubles from 400
    to 800 reduction_ops_per_element, a vectorized one a kernel whose time doubles from
    elementwise_bandwidth 0.5 to 0.25 and is neither. Times in µs per step."""

    def __init__(self, gcsim, shape, fw, extra=()):
        self.gcsim, self.shape, self.fw = gcsim, shape, fw
        run = lambda f, ops, rops=1: run_gcsim(  # noqa: E731
            gcsim, shape, fw, ["workload.elementwise_bandwidth=%g" % f, "workload.generic_ops_per_element=%g" % ops,
                               "workload.reduction_ops_per_element=%g" % rops, "workload.reduction_cycles_per_row=0"]
            + list(extra), True)["spans"]
        # A pass's time nearly doubles when its bound halves; a kernel merely moved by what runs
        # beside it (a GEMM beside DDP's all-reduce) does not.
        doubled = lambda x, y: {k for k, v in x.items() if v > 0 and y.get(k, 0) > 1.5 * v}  # noqa: E731
        self.generic = doubled(run(1, 400), run(1, 800))
        self.reduction = doubled(run(1, 1, 400), run(1, 1, 800)) if fw == "torch-compile" else set()
        self.passes = self.generic | self.reduction | doubled(run(0.5, 1), run(0.25, 1))
        # Streaming passes follow no profile knob (the achieved bandwidth): told by name.
        spans = run(1, 1)
        self.streaming = ({k for k in spans if k[1].endswith(STREAMING_PASSES)}
                          if fw == "pytorch-eager" else set()) - self.passes
        self.passes |= {k for k in spans if k[1].endswith(WEIGHT_PASSES)} - self.generic

    def times(self, overrides):
        r = run_gcsim(self.gcsim, self.shape, self.fw, overrides, True)
        g = sum(r["spans"][k] for k in self.generic)
        red = sum(r["spans"][k] for k in self.reduction)
        return {"generic": g, "reduction": red, "vectorized": sum(r["spans"][k] for k in self.passes) - g - red,
                "streaming": sum(r["spans"].get(k, 0.0) for k in self.streaming)}


def fit(gcsim, results, builds=tuple(FRAMEWORK)):
    fitted = {}
    for build, fw in FRAMEWORK.items():
        if build not in builds:
            continue
        fit_r = next(r for r in results if r["build"] == build and r["shape"]["role"] == "fit")
        small = next(r for r in results if r["build"] == build and "launch-bound" in r["shape"]["role"])
        m = measured_classes(fit_r)
        split = PassSplit(gcsim, fit_r["shape"]["name"], fw)
        e1 = split.times(["workload.elementwise_bandwidth=1"])["vectorized"]
        e05 = split.times(["workload.elementwise_bandwidth=0.5"])["vectorized"]
        b = e05 - e1
        lat = e1 - b
        f = min(1.0, b / (m["vectorized"] - lat))
        # Generic passes: their time rises with the operations per element once they are SM-bound.
        lo, hi = 1.0, 1000.0
        for _ in range(14):
            mid = (lo * hi) ** 0.5
            g = split.times(["workload.elementwise_bandwidth=%.4f" % f,
                             "workload.generic_ops_per_element=%.3f" % mid])["generic"]
            if g < m["generic"]:
                lo = mid
            else:
                hi = mid
        ops = (lo * hi) ** 0.5
        # The foreach optimizer's passes: time ~ bytes / (bandwidth x fraction); overheads are
        # ten launches, under 0.5%.
        o1 = run_gcsim(gcsim, fit_r["shape"]["name"], fw, ["workload.optimizer_bandwidth=1"])["optimizer"]
        fo = min(1.0, o1 / m["optimizer"])
        lo, hi = 0.0, 200.0
        for _ in range(16):
            mid = 0.5 * (lo + hi)
            s = run_gcsim(gcsim, small["shape"]["name"], fw,
                          ["workload.host_overhead=%.4fus" % mid, "workload.elementwise_bandwidth=%.4f" % f,
                           "workload.generic_ops_per_element=%.3f" % ops,
                           "workload.optimizer_bandwidth=%.4f" % fo])
            if s["step"] < small["step_us"]:
                lo = mid
            else:
                hi = mid
        fitted[build] = {"elementwise_bandwidth": f, "generic_ops_per_element": ops,
                         "host_us_per_kernel": 0.5 * (lo + hi), "optimizer_bandwidth": fo,
                         "bytes_time_us": b, "overhead_us": lat,
                         "measured_vectorized_us": m["vectorized"], "measured_generic_us": m["generic"],
                         "generic_passes": len(split.generic), "passes": len(split.passes)}
    return fitted


def err(p, m):
    return 100.0 * (p - m) / m if m else float("nan")


def fitted_overrides(f):
    return ["workload.host_overhead=%.4fus" % f["host_us_per_kernel"],
            "workload.elementwise_bandwidth=%.4f" % f["elementwise_bandwidth"],
            "workload.generic_ops_per_element=%.3f" % f["generic_ops_per_element"],
            "workload.optimizer_bandwidth=%.4f" % f["optimizer_bandwidth"]]


def table(gcsim, results, fitted, gpu=None):
    rows = []
    for r in results:
        build, name = r["build"], r["shape"]["name"]
        on_gpu = ["cluster.gpu=" + gpu] if gpu else []
        g = run_gcsim(gcsim, name, FRAMEWORK[build], fitted_overrides(fitted[build]) + on_gpu)
        g.update(PassSplit(gcsim, name, FRAMEWORK[build], on_gpu).times(fitted_overrides(fitted[build]) + on_gpu))
        before = run_gcsim(gcsim, name, "megatron", on_gpu)
        m = measured_classes(r)
        rows.append({"shape": name, "role": r["shape"]["role"], "build": build, "measured": m,
                     "measured_step": r["step_us"], "measured_host": r["host_us"],
                     "measured_kernels": r["kernels_per_step"], "gcsim": g, "before": before})
    return rows


def markdown(rows, fitted):
    out = ["| shape | build | role | class | measured (µs) | before (megatron) | err | after | err |",
           "|---|---|---|---|---:|---:|---:|---:|---:|"]
    for x in rows:
        for cls in ("step", "gemm", "attention", "elementwise", "vectorized", "generic", "reduction", "streaming",
                    "optimizer"):
            m = x["measured_step"] if cls == "step" else x["measured"][cls]
            b = x["before"].get(cls)
            a = x["gcsim"][cls]
            out.append("| %s | %s | %s | %s | %.0f | %s | %s | %.0f | %+.1f%% |" % (
                x["shape"], x["build"], x["role"], cls if cls in ("step", "gemm", "attention", "elementwise", "optimizer")
                else "elementwise: " + cls, m, "%.0f" % b if b is not None else "", "%+.1f%%" % err(b, m) if b is not None else "",
                a, err(a, m)))
    out.append("")
    out.append("| shape | build | measured host issue (µs/step) | gcsim kernels x cost | err | measured kernels | gcsim kernels |")
    out.append("|---|---|---:|---:|---:|---:|---:|")
    for x in rows:
        out.append("| %s | %s | %.0f | %.0f | %+.1f%% | %.0f | %.0f |" % (
            x["shape"], x["build"], x["measured_host"], x["gcsim"]["host"], err(x["gcsim"]["host"], x["measured_host"]),
            x["measured_kernels"], x["gcsim"]["kernels"]))
    out.append("")
    for b, f in fitted.items():
        out.append("- %s: elementwise_bandwidth %.3f (vectorized passes: bytes time %.0f µs, overheads %.0f µs, "
                   "measured %.0f µs), generic_ops_per_element %.1f (%d of %d passes generic, measured %.0f µs), "
                   "optimizer_bandwidth %.3f, host %.1f µs per kernel" % (
                       b, f["elementwise_bandwidth"], f["bytes_time_us"], f["overhead_us"], f["measured_vectorized_us"],
                       f["generic_ops_per_element"], f["generic_passes"], f["passes"], f["measured_generic_us"],
                       f["optimizer_bandwidth"], f["host_us_per_kernel"]))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gcsim", required=True)
    ap.add_argument("--measurement", required=True)
    ap.add_argument("--heldout", help="another GPU's measurement: the same table, nothing refitted")
    ap.add_argument("--json", help="write the rows and fitted values here")
    ap.add_argument("--builds", default="eager,compile", help="which builds to fit (comma-separated)")
    a = ap.parse_args()
    builds = a.builds.split(",")
    with open(a.measurement) as f:
        results = [r for r in json.load(f)["results"] if r["build"] in builds]
    fitted = fit(a.gcsim, results, builds)
    rows = table(a.gcsim, results, fitted)
    print(markdown(rows, fitted))
    held = []
    if a.heldout:
        with open(a.heldout) as f:
            doc = json.load(f)
        gpu = gpu_preset(doc["meta"]["device_name"])
        held = table(a.gcsim, [r for r in doc["results"] if r["build"] in builds], fitted, gpu)
        print("\n## Held out: %s (preset %s), nothing refitted\n" % (doc["meta"]["device_name"], gpu))
        print(markdown(held, {}))
    if a.json:
        for x in rows + held:
            x["gcsim"].pop("spans", None)
            x["before"].pop("spans", None)
        with open(a.json, "w") as f:
            json.dump({"fitted": fitted, "rows": rows, "heldout": held}, f, indent=1)


if __name__ == "__main__":
    main()
