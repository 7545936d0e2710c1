#!/usr/bin/env python3
"""torch.compile'd (inductor / Triton) and eager kernels that carry SM work besides their bytes, on
one GPU (issue 16: the compiled build's elementwise class per kernel).

gcsim charges a framework's elementwise kernels their HBM bytes; the loss's log-softmax runs the
same time on an H100 and an H200, so it is bound by the SMs (exponentials on the SFU, per-row
reductions), not HBM. This script times, per op and shape, the fused kernels a Llama step's
compiled build launches for the ops that carry exponentials, logarithms or row reductions, next to
a pure add moving the same bytes (the bandwidth reference), so the kernel cost model's SFU and
per-row terms can be fitted on some shapes and checked on others:

  cross_entropy  F.cross_entropy(logits.float(), target) over bf16 logits, forward + backward
                 (inductor: an online-softmax reduction forward, a log-softmax-backward kernel)
  rms_norm       framework_step.py's RMSNorm over an fp32 residual (pow, mean, rsqrt, weight,
                 cast to bf16), forward + backward (input and weight gradients)
  swiglu         silu(gate) * up over the two halves of one bf16 gate/up GEMM output, fwd + bwd
  softmax        torch.softmax over bf16 rows, forward + backward
  add            fp32 a + b (12 bytes per element), forward only: the streaming reference

Each op runs eager and torch.compile'd (inductor default mode, dynamic=False: static shapes as
framework_step.py compiles them; one compile per shape, so the shapes are few).

Method (torch_timing.measure, the microbenchmarks' one timing loop): warm-up first (compile
included, its seconds recorded), the stream back-logged with torch.cuda._sleep so the host never
starves it, CUDA events around back-to-back repetitions; inputs rotated over enough copies that
one round exceeds 3x L2, so every repetition reads from HBM. `fwd_us` times the forward alone (the
training graph's forward, tensors saved for backward), `fwd_bwd_us` the forward and
torch.autograd.grad. torch.profiler over a few forward+backward repetitions gives every kernel's
name, count and mean time (the Triton kernels by inductor's names), and for compiled points the
generated Triton source's count of exponentials, logarithms and reductions per kernel.

Writes one JSON (-o), rewritten after every point; a failing point is recorded and skipped.
    CUDA_VISIBLE_DEVICES=0 python3 calibration/microbench/compiled_kernels.py -o OUT.json [--budget-s 110]
"""
import argparse
import datetime
import hashlib
import json
import os
import re
import sys
import time
import traceback

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_timing  # noqa: E402  (the shared CUDA-event timing loop)

VERSION = "compiled_kernels 1.0"
T0 = time.time()
F32, B16 = torch.float32, torch.bfloat16
PROFILE_REPS = 4
MAX_ROTATION_BYTES = 6 << 30  # input copies for the L2 flush, at most this much memory


def log(*a):
    print("[%6.1fs]" % (time.time() - T0), *a, flush=True)


def script_sha256():
    with open(os.path.abspath(__file__), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def smi_state():
    return {"utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "state": torch_timing.nvsmi("clocks.sm,clocks.mem,power.draw,temperature.gpu,"
                                        "clocks_throttle_reasons.active")}


# ----------------------------------------------------------------------------------------------
# the ops: each returns (make_inputs, forward, grad_targets(inputs) -> the tensors to differentiate
# (None: forward only), HBM bytes the forward reads + writes once)

def rn(*shape, dtype=F32, grad=False):
    return torch.randn(*shape, device="cuda", dtype=dtype).requires_grad_(grad)


def cross_entropy(rows, vocab):
    def make():
        return (rn(rows, vocab, dtype=B16, grad=True),
                torch.randint(0, vocab, (rows,), device="cuda"))

    def fwd(logits, tgt):
        return F.cross_entropy(logits.float(), tgt)
    return make, fwd, lambda x: (x[0],), rows * vocab * 2


def rms_norm(rows, hidden):
    def make():
        return rn(rows, hidden, grad=True), rn(hidden, grad=True)

    def fwd(x, w):  # framework_step.py's RMSNorm on the fp32 residual, output cast for the GEMM
        var = x.pow(2).mean(-1, keepdim=True)
        y = x * torch.rsqrt(var + 1e-5)
        return (w * y).to(B16)
    return make, fwd, lambda x: (x[0], x[1]), rows * hidden * (4 + 2)


def swiglu(rows, ffn):
    def make():
        return (rn(rows, 2 * ffn, dtype=B16, grad=True),)

    def fwd(x):
        gate, up = x.chunk(2, dim=-1)
        return F.silu(gate) * up
    return make, fwd, lambda x: (x[0],), rows * ffn * 3 * 2


