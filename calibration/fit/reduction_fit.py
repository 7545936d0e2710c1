#!/usr/bin/env python3
"""Fits the SM side of torch.compile's fused reductions (framework_profile.h, PassAccess::reduction)
and reports the error on held-out kernels.

    python3 calibration/fit/reduction_fit.py --gcsim build/gcsim \
        --kernels calibration/measurements/h100-sxm/compiled_kernels_2026-11-26/compiled_kernels.json
    python3 calibration/fit/reduction_fit.py --gcsim build/gcsim \
        --step calibration/measurements/h200-x1/framework_step_2026-11-26/framework_step.json

A reduction pass takes the longest of its bytes (at the framework's elementwise bandwidth), its
lane work (reduction_ops_per_element at the GPU's vector rate) and its transcendentals (on the
SFUs, 16 a clock per SM), plus cycles_per_row for each row that takes a CTA (the loss over the
vocabulary). The two are fitted on the compiled log-softmax forward (SM-bound on both GPUs) at
4096 rows of 32000 and of 128256 (one row count, two row lengths: the per-element and the per-row
cost apart), from gcsim's own kernel times: the framework_step configs
run with workload.reduction_ops_per_element / workload.reduction_cycles_per_row set, and the
pass's span is read from the trace. In the SM-bound regime the span is linear in both
(t = t0 + a * ops + b * cycles), so three runs per kernel give the coefficients and the normal
equations the values; the table's rerun checks them. Physical ranges (asserted here and by
tests/unit/test_framework_profile.cpp):
  reduction_ops_per_element  in [8, 400] fp32 lane operations (an FMA counts 2): at least the
                             bf16 -> fp32 conversion, the running max and sum and the loop's
                             index/mask arithmetic (~4 instructions); at most the generic path's
                             per-operand offset arithmetic bound (framework_profile.h);
  cycles_per_row             in [0, 4000] SM cycles: 0 when other rows hide a row's end; at most
                             a block-level combine (5 shuffle steps and 2 barriers, ~300 cycles)
                             plus an HBM round trip for the next row's first loads (~1-1.5 us,
                             2000-3000 cycles at 1.98 GHz) not hidden at all.
A third value, the reductions' bandwidth (the fraction of the achieved HBM bandwidth their bytes
reach: plain contiguous Triton loops, which alone stream at 0.9-1.0 of it), is fitted with
--kernels on the log-softmax backward at the same two shapes, bound by its bytes on an H100 (gcsim:
launch + bytes / (achieved x f) + tile overhead, from the preset and its profile); range [0.6, 1.0]:
a contiguous streaming loop reaches no less than the framework's worst vectorized fraction and no
more than the achieved bandwidth. It is built in (framework_profile.cpp, kCompileReductionBandwidth,
no workload key); the table runs gcsim with the built-in value.
--held-out takes kernel_grid.py's measurement (its `loss` points: other shapes, another H100) and
adds its kernels to the table as held out.
--kernels takes compiled_kernels.py's measurement (one GPU, kernels alone, L2 flushed); --step
takes framework_step.py's (the kernels inside a training step). Every other measured kernel with
a gcsim counterpart is held out: the log-softmax forward at other row counts, its backward, the
RMSNorm forward over hidden 2048-8192, SiLU x gate, and the pure add's achieved bandwidth.
"""
import argparse
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from framework_fit import run_gcsim  # noqa: E402

BASE = "llama_h2048_L4_s2048_b2"  # seq 2048: rows = 2048 x batch
OPS_RANGE, CYCLES_RANGE, BANDWIDTH_RANGE = (8.0, 400.0), (0.0, 4000.0), (0.6, 1.0)
FIT_SHAPES = [(4096, 32000), (4096, 128256)]
FIT_KINDS = ("ce_fwd",)


def gpu_preset(device_name):
    return "h200-sxm" if "h200" in device_name.lower() else "h100-sxm"


def kernel_kind(name):
    """The gcsim pass a measured Triton kernel stands for, or None."""
    if not name.startswith("triton_"):
        return None
    if "log_softmax_backward" in name:
        return "ce_bwd"
    if "prepare_softmax_online" in name:
        return "ce_fwd"
    if "nll_loss_forward" in name:  # the target's log-probability, a kernel of its own
        return "ce_nll"
    if "rsqrt" in name and "mean" in name:
        return "norm_fwd"
    if "silu" in name and "backward" not in name:
        return "swiglu_fwd"
    return None


