#!/usr/bin/env python3
"""Eager PyTorch's elementwise kernels by access pattern, on one GPU (issue 16, framework profiles).

gcsim's framework profiles (workloads/training/framework_profile.h, PassAccess) take a pass on
PyTorch's vectorised path as bound by HBM and one on the non-vectorised ("generic") path -- a
broadcast, a view of a chunk or a half, a bf16 -> fp32 cast, an fp32 + bf16 add, cat -- as bound
by the SMs. This script times the very ops of a Llama-style eager step (the same tensors'
layouts as calibration/microbench/framework_step.py's model) one by one over sizes, so that the
model can be checked per kernel and per size, not only on a step's sum:

  vectorized: fp32 * fp32, fp32 + fp32, bf16 * bf16 (contiguous), fp32 -> bf16 cast, x.pow(2)
  generic:    x * rsqrt(var) (per-row broadcast), weight * x (per-column broadcast),
              bf16 -> fp32 cast, fp32 + bf16 add, silu(chunk view), chunk view * chunk view,
              rotate-half's neg of a half view and cat, q * cos (cos broadcast over heads)
  v2 adds:    SwiGLU's gradient cat of two contiguous chunks (a plain copy), RMSNorm's fp32
              reductions (mean and sum over the hidden size, sum over tokens), the loss's fp32
              log_softmax forward and backward over vocabularies of 32000 and 128256

Method: inputs torch.randn; per op and size, 5 warm-up runs, then 7 batches of back-to-back
repetitions timed with CUDA events (time = batch time / repetitions, median over batches), the
stream back-logged with torch.cuda._sleep so the host never starves it; inputs rotated over
enough copies that one round exceeds 3x L2, so every repetition reads from HBM. The kernel that
ran is read once per op with torch.profiler (names, to check which path PyTorch took).

Writes one JSON (-o); partial results are written after every op.
    python3 calibration/microbench/elementwise_access.py -o OUT.json [--budget-s 150]
"""
import argparse
import datetime
import hashlib
import json
import os
import platform
import subprocess
import sys
import time
import traceback

import torch
import torch.nn.functional as F

HIDDEN = 2048          # framework_step.py's fit shape: hidden 2048, 16 heads of 128
HEADS, HEAD_DIM = 16, 128
ROWS = [1024, 4096, 16384]  # tokens: 2 MiB .. 128 MiB of fp32 activations at hidden 2048
BATCHES, WARMUP = 7, 5


def nvsmi():
    try:
        return subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,"
             "temperature.gpu,clocks_throttle_reasons.active", "--format=csv"],
            capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception as e:  # noqa: BLE001
        return "nvidia-smi failed: %r" % (e,)