def softmax(rows, cols):
    def make():
        return (rn(rows, cols, dtype=B16, grad=True),)

    def fwd(x):
        return torch.softmax(x, dim=-1)
    return make, fwd, lambda x: (x[0],), rows * cols * 2 * 2


def add(elements):
    def make():
        return rn(elements), rn(elements)

    def fwd(a, b):
        return a + b
    return make, fwd, None, elements * 12


def exp_chain(elements, depth):
    """`depth` dependent exponentials per fp32 element, y = exp(-y): the SFU's rate once the bytes
    (8 per element) take less time than the exponentials."""
    def make():
        return (rn(elements),)

    def fwd(x):
        y = x
        for _ in range(depth):
            y = torch.exp(-y)
        return y
    return make, fwd, None, elements * 8


# (op, shape dict, builder); the order is the priority order under the budget: the loss first.
def points():
    out = []
    for rows, vocab in [(4096, 32000), (16384, 32000), (4096, 128256), (8192, 32000), (8192, 128256)]:
        out.append(("cross_entropy", dict(rows=rows, vocab=vocab), lambda r=rows, v=vocab: cross_entropy(r, v)))
        if vocab in (32000, 128256) and rows == 4096:
            # the bandwidth reference: an add moving the bytes of the forward's logits read
            n = rows * vocab * 2 // 12
            out.append(("add", dict(elements=n, same_bytes_as="cross_entropy %dx%d forward" % (rows, vocab)),
                        lambda n=n: add(n)))
    for depth in (8, 32):
        n = 64 << 20
        out.append(("exp_chain", dict(elements=n, depth=depth), lambda n=n, d=depth: exp_chain(n, d)))
    for rows, hidden in [(16384, 2048), (8192, 4096), (4096, 8192), (4096, 2048)]:
        out.append(("rms_norm", dict(rows=rows, hidden=hidden), lambda r=rows, h=hidden: rms_norm(r, h)))
    for rows, ffn in [(8192, 5632), (8192, 11008)]:
        out.append(("swiglu", dict(rows=rows, ffn=ffn), lambda r=rows, f=ffn: swiglu(r, f)))
    for rows, cols in [(16384, 4096), (4096, 32000)]:
        out.append(("softmax", dict(rows=rows, cols=cols), lambda r=rows, c=cols: softmax(r, c)))
    return out


# ----------------------------------------------------------------------------------------------
# Triton source: what each generated kernel computes

_KERNEL_DEF = re.compile(r"def (triton_\w+)\(")
_COUNTS = {"exp": r"(?:tl_math|libdevice|tl)\.exp2?\(", "log": r"(?:tl_math|libdevice|tl)\.log2?\(",
           "rsqrt": r"libdevice\.rsqrt\(", "sigmoid": r"tl\.sigmoid\(",
           "reduce_sum": r"tl\.sum\(", "reduce_max": r"(?:triton_helpers\.max2|tl\.max)\(",
           "online_softmax": r"online_softmax", "welford": r"welford"}


def kernel_ops(sources):
    """Per Triton kernel name in inductor's output code: how often each op of interest appears."""
    per = {}
    for src in sources:
        parts = _KERNEL_DEF.split(src)
        for i in range(1, len(parts) - 1, 2):
            body = parts[i + 1][:20000]
            per[parts[i]] = {k: len(re.findall(p, body)) for k, p in _COUNTS.items()}
    return per


def compile_with_code(fn, call):
    """Run `call` (which compiles `fn` on first use); the generated sources when inductor gives them."""
    try:
        from torch._inductor.utils import run_and_get_code
        _, codes = run_and_get_code(call)
        return codes
    except Exception as e:  # noqa: BLE001
        log("    run_and_get_code failed (%r); compiling plainly" % (e,))
        call()
        return []


# ----------------------------------------------------------------------------------------------

def profile_kernels(enqueue, reps):
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for r in range(reps):
            enqueue(r)
        torch.cuda.synchronize()
    agg = {}
    for ev in prof.events():
        if not str(getattr(ev, "device_type", "")).endswith("CUDA"):
            continue
        a = agg.setdefault(ev.name, {"count": 0, "us": 0.0})
        a["count"] += 1
        a["us"] += ev.time_range.elapsed_us()
    out = [{"name": k, "per_rep_count": v["count"] / reps, "per_rep_us": v["us"] / reps,
            "mean_us": v["us"] / max(1, v["count"])} for k, v in agg.items()]
    out.sort(key=lambda k: -k["per_rep_us"])
    return out