# gcsim's pass for each kind: (trace name suffix, which shape fields matter)
PASS = {"ce_fwd": "cross entropy logsumexp", "ce_bwd": "cross entropy bwd", "ce_nll": "cross entropy nll",
        "norm_fwd": "final norm",
        "swiglu_fwd": "swiglu"}


OP_PREFIX = {"cross_entropy": "ce_", "rms_norm": "norm_", "swiglu": "swiglu_"}


def kernel_points(path):
    """(gpu, [(kind, shape dict, measured µs, kernel name)]) of compiled_kernels.py's (or
    kernel_grid.py's loss) points."""
    pts = []
    doc = json.load(open(path))
    gpu = gpu_preset(doc["meta"]["device_name"])
    for r in doc["results"]:
        if r.get("build") != "compile":
            continue
        for k in r["kernels"]:
            kind = kernel_kind(k["name"])
            if kind is None or not kind.startswith(OP_PREFIX.get(r["op"], "-")):
                continue  # e.g. softmax's own online-softmax kernel: no gcsim pass stands for it
            sh = dict(r["shape"])
            if kind == "norm_fwd":
                sh = {"rows": sh["rows"], "hidden": sh["hidden"]}
            elif kind in ("ce_fwd", "ce_bwd", "ce_nll"):
                sh = {"rows": sh["rows"], "vocab": sh["vocab"]}
            elif kind == "swiglu_fwd":
                sh = {"rows": sh["rows"], "ffn": sh["ffn"]}
            pts.append((kind, sh, k["mean_us"], k["name"]))
    return gpu, mean_of_repeats(pts)


def measured_points(args):
    """[(kind, shape dict, measured µs)] from either measurement."""
    if args.kernels:
        return kernel_points(args.kernels)
    pts = []
    doc = json.load(open(args.step))
    gpu = gpu_preset(doc["meta"]["device_name"])
    for r in doc["results"]:
        if r["build"] != "compile" or "launch-bound" in r["shape"]["role"]:
            continue
        s = r["shape"]
        rows = s["seq"] * s["batch"]
        for k in r["kernels"]:
            kind = kernel_kind(k["name"])
            if kind in ("ce_fwd", "ce_bwd", "ce_nll"):
                pts.append((kind, {"rows": rows, "vocab": s["vocab"]}, k["per_step_us"] / k["per_step_count"],
                            k["name"]))
    return gpu, mean_of_repeats(pts)


def mean_of_repeats(pts):
    """One point per (kind, shape): the mean of the kernel's measurements at that shape (the step
    measurement has the 4096 x 32000 loss in two shapes' steps, 189 and 202 µs on the H200)."""
    groups = {}
    for kind, sh, t, name in pts:
        groups.setdefault((kind, json.dumps(sh, sort_keys=True)), []).append((kind, sh, t, name))
    return [(g[0][0], g[0][1], sum(x[2] for x in g) / len(g), g[0][3]) for g in groups.values()]