def script_sha256():
    with open(os.path.abspath(__file__), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


# Each op: (name, access, build(rows) -> (fn, args_list, bytes, elements)). `args_list` is one
# set of inputs; bytes = bytes read + written once per call (what gcsim's passes count).
def ops():
    f32, b16 = torch.float32, torch.bfloat16

    def rn(*shape, dtype=f32):
        return torch.randn(*shape, device="cuda", dtype=dtype)

    def two(rows, dt):
        return lambda: (rn(rows, HIDDEN, dtype=dt), rn(rows, HIDDEN, dtype=dt))

    out = []
    # --- vectorized (contiguous, one type) ---
    out.append(("mul fp32", "vectorized", lambda r: (lambda a, b: a * b, two(r, f32), 12, r * HIDDEN)))
    out.append(("add fp32", "vectorized", lambda r: (lambda a, b: a + b, two(r, f32), 12, r * HIDDEN)))
    out.append(("mul bf16", "vectorized", lambda r: (lambda a, b: a * b, two(r, b16), 6, r * HIDDEN)))
    out.append(("cast fp32->bf16", "vectorized",
                lambda r: (lambda a: a.to(b16), lambda: (rn(r, HIDDEN),), 6, r * HIDDEN)))
    out.append(("pow fp32", "vectorized", lambda r: (lambda a: a.pow(2), lambda: (rn(r, HIDDEN),), 8, r * HIDDEN)))
    # --- generic (non-vectorised path) ---
    out.append(("mul rsqrt (row broadcast) fp32", "generic",
                lambda r: (lambda a, s: a * s, lambda: (rn(r, HIDDEN), rn(r, 1)), 8, r * HIDDEN)))
    out.append(("mul weight (column broadcast) fp32", "generic",
                lambda r: (lambda a, w: w * a, lambda: (rn(r, HIDDEN), rn(HIDDEN)), 8, r * HIDDEN)))
    out.append(("cast bf16->fp32", "generic",
                lambda r: (lambda a: a.to(f32), lambda: (rn(r, HIDDEN, dtype=b16),), 6, r * HIDDEN)))
    out.append(("add fp32 + bf16", "generic",
                lambda r: (lambda a, b: a + b, lambda: (rn(r, HIDDEN), rn(r, HIDDEN, dtype=b16)), 10, r * HIDDEN)))
    # SwiGLU over one fused gate/up GEMM output (rows x 2F), F = 2.75 x hidden as framework_step
    ffn = 5632

    def chunks(r):
        return lambda: (rn(r, 2 * ffn, dtype=b16),)
    out.append(("silu(chunk view) bf16", "generic",
                lambda r: (lambda x: F.silu(x.chunk(2, -1)[0]), chunks(r), 4, r * ffn)))
    out.append(("chunk view * chunk view bf16", "generic",
                lambda r: (lambda x: x.chunk(2, -1)[0] * x.chunk(2, -1)[1], chunks(r), 6, r * ffn)))

    # rotary on q viewed from a fused QKV output: (b, s, 3h) -> q (b, heads, s, d) via view+transpose
    def qkv(r):
        return lambda: (rn(1, r, 3 * HIDDEN, dtype=b16),)

    def q_of(x):
        r = x.shape[1]
        return x[..., :HIDDEN].view(1, r, HEADS, HEAD_DIM).transpose(1, 2)

    out.append(("neg(half view of q) bf16", "generic",
                lambda r: (lambda x: -q_of(x)[..., HEAD_DIM // 2:], qkv(r), 4, r * HIDDEN // 2)))
    out.append(("rotate-half cat bf16", "generic",
                lambda r: (lambda x: torch.cat((q_of(x)[..., HEAD_DIM // 2:], q_of(x)[..., :HEAD_DIM // 2]), -1),
                           qkv(r), 4, r * HIDDEN)))

    def q_cos(r):
        return lambda: (rn(1, r, 3 * HIDDEN, dtype=b16), rn(1, 1, r, HEAD_DIM, dtype=b16))
    out.append(("q * cos (broadcast over heads) bf16", "generic",
                lambda r: (lambda x, c: q_of(x) * c, q_cos(r), 4, r * HIDDEN)))
    # --- the eager step's other vectorized kinds (v2) ---
    # SwiGLU backward: autograd cats the two chunks' gradients (contiguous bf16, rows x ffn each)
    # into the fused GEMM's gradient: CatArrayBatchedCopy_vectorized, a plain copy.
    out.append(("swiglu grad cat (contiguous) bf16", "copy",
                lambda r: (lambda a, b: torch.cat((a, b), -1),
                           lambda: (rn(r, ffn, dtype=b16), rn(r, ffn, dtype=b16)), 4, 2 * r * ffn)))
    # RMSNorm's reductions in fp32: the mean over the hidden size (forward), the weight's gradient
    # summed over tokens (a column reduction) and the per-row sum of the backward.
    out.append(("mean over hidden fp32", "reduction",
                lambda r: (lambda a: a.mean(-1, keepdim=True), lambda: (rn(r, HIDDEN),), 4, r * HIDDEN)))
    out.append(("sum over tokens fp32", "reduction",
                lambda r: (lambda a: a.sum(0), lambda: (rn(r, HIDDEN),), 4, r * HIDDEN)))
    out.append(("sum over hidden fp32", "reduction",
                lambda r: (lambda a: a.sum(-1, keepdim=True), lambda: (rn(r, HIDDEN),), 4, r * HIDDEN)))
    # The loss over the vocabulary: fp32 log_softmax forward and its backward (bytes: the row read
    # and written once; the forward's kernel loads each row three times, the backward's twice).
    for vocab, rows_cap in ((32000, 8192), (128256, 4096)):
        def lsm(r, v=vocab, cap=rows_cap):  # None: rows above the cap (memory and time)
            if r > cap:
                return None
            return (lambda x: torch.log_softmax(x, -1), lambda: (rn(r, v),), 8, r * v)

        def lsm_bwd(r, v=vocab, cap=rows_cap):
            if r > cap:
                return None
            return (lambda g, y: torch._log_softmax_backward_data(g, y, -1, torch.float32),
                    lambda: (rn(r, v), torch.log_softmax(rn(r, v), -1)), 12, r * v)
        out.append(("log_softmax fwd fp32 v%d" % vocab, "softmax", lsm))
        out.append(("log_softmax bwd fp32 v%d" % vocab, "softmax", lsm_bwd))
    return out


def time_op(fn, make, bytes_per_call):
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    sets = max(1, -(-3 * l2 // max(1, bytes_per_call)))
    inputs = [make() for _ in range(min(sets, 64))]
    for i in range(WARMUP):
        fn(*inputs[i % len(inputs)])
    torch.cuda.synchronize()
    reps = max(len(inputs), 20)
    times = []
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(BATCHES):
        torch.cuda._sleep(5_000_000)  # back-log the stream (~2.5 ms) so the host never starves it
        start.record()
        for i in range(reps):
            fn(*inputs[i % len(inputs)])
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / reps)
    times.sort()
    return {"time_us": times[len(times) // 2], "min_us": times[0], "max_us": times[-1],
            "reps": reps, "input_sets": len(inputs)}


def kernel_names(fn, make):
    """The CUDA kernels one call launches (torch.profiler); never raises."""
    try:
        args = make()
        fn(*args)
        torch.cuda.synchronize()
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn(*args)
            torch.cuda.synchronize()
        names = set()
        for e in prof.events():
            if "CUDA" in str(getattr(e, "device_type", "")):
                names.add(e.name)
        return sorted(names)
    except Exception as e:  # noqa: BLE001
        return ["profiler failed: %r" % (e,)]


def nccl_version():
    try:
        v = torch.cuda.nccl.version()
        return ".".join(map(str, v)) if isinstance(v, (tuple, list)) else str(v)
    except Exception as e:  # noqa: BLE001
        return "unknown: %r" % (e,)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--budget-s", type=float, default=120.0)
    a = ap.parse_args()
    t0 = time.time()
    torch.manual_seed(0)
    p = torch.cuda.get_device_properties(0)
    doc = {"schema": "gcsim.calibration.elementwise_access.v2",
           "script": "calibration/microbench/elementwise_access.py", "script_sha256": script_sha256(),
           "meta": {"date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                    "device_name": p.name, "sm_count": p.multi_processor_count, "l2_bytes": p.L2_cache_size,
                    "torch": torch.__version__, "cuda": torch.version.cuda,
                    "cudnn": torch.backends.cudnn.version(),
                    "nccl": nccl_version(),
                    "python": platform.python_version(), "hidden": HIDDEN},
           "method": "CUDA events over 7 batches of back-to-back repetitions, stream back-logged, inputs "
                     "rotated over >= 3x L2; time_us = median batch time / repetitions; bytes = read + "
                     "written once per call",
           "nvidia_smi_before": nvsmi(), "results": [], "errors": []}

    def save():
        with open(a.out, "w") as f:
            json.dump(doc, f, indent=1)

    save()
    for name, access, build in ops():
        for rows in ROWS:
            if time.time() - t0 > a.budget_s:
                doc["errors"].append({"op": name, "rows": rows, "error": "skipped: budget"})
                continue
            try:
                built = build(rows)
                if built is None:
                    continue
                fn, make, bpe, elements = built
                rec = {"op": name, "access": access, "rows": rows, "elements": elements,
                       "bytes_per_element": bpe, "bytes": bpe * elements}
                rec.update(time_op(fn, make, bpe * elements))
                rec["gbps"] = rec["bytes"] / rec["time_us"] * 1e-3
                if rows == ROWS[1]:
                    rec["kernels"] = kernel_names(fn, make)
                doc["results"].append(rec)
                print("%-40s %6d rows %9.1f us %7.0f GB/s" % (name, rows, rec["time_us"], rec["gbps"]), flush=True)
            except Exception as e:  # noqa: BLE001
                doc["errors"].append({"op": name, "rows": rows, "error": repr(e),
                                      "trace": traceback.format_exc()[-2000:]})
                print("FAILED", name, rows, repr(e), flush=True)
            torch.cuda.empty_cache()
            save()
    doc["nvidia_smi_after"] = nvsmi()
    doc["elapsed_s"] = time.time() - t0
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
