"""Sustained tensor-core throughput: how far a power-capped GPU falls below its rested GEMM rate.

A training step is minutes of back-to-back GEMMs; the GPU reaches its power limit within tens of
milliseconds and the firmware lowers the SM clock (calibration/measurements/README.md, "Power
capping"). gcsim's `sustained_tensor_fraction` is the ratio measured here:

    steady-state throughput (the last half of a long back-to-back run)
    / rested throughput (the first repetitions after >= 2 s idle)

per case, with NVML SM clock and power sampled every 20 ms. Cases: the 8192^3 square in bf16 and
fp16, and the three GEMM shapes of a GPT-3 175B layer at TP 8 (Korthikanti et al. 2022; b*s = 2048
tokens, h = 12288: QKV 2048x4608x12288, FC1 2048x6144x12288, FC2 2048x12288x6144) run in turn as a
training step does, alone and with memory-bound kernels (layer norm, GELU, residual add) after each
GEMM, to see whether the gaps let the clock recover. Inputs are torch.randn (never zeros); two input sets alternate so operands are
not served from L2 between repetitions.

    python3 sustained_gemm.py -o OUT.json [--seconds 30]
"""
import argparse
import datetime
import json
import statistics
import sys
import time

import torch

from torch_kernels import ClockSampler  # NVML sampler (background thread, 20 ms)


def gemm_sets(shapes, dtype, sets=2):
    out = []
    for _ in range(sets):
        out.append([(torch.randn(m, k, device="cuda", dtype=dtype),
                     torch.randn(k, n, device="cuda", dtype=dtype),
                     torch.empty(m, n, device="cuda", dtype=dtype)) for m, n, k in shapes])
    return out


def memory_ops(dtype):
    """The memory-bound kernels between a GPT-3 175B TP8 layer's GEMMs (b*s = 2048, h = 12288):
    a layer norm over the hidden state, GELU over the FC1 output, a residual add."""
    x = torch.randn(2048, 12288, device="cuda", dtype=dtype)
    y = torch.randn(2048, 12288, device="cuda", dtype=dtype)
    f = torch.randn(2048, 6144, device="cuda", dtype=dtype)
    w = torch.ones(12288, device="cuda", dtype=dtype)

    def run():
        torch.nn.functional.layer_norm(x, (12288,), w, w)
        torch.nn.functional.gelu(f)
        torch.add(x, y, out=x)
    return run