def run_point(op, shape, build_fn, build):
    make, fwd, grad_of, fwd_bytes = build_fn()
    torch.manual_seed(0)
    first = make()
    in_bytes = sum(t.numel() * t.element_size() for t in first)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    sets = max(1, min(-(-3 * l2 // max(1, in_bytes)), MAX_ROTATION_BYTES // max(1, in_bytes), 16))
    inputs = [first] + [make() for _ in range(sets - 1)]
    f = torch.compile(fwd, dynamic=False) if build == "compile" else fwd

    def run_fwd(rep):
        return f(*inputs[rep % len(inputs)])

    gout = {}  # one upstream gradient per output shape, made once (no fill kernel per repetition)

    def run_fwd_bwd(rep):
        x = inputs[rep % len(inputs)]
        y = f(*x)
        if y.dim() > 0 and "g" not in gout:
            gout["g"] = torch.randn_like(y)
        return torch.autograd.grad(y, grad_of(x), grad_outputs=gout.get("g"))

    step = run_fwd_bwd if grad_of else run_fwd
    t = time.time()
    codes = compile_with_code(f, lambda: step(0)) if build == "compile" else []
    step(1)
    torch.cuda.synchronize()
    rec = {"op": op, "build": build, "shape": shape, "forward_bytes": fwd_bytes, "input_bytes": in_bytes,
           "input_sets": len(inputs), "warmup_s": time.time() - t}
    if grad_of:
        rec["fwd_us"] = torch_timing.measure(run_fwd)
        rec["fwd_bwd_us"] = torch_timing.measure(run_fwd_bwd)
        main_us = rec["fwd_bwd_us"]["time_us"]
    else:
        rec["fwd_us"] = torch_timing.measure(run_fwd)
        main_us = rec["fwd_us"]["time_us"]
    rec["fwd_gbps"] = fwd_bytes / rec["fwd_us"]["time_us"] * 1e-3
    rec["kernels"] = profile_kernels(step, PROFILE_REPS)
    if codes:
        rec["triton_kernel_ops"] = kernel_ops(codes)
        rec["triton_source"] = codes
    rec["smi_after"] = smi_state()
    log("  %-14s %-7s %-40s fwd %9.1f us (%5.0f GB/s)  step %9.1f us  warm %.1f s" % (
        op, build, json.dumps(shape)[:40], rec["fwd_us"]["time_us"], rec["fwd_gbps"], main_us, rec["warmup_s"]))
    for k in rec["kernels"][:6]:
        log("      %8.1f us x%4.1f  %s" % (k["mean_us"], k["per_rep_count"], k["name"][:110]))
    del inputs, first
    torch.cuda.empty_cache()
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--budget-s", type=float, default=110.0)
    a = ap.parse_args()
    doc = {"schema": "gcsim.calibration.compiled_kernels.v1", "sha256": script_sha256(),
           "meta": torch_timing.provenance("calibration/microbench/compiled_kernels.py", VERSION),
           "nvidia_smi_before": smi_state(), "results": [], "errors": [], "skipped": []}
    try:
        doc["meta"]["nccl"] = ".".join(str(x) for x in torch.cuda.nccl.version())
    except Exception as e:  # noqa: BLE001
        doc["meta"]["nccl"] = "unknown: %r" % (e,)
    try:
        import triton
        doc["meta"]["triton"] = triton.__version__
    except Exception as e:  # noqa: BLE001
        doc["meta"]["triton"] = "unknown: %r" % (e,)
    doc["meta"]["cuda_visible_devices"] = os.environ.get("CUDA_VISIBLE_DEVICES")
    doc["meta"]["import_s"] = time.time() - T0

    def save():
        tmp = a.out + ".tmp"
        with open(tmp, "w") as fh:
            json.dump(doc, fh, indent=1)
        os.replace(tmp, a.out)

    save()
    log("device %s, torch %s, CUDA %s" % (doc["meta"]["device_name"], torch.__version__, torch.version.cuda))
    # compile points cost seconds each: for every op the compiled build first, its eager twin after.
    for op, shape, build_fn in points():
        for build in ("compile",) if op == "exp_chain" else ("compile", "eager"):
            left = a.budget_s - (time.time() - T0)
            need = 8.0 if build == "compile" else 2.0
            if left < need:
                doc["skipped"].append({"op": op, "build": build, "shape": shape, "why": "budget"})
                continue
            try:
                doc["results"].append(run_point(op, shape, build_fn, build))
            except Exception as e:  # noqa: BLE001
                doc["errors"].append({"op": op, "build": build, "shape": shape, "error": repr(e),
                                      "trace": traceback.format_exc()[-3000:]})
                log("FAILED %s %s %s: %r" % (op, build, shape, e))
                torch.cuda.empty_cache()
            save()
    doc["nvidia_smi_after"] = smi_state()
    doc["elapsed_s"] = time.time() - T0
    save()
    log("done: %d points, %d errors, %d skipped" % (len(doc["results"]), len(doc["errors"]), len(doc["skipped"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