def overrides(gpu, sh):
    rows = sh["rows"]
    assert rows % 2048 == 0, rows
    o = ["cluster.gpu=" + gpu, "workload.batch.global=%d" % (rows // 2048),
         "workload.batch.micro=%d" % (rows // 2048)]
    if "vocab" in sh:
        o.append("workload.model.vocab=%d" % sh["vocab"])
    if "hidden" in sh:
        o += ["workload.model.hidden=%d" % sh["hidden"], "workload.model.heads=%d" % (sh["hidden"] // 128),
              "workload.model.kv_heads=%d" % (sh["hidden"] // 128)]
    if "ffn" in sh:
        o.append("workload.model.ffn_hidden=%d" % sh["ffn"])
    return o


def simulated_us(gcsim, gpu, kind, sh, extra=()):
    """The pass's kernel time in gcsim (µs, the mean of its instances in one step's trace)."""
    r = run_gcsim(gcsim, BASE, "torch-compile", overrides(gpu, sh) + list(extra), trace=True)
    want = PASS[kind]
    spans = [v for (tid, name, _), v in r["spans"].items() if name.endswith(" " + want)]
    if not spans:
        raise SystemExit("no gcsim pass named '... %s' for %s %s" % (want, kind, sh))
    return sum(spans) / len(spans)


def fit(gcsim, gpu, pts):
    """The forward at FIT_SHAPES (least squares on the relative errors: exact for two shapes)."""
    eqs = []
    for kind, sh, y, _ in pts:
        if kind not in FIT_KINDS or (sh["rows"], sh["vocab"]) not in FIT_SHAPES:
            continue
        t = lambda ops, cyc: simulated_us(gcsim, gpu, kind, sh,  # noqa: E731
                                          ["workload.reduction_ops_per_element=%g" % ops,
                                           "workload.reduction_cycles_per_row=%g" % cyc])
        # Probes well above the bytes' bound (at 40 operations the 32000-vocabulary forward is
        # as long as its bytes on an H100), so the span is linear between them.
        t1, t2, t3 = t(60, 0), t(120, 0), t(120, 1000)
        a = (t2 - t1) / 60.0
        b = (t3 - t2) / 1000.0
        t0 = t1 - 60.0 * a
        eqs.append((a / y, b / y, (y - t0) / y))  # relative: each kernel weighs the same
    if len(eqs) < 2:
        raise SystemExit("the fit needs the log-softmax kernels at %s" % (FIT_SHAPES,))
    saa = sum(a * a for a, _, _ in eqs)
    sab = sum(a * b for a, b, _ in eqs)
    sbb = sum(b * b for _, b, _ in eqs)
    say = sum(a * y for a, _, y in eqs)
    sby = sum(b * y for _, b, y in eqs)
    det = saa * sbb - sab * sab
    return (say * sbb - sby * sab) / det, (saa * sby - sab * say) / det


def spec_numbers(gpu):
    """(launch us, tile overhead us, achieved HBM GB/s) of the preset with its default profile."""
    def grab(path, pattern):
        m = re.search(pattern, open(os.path.join(REPO, path)).read(), re.M)
        if not m:
            raise SystemExit("no %r in %s" % (pattern, path))
        return m.group(1)

    def us(text):
        v = float(re.match(r"[0-9.]+", text).group(0))
        return v / 1000.0 if text.endswith("ns") else v
    profile = "calibration/profiles/%s.yaml" % gpu
    launch = us(grab(profile, r"^kernel_launch_latency: (\S+)"))
    overhead = us(grab(profile, r"^  tile_overhead: (\S+)"))
    hbm = float(grab(profile, r"^  hbm: ([0-9.]+)"))
    peak = float(grab("configs/hardware/%s.yaml" % gpu, r"bandwidth: ([0-9.]+)GB/s"))
    return launch, overhead, peak * hbm


def fit_bandwidth(gpu, pts):
    """kCompileReductionBandwidth on the log-softmax backward at FIT_SHAPES: bound by its bytes on
    an H100, gcsim's pass takes launch + one wave of (bytes / (achieved x f) + tile overhead);
    least squares on the relative errors in u = 1/f."""
    launch, overhead, achieved = spec_numbers(gpu)
    eqs = []
    for kind, sh, y, _ in pts:
        if kind != "ce_bwd" or (sh["rows"], sh["vocab"]) not in FIT_SHAPES:
            continue
        byte_us = sh["rows"] * sh["vocab"] * 4 / (achieved * 1e3)  # 2 bytes read + 2 written per element
        eqs.append((byte_us / y, (y - launch - overhead) / y))
    if not eqs:
        raise SystemExit("the bandwidth fit needs the log-softmax backward at %s" % (FIT_SHAPES,))
    u = sum(a * b for a, b in eqs) / sum(a * a for a, _ in eqs)
    return 1.0 / u


def direct_checks(path):
    """What the measurement says without gcsim: the SFU rate of the exp chain (SFU-bound at depth
    32, HBM-bound at 8), and the plain add's bandwidth (the streaming reference)."""
    doc = json.load(open(path))
    sms = doc["meta"]["sm_count"]
    out = []
    for r in doc["results"]:
        k = max(r["kernels"], key=lambda k: k["mean_us"]) if r["kernels"] else None
        if k is None or r["build"] != "compile":
            continue
        if r["op"] == "exp_chain":
            n = r["shape"]["elements"] * r["shape"]["depth"]
            per_clk = n / (k["mean_us"] * 1e-6) / (sms * 1.98e9)
            out.append("exp chain, %d exponentials per element: %.1f µs, %.2f per SM per clock at 1.98 GHz "
                       "(%s; the CUDA guide's peak 16)" % (r["shape"]["depth"], k["mean_us"], per_clk,
                                                          "SFU-bound" if r["shape"]["depth"] > 8 else "HBM-bound"))
        if r["op"] == "add":
            out.append("add of %.0f MB: %.1f µs, %.0f GB/s" % (r["forward_bytes"] / 1e6, k["mean_us"],
                                                               r["forward_bytes"] / k["mean_us"] / 1e3))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gcsim", required=True)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--kernels", help="compiled_kernels.py's JSON")
    src.add_argument("--step", help="framework_step.py's JSON")
    ap.add_argument("--held-out", help="kernel_grid.py's JSON: its compiled loss kernels, held out")
    ap.add_argument("--json", help="write the fitted values and the table here")
    args = ap.parse_args()
    gpu, pts = measured_points(args)
    ops, cyc = fit(args.gcsim, gpu, pts)
    inside = OPS_RANGE[0] <= ops <= OPS_RANGE[1] and CYCLES_RANGE[0] <= cyc <= CYCLES_RANGE[1]
    print("fitted on %s (%s): reduction_ops_per_element %.2f (range %s), cycles_per_row %.0f (range %s)%s" % (
        args.kernels or args.step, gpu, ops, OPS_RANGE, cyc, CYCLES_RANGE, "" if inside else "  OUTSIDE"))
    if args.kernels:
        for line in direct_checks(args.kernels):
            print("- " + line)
    fitted = ["workload.reduction_ops_per_element=%.4f" % ops, "workload.reduction_cycles_per_row=%.2f" % cyc]
    bandwidth = None
    if args.kernels:
        bandwidth = fit_bandwidth(gpu, pts)
        inside = inside and BANDWIDTH_RANGE[0] <= bandwidth <= BANDWIDTH_RANGE[1]
        print("reduction bandwidth %.4f (range %s), fitted on the backward at the same shapes; gcsim's "
              "table below runs with the value built in (framework_profile.cpp, kCompileReductionBandwidth)" % (
                  bandwidth, BANDWIDTH_RANGE))
    held_pts = []
    if args.held_out:
        held_gpu, held_pts = kernel_points(args.held_out)
        if held_gpu != gpu:
            raise SystemExit("--held-out is of %s, the fit of %s" % (held_gpu, gpu))
    rows = []
    print("\n| kernel | shape | role | measured µs | gcsim µs | err |\n|---|---|---|---:|---:|---:|")
    seen = set()
    for source, (kind, sh, t, name) in [("", p) for p in pts] + [("kernel_grid, ", p) for p in held_pts]:
        key = (source, kind, json.dumps(sh, sort_keys=True))
        if key in seen:
            continue
        seen.add(key)
        if sh["rows"] % 2048:
            print("| %s | %s | %sheld out | %.1f | (rows not a multiple of the config's 2048-token sequence) | |" % (
                kind, " ".join("%s %d" % kv for kv in sh.items()), source, t))
            continue
        g = simulated_us(args.gcsim, gpu, kind, sh, fitted)
        fit_kinds = FIT_KINDS + ("ce_bwd",) if bandwidth is not None else FIT_KINDS
        role = source + ("fit" if not source and kind in fit_kinds and (sh["rows"], sh.get("vocab")) in FIT_SHAPES
                         else "held out")
        rows.append({"kind": kind, "shape": sh, "role": role, "measured_us": t, "gcsim_us": g, "kernel": name})
        print("| %s | %s | %s | %.1f | %.1f | %+.1f%% |" % (kind, " ".join("%s %d" % kv for kv in sh.items()), role,
                                                         t, g, 100.0 * (g - t) / t))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": gpu, "reduction_ops_per_element": ops, "cycles_per_row": cyc,
                       "reduction_bandwidth": bandwidth, "rows": rows}, f, indent=1)
    return 0 if inside else 1


if __name__ == "__main__":
    sys.exit(main())