def run_case(name, shapes, dtype, seconds, sampler, between=None):
    """Back-to-back cycles over `shapes` for `seconds`, one event pair per cycle; `between`
    (memory-bound kernels) runs after each GEMM when given, as in a training step."""
    flops = sum(2.0 * m * n * k for m, n, k in shapes)
    sets = gemm_sets(shapes, dtype)
    for ops in sets:  # warm-up: cuBLAS heuristics and workspaces
        for a, b, c in ops:
            torch.matmul(a, b, out=c)
    torch.cuda.synchronize()
    sampler.section = name + " idle"
    time.sleep(2.0)  # rest: the clock climbs back to its maximum
    sampler.section = name
    starts, ends = [], []
    t_end = time.perf_counter() + seconds
    i = 0
    while time.perf_counter() < t_end:
        # Enqueue in chunks so the host stays ahead of the GPU but never far.
        for _ in range(16):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for a, b, c in sets[i % 2]:
                torch.matmul(a, b, out=c)
                if between:
                    between()
            e.record()
            starts.append(s)
            ends.append(e)
            i += 1
        if len(ends) > 64:
            ends[-64].synchronize()  # keep the GPU <= 64 cycles behind the host, never idle
    torch.cuda.synchronize()
    sampler.section = "between"
    ts = [s.elapsed_time(e) * 1000.0 for s, e in zip(starts, ends)]  # us per cycle
    t0 = starts[0]
    at_ms = [t0.elapsed_time(s) for s in starts]
    rested = sorted(ts[:20])
    half = sorted(ts[len(ts) // 2:])
    windows = []
    w_ms = 1000.0
    lo = 0
    while lo < len(ts):
        hi = lo
        while hi < len(ts) and at_ms[hi] < at_ms[lo] + w_ms:
            hi += 1
        w = sorted(ts[lo:hi])
        windows.append({"t_start_ms": round(at_ms[lo], 1), "cycles": hi - lo,
                        "median_us": statistics.median(w), "tflops": flops / (statistics.median(w) * 1e-6) / 1e12})
        lo = hi
    rec = {"kind": "gemm_sustained_run", "case": name, "dtype": str(dtype).replace("torch.", ""),
           "shapes": [list(s) for s in shapes], "flops_per_cycle": flops, "cycles": len(ts),
           "seconds": seconds,
           "rested_median_us": statistics.median(rested),
           "rested_tflops": flops / (statistics.median(rested) * 1e-6) / 1e12,
           "steady_median_us": statistics.median(half),
           "steady_tflops": flops / (statistics.median(half) * 1e-6) / 1e12,
           "windows_1s": windows}
    rec["sustained_fraction"] = rec["steady_tflops"] / rec["rested_tflops"]
    del sets
    torch.cuda.empty_cache()
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", required=True)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--cases", default="", help="comma-separated substrings of case names to run")
    args = ap.parse_args()
    sampler = ClockSampler()
    p = torch.cuda.get_device_properties(0)
    meta = {"device": torch.cuda.get_device_name(0), "sms": p.multi_processor_count,
            "torch": torch.__version__, "cuda": torch.version.cuda,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "nvml": sampler.ok, "method": __doc__}
    layer = [(2048, 4608, 12288), (2048, 6144, 12288), (2048, 12288, 6144)]
    cases = [("square bf16 8192^3", [(8192, 8192, 8192)], torch.bfloat16),
             ("square fp16 8192^3", [(8192, 8192, 8192)], torch.float16),
             ("gpt3-175b tp8 layer fp16", layer, torch.float16)]
    cases.append(("gpt3-175b tp8 layer fp16 + memory-bound", layer, torch.float16))
    if args.cases:
        cases = [c for c in cases if any(sel in c[0] for sel in args.cases.split(","))]
    results = []
    for name, shapes, dtype in cases:
        between = memory_ops(dtype) if "memory-bound" in name else None
        rec = run_case(name, shapes, dtype, args.seconds, sampler, between)
        results.append(rec)
        print("%-26s rested %7.1f TF/s  steady %7.1f TF/s  fraction %.3f  (%d cycles)" % (
            name, rec["rested_tflops"], rec["steady_tflops"], rec["sustained_fraction"], rec["cycles"]),
            flush=True)

    # gcsim's model: only tensor-core work slows (by the GEMM-only fraction f); memory-bound
    # kernels keep their time. With g the GEMM share of a rested mixed cycle (the GEMM-only
    # case's rested cycle over the mixed one), the mixed cycle should then hold 1 / (g/f + 1 - g).
    by_name = {r["case"]: r for r in results}
    alone, mixed = by_name.get("gpt3-175b tp8 layer fp16"), by_name.get("gpt3-175b tp8 layer fp16 + memory-bound")
    if alone and mixed:
        g = alone["rested_median_us"] / mixed["rested_median_us"]
        f = alone["sustained_fraction"]
        meta["model_check"] = {"gemm_share_rested": g, "gemm_fraction": f,
                               "predicted_mixed_fraction": 1.0 / (g / f + 1.0 - g),
                               "measured_mixed_fraction": mixed["sustained_fraction"]}
        print("model check: GEMM share %.3f, predicted mixed fraction %.3f, measured %.3f" % (
            g, meta["model_check"]["predicted_mixed_fraction"], mixed["sustained_fraction"]))
    sampler.stop()
    meta["clocks_by_section"] = sampler.summary() if sampler.ok else {"error": getattr(sampler, "err", "")}
    with open(args.o, "w") as f:
        json.dump({"meta": meta, "results": results}, f, indent=1)
    for sec, s in sorted(meta["clocks_by_section"].items()):
        if isinstance(s, dict) and "sm_mhz_median" in s:
            print("%-32s SM %4d-%4d MHz (median %4d), power median %5.1f W max %5.1f W" % (
                sec, s["sm_mhz_min"], s["sm_mhz_max"], s["sm_mhz_median"], s["power_w_median"], s["power_w_max"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
