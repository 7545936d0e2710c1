#!/usr/bin/env python3
"""Kernel-time microbenchmarks through plain PyTorch (no compilation).

Measures, on the current CUDA device, in one invocation:
  * bf16 / fp16 / fp8 (torch._scaled_mm) / fp32 / tf32 GEMMs,
  * memory-bound ops (copy, gelu, layer_norm, rms_norm, softmax, add),
  * scaled_dot_product_attention (flash backend forced where possible),
  * kernel launch overhead (eager loop and CUDA graph replay),
and writes everything to <out>/<name> as JSON, then prints a compact table.

Method (see calibration/measurements/README.md):
  * inputs are torch.randn (never zeros);
  * >= 5 warm-up runs per case, then REPS repetitions, each bracketed by its
    own pair of CUDA events;
  * before the timed repetitions the stream is back-logged with
    torch.cuda._sleep so the GPU never waits for the Python launch path:
    the event pairs then bracket GPU execution only (plus event overhead,
    ~1-2 us), not CPU dispatch;
  * when one input set is smaller than ROT_BYTES (256 MiB, > 5x the 50 MB L2),
    the repetitions rotate among ceil(ROT_BYTES / set_bytes) input sets so
    that L2 does not hold the operands between repetitions;
  * median / min / p90 in microseconds are reported, plus the derived rate
    (TFLOP/s = 2MNK / t for GEMMs, GB/s = (bytes read + bytes written once) / t).

Usage:  python3 calibration/microbench/torch_kernels.py --out DIR [--name FILE]
"""
import argparse
import datetime
import json
import math
import os
import platform
import subprocess
import sys
import time
import traceback

import torch
import torch.nn.functional as F

ROT_BYTES = 256 * 1024 * 1024
WARMUP = 5
REPS = 40
MIB = 1024 * 1024
GIB = 1024 * MIB

RESULTS = []
ERRORS = []
META = {}
STATE = {"sleep_cycles_per_us": None}


# ----------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------
def log(*a):
    print(*a, flush=True)


def nvsmi(fields):
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=" + fields, "--format=csv"],
            capture_output=True, text=True, timeout=30)
        return (out.stdout.strip() + (" | stderr: " + out.stderr.strip() if out.stderr.strip() else ""))
    except Exception as e:  # noqa: BLE001
        return "nvidia-smi failed: %r" % (e,)


CLOCK_FIELDS = "clocks.sm,clocks.mem,clocks.max.sm"
EXTRA_FIELDS = "temperature.gpu,power.draw,power.limit,pstate,clocks_event_reasons.active"


def clocks_snapshot():
    return {"clocks": nvsmi(CLOCK_FIELDS), "extra": nvsmi(EXTRA_FIELDS),
            "time": datetime.datetime.now(datetime.timezone.utc).isoformat()}


def loaded_clocks_snapshot():
    """Read clocks while a burst of large GEMMs is queued on the GPU."""
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(8192, 8192, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()
    for _ in range(500):  # ~0.7 s of work at ~800 TFLOP/s
        torch.matmul(a, b, out=c)
    time.sleep(0.25)
    snap = clocks_snapshot()
    torch.cuda.synchronize()
    del a, b, c
    return snap


class ClockSampler:
    """Samples SM clock / power / clock-event reasons through NVML (pynvml) in a
    background thread every `period` s, tagged with the current section."""

    def __init__(self, period=0.02):
        self.period = period
        self.samples = []  # (t, section, sm_mhz, mem_mhz, power_w, reasons)
        self.section = "init"
        self.ok = False
        self.paused = False
        self._stop = False
        try:
            import pynvml
            pynvml.nvmlInit()
            self.nv = pynvml
            cvd = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip()
            self.h = pynvml.nvmlDeviceGetHandleByIndex(int(cvd) if cvd.isdigit() else 0)
            self.ok = True
        except Exception as e:  # noqa: BLE001
            self.err = repr(e)
        if self.ok:
            import threading
            self.t0 = time.time()
            self.th = threading.Thread(target=self._loop, daemon=True)
            self.th.start()

    def sample(self):
        nv, h = self.nv, self.h
        reasons = None
        for fname in ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"):
            try:
                reasons = hex(getattr(nv, fname)(h))
                break
            except Exception:  # noqa: BLE001
                continue
        return (round(time.time() - self.t0, 4), self.section,
                nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM), nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM),
                nv.nvmlDeviceGetPowerUsage(h) / 1000.0, reasons)

    def _loop(self):
        while not self._stop:
            if not self.paused:
                try:
                    self.samples.append(self.sample())
                except Exception:  # noqa: BLE001
                    pass
            time.sleep(self.period)

    def stop(self):
        self._stop = True

    def summary(self):
        out = {}
        for _, sec, sm, mem, pw, rs in self.samples:
            d = out.setdefault(sec, {"sm": [], "mem": [], "pw": [], "reasons": {}})
            d["sm"].append(sm)
            d["mem"].append(mem)
            d["pw"].append(pw)
            d["reasons"][str(rs)] = d["reasons"].get(str(rs), 0) + 1
        res = {}
        for sec, d in out.items():
            sm = sorted(d["sm"])
            pw = sorted(d["pw"])
            res[sec] = {"n": len(sm), "sm_mhz_min": sm[0], "sm_mhz_median": median(sm), "sm_mhz_max": sm[-1],
                        "mem_mhz_median": median(d["mem"]), "power_w_median": median(pw), "power_w_max": pw[-1],
                        "event_reasons_counts": d["reasons"]}
        return res


SAMPLER = None


def set_section(name):
    if SAMPLER is not None:
        SAMPLER.section = name


def pct(sorted_vals, q):
    if not sorted_vals:
        return float("nan")
    idx = min(len(sorted_vals) - 1, max(0, int(math.ceil(q * len(sorted_vals))) - 1))
    return sorted_vals[idx]


def median(vals):
    s = sorted(vals)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def calibrate_sleep():
    if not hasattr(torch.cuda, "_sleep"):
        return None
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(1000)
    torch.cuda.synchronize()
    cyc = 20_000_000
    s.record()
    torch.cuda._sleep(cyc)
    e.record()
    torch.cuda.synchronize()
    us = s.elapsed_time(e) * 1000.0
    return cyc / us if us > 0 else None


def backlog(us):
    cpu = STATE["sleep_cycles_per_us"]
    if cpu:
        torch.cuda._sleep(int(cpu * us))


def time_gpu(run, n_sets=1, warmup=WARMUP, reps=REPS, backlog_per_rep_us=150.0):
    """run(i) launches the work for input set i. Returns stats dict (us)."""
    for i in range(warmup):
        run(i % n_sets)
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    backlog(min(reps * backlog_per_rep_us, 50_000.0))
    for r in range(reps):
        starts[r].record()
        run((warmup + r) % n_sets)
        ends[r].record()
    torch.cuda.synchronize()
    ts = sorted(s.elapsed_time(e) * 1000.0 for s, e in zip(starts, ends))
    span = starts[0].elapsed_time(ends[-1]) * 1000.0 / reps
    return {"median_us": median(ts), "min_us": ts[0], "p90_us": pct(ts, 0.9),
            "max_us": ts[-1], "reps": reps, "warmup": warmup, "rot_sets": n_sets,
            "back_to_back_mean_us": span}


def n_sets_for(set_bytes):
    if set_bytes >= ROT_BYTES:
        return 1
    return int(math.ceil(ROT_BYTES / set_bytes))


def add(rec):
    RESULTS.append(rec)
    r = {k: (round(v, 3) if isinstance(v, float) else v) for k, v in rec.items()}
    log("  " + json.dumps(r))


def section(name):
    def deco(fn):
        def wrapper(*a, **k):
            log("== %s" % name)
            set_section(name)
            t0 = time.time()
            try:
                fn(*a, **k)
            except Exception as e:  # noqa: BLE001
                ERRORS.append({"section": name, "error": repr(e), "trace": traceback.format_exc()})
                log("  SECTION FAILED: %r" % (e,))
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
            log("   (%.1f s)" % (time.time() - t0))
        return wrapper
    return deco


# ----------------------------------------------------------------------------
# GEMM
# ----------------------------------------------------------------------------
def gemm_case(m, n, k, dtype, label, tag=None, extra=None):
    esz = torch.tensor([], dtype=dtype).element_size()
    set_bytes = (m * k + k * n + m * n) * esz
    ns = n_sets_for(set_bytes)
    As = [torch.randn(m, k, device="cuda", dtype=dtype) for _ in range(ns)]
    Bs = [torch.randn(k, n, device="cuda", dtype=dtype) for _ in range(ns)]
    Cs = [torch.empty(m, n, device="cuda", dtype=dtype) for _ in range(ns)]

    def run(i):
        torch.matmul(As[i], Bs[i], out=Cs[i])

    st = time_gpu(run, ns)
    flops = 2.0 * m * n * k
    rec = {"kind": "gemm", "dtype": label, "m": m, "n": n, "k": k, "layout": "A row-major MxK, B row-major KxN, C row-major",
           **st, "tflops": flops / (st["median_us"] * 1e-6) / 1e12,
           "bytes_min": set_bytes, "gbps": set_bytes / (st["median_us"] * 1e-6) / 1e9}
    if tag:
        rec["tag"] = tag
    if extra:
        rec.update(extra)
    add(rec)
    del As, Bs, Cs
    return rec


BF16_SHAPES = [
    (8192, 8192, 8192, "square"),
    (4096, 4096, 4096, "square"),
    (2048, 2048, 2048, "square"),
    (1024, 1024, 1024, "square"),
    (512, 512, 512, "square"),
    (256, 256, 256, "square"),
    (8192, 12288, 4096, "qkv_proj"),
    (8192, 4096, 4096, "attn_out_proj"),
    (8192, 16384, 4096, "mlp_up"),
    (8192, 4096, 16384, "mlp_down"),
    (16, 4096, 4096, "small_m"),
    (128, 8192, 8192, "small_m"),
    (1, 8192, 8192, "decode_gemv"),
    (1536, 2816, 8192, "wave_132_tiles_128x256"),
    (1536, 3072, 8192, "wave_144_tiles_128x256"),
    (1664, 2816, 8192, "wave_143_tiles_128x256"),
]


@section("gemm bf16")
def bench_gemm_bf16():
    for m, n, k, tag in BF16_SHAPES:
        gemm_case(m, n, k, torch.bfloat16, "bf16", tag)
    # accuracy sanity check of the bf16 path on 8192^3 (first 256 rows)
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    c = torch.matmul(a, b)
    ref = torch.matmul(a[:256].double(), b.double())
    META["check_bf16_8192_relerr"] = float((c[:256].double() - ref).norm() / ref.norm())
    del a, b, c, ref


@section("gemm fp16")
def bench_gemm_fp16():
    gemm_case(8192, 8192, 8192, torch.float16, "fp16", "square")


@section("gemm fp8 (torch._scaled_mm)")
def bench_gemm_fp8():
    if not hasattr(torch, "_scaled_mm") or not hasattr(torch, "float8_e4m3fn"):
        ERRORS.append({"section": "gemm fp8", "error": "torch._scaled_mm / float8_e4m3fn missing"})
        return
    m = n = k = 8192
    f8 = torch.float8_e4m3fn
    set_bytes = m * k + k * n + m * n * 2
    ns = n_sets_for(set_bytes)
    As = [torch.randn(m, k, device="cuda").to(f8) for _ in range(ns)]
    # cuBLASLt fp8 needs B column-major ("TN"): store N x K contiguous, pass .t()
    Bt = [torch.randn(n, k, device="cuda").to(f8) for _ in range(ns)]
    sa = torch.tensor(1.0, device="cuda")
    sb = torch.tensor(1.0, device="cuda")
    Cs = [torch.empty(m, n, device="cuda", dtype=torch.bfloat16) for _ in range(ns)]

    flops = 2.0 * m * n * k
    for fast in (False, True):
        def run(i, fast=fast):
            torch._scaled_mm(As[i], Bt[i].t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16,
                             use_fast_accum=fast, out=Cs[i])

        try:
            run(0)
        except TypeError:
            def run(i, fast=fast):  # signature without out=
                Cs[i] = torch._scaled_mm(As[i], Bt[i].t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16,
                                         use_fast_accum=fast)
            run(0)
        torch.cuda.synchronize()
        ref = torch.matmul(As[0][:256].float().double(), Bt[0].float().double().t())
        relerr = float((Cs[0][:256].double() - ref).norm() / ref.norm())
        del ref
        st = time_gpu(run, ns)
        add({"kind": "gemm", "dtype": "fp8_e4m3", "m": m, "n": n, "k": k,
             "layout": "A row-major MxK, B column-major (N x K contiguous, transposed), out bf16, "
                       "per-tensor scales 1.0",
             "api": "torch._scaled_mm", "use_fast_accum": fast, **st,
             "tflops": flops / (st["median_us"] * 1e-6) / 1e12,
             "bytes_min": set_bytes, "gbps": set_bytes / (st["median_us"] * 1e-6) / 1e9,
             "check_relerr_vs_fp64": relerr, "tag": "square_fast_accum" if fast else "square"})


@section("gemm fp32 / tf32")
def bench_gemm_fp32():
    m = n = k = 4096
    old = torch.backends.cuda.matmul.allow_tf32
    try:
        for tf32 in (False, True):
            torch.backends.cuda.matmul.allow_tf32 = tf32
            try:
                readback = bool(torch.backends.cuda.matmul.allow_tf32)
            except Exception:  # noqa: BLE001
                readback = None
            gemm_case(m, n, k, torch.float32, "tf32" if tf32 else "fp32", "square",
                      extra={"allow_tf32": tf32, "allow_tf32_readback": readback})
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old


@section("gemm bf16 8192^3 re-run (drift)")
def bench_gemm_drift():
    gemm_case(8192, 8192, 8192, torch.bfloat16, "bf16", "square_rerun_end")


@section("gemm bf16 8192^3 sustained (power / clock behaviour)")
def bench_gemm_sustained():
    """1 s idle, then ~1500 back-to-back 8192^3 bf16 GEMMs (~2 s), one event pair each.
    Shows how the rate moves from a rested GPU into the power-capped steady state."""
    m = n = k = 8192
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        torch.matmul(a, b, out=c)
    torch.cuda.synchronize()
    time.sleep(1.0)
    reps = 1500
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for r in range(reps):
        starts[r].record()
        torch.matmul(a, b, out=c)
        ends[r].record()
    torch.cuda.synchronize()
    ts = [s_.elapsed_time(e_) * 1000.0 for s_, e_ in zip(starts, ends)]
    flops = 2.0 * m * n * k
    windows = [(0, 20), (20, 100), (100, 300), (300, 700), (700, 1100), (1100, 1500)]
    for lo, hi in windows:
        w = sorted(ts[lo:hi])
        add({"kind": "gemm_sustained", "dtype": "bf16", "m": m, "n": n, "k": k, "rep_lo": lo, "rep_hi": hi,
             "t_start_ms": starts[0].elapsed_time(starts[lo]), "median_us": median(w), "min_us": w[0],
             "p90_us": pct(w, 0.9), "tflops": flops / (median(w) * 1e-6) / 1e12,
             "note": "back-to-back after 1 s idle; window of repetitions [rep_lo, rep_hi)"})
    del a, b, c


# ----------------------------------------------------------------------------
# memory-bound ops
# ----------------------------------------------------------------------------
def mem_case(op, make_inputs, fn, elements, bytes_moved, extra=None):
    ns = n_sets_for(bytes_moved)
    sets = [make_inputs() for _ in range(ns)]

    def run(i):
        fn(*sets[i])

    st = time_gpu(run, ns)
    rec = {"kind": "memory", "op": op, "dtype": "bf16", "elements": elements, "bytes_moved": bytes_moved,
           **st, "gbps": bytes_moved / (st["median_us"] * 1e-6) / 1e9}
    if extra:
        rec.update(extra)
    add(rec)
    del sets


@section("memory-bound ops")
def bench_memory():
    bf = torch.bfloat16
    # copy 1 GiB
    n = GIB // 2
    mem_case("copy", lambda: (torch.empty(n, device="cuda", dtype=bf), torch.randn(n, device="cuda", dtype=bf)),
             lambda dst, src: dst.copy_(src), n, 2 * n * 2, {"note": "dst.copy_(src), 1 GiB each way"})
    torch.cuda.empty_cache()
    # add of two 1 GiB tensors
    mem_case("add", lambda: (torch.randn(n, device="cuda", dtype=bf), torch.randn(n, device="cuda", dtype=bf),
                             torch.empty(n, device="cuda", dtype=bf)),
             lambda a, b, o: torch.add(a, b, out=o), n, 3 * n * 2, {"note": "out = a + b, 1 GiB each"})
    torch.cuda.empty_cache()
    # gelu on 32M elements
    n = 33554432
    mem_case("gelu", lambda: (torch.randn(n, device="cuda", dtype=bf),),
             lambda x: F.gelu(x), n, 2 * n * 2, {"approximate": "none"})
    rows, cols = 8192, 4096
    n = rows * cols
    mem_case("layer_norm",
             lambda: (torch.randn(rows, cols, device="cuda", dtype=bf), torch.randn(cols, device="cuda", dtype=bf),
                      torch.randn(cols, device="cuda", dtype=bf)),
             lambda x, w, b: F.layer_norm(x, (cols,), w, b, 1e-5), n, 2 * n * 2 + 2 * cols * 2,
             {"shape": [rows, cols]})
    if hasattr(F, "rms_norm"):
        mem_case("rms_norm",
                 lambda: (torch.randn(rows, cols, device="cuda", dtype=bf), torch.randn(cols, device="cuda", dtype=bf)),
                 lambda x, w: F.rms_norm(x, (cols,), w, 1e-6), n, 2 * n * 2 + cols * 2,
                 {"shape": [rows, cols], "impl": "torch.nn.functional.rms_norm"})
    else:
        ERRORS.append({"section": "memory", "error": "F.rms_norm missing"})
    mem_case("softmax", lambda: (torch.randn(rows, cols, device="cuda", dtype=bf),),
             lambda x: torch.softmax(x, dim=-1), n, 2 * n * 2, {"shape": [rows, cols], "dim": -1})


# ----------------------------------------------------------------------------
# attention
# ----------------------------------------------------------------------------
def attn_flops(b, h, q, kv, d, causal):
    f = 4.0 * b * h * q * kv * d
    if causal and q == kv:
        f *= 0.5
    return f


@section("attention (sdpa)")
def bench_attention():
    from torch.nn.attention import SDPBackend, sdpa_kernel
    bf = torch.bfloat16
    sdpa = F.scaled_dot_product_attention

    def prefill(b, h, s, d, causal, with_bwd):
        q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=bf, requires_grad=with_bwd) for _ in range(3))
        set_bytes = 4 * b * h * s * d * 2
        ns = n_sets_for(set_bytes)
        sets = [(q, k, v)] + [tuple(torch.randn(b, h, s, d, device="cuda", dtype=bf, requires_grad=with_bwd)
                                    for _ in range(3)) for _ in range(ns - 1)]
        base = {"kind": "attention", "dtype": "bf16", "batch": b, "heads": h, "kv_heads": h, "q_len": s,
                "kv_len": s, "head_dim": d, "causal": causal, "backend": "FLASH_ATTENTION", "layout": "BHSD"}
        fl = attn_flops(b, h, s, s, d, causal)
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            with torch.no_grad():
                st = time_gpu(lambda i: sdpa(*sets[i], is_causal=causal), ns)
            add({**base, "pass": "fwd", **st, "tflops": fl / (st["median_us"] * 1e-6) / 1e12,
                 "flops": fl, "rot_sets": ns})
            if not with_bwd:
                return
            go = torch.randn(b, h, s, d, device="cuda", dtype=bf)

            def fwdbwd(i):
                o = sdpa(*sets[i], is_causal=causal)
                torch.autograd.grad(o, sets[i], go)

            st_fb = time_gpu(fwdbwd, ns, backlog_per_rep_us=400.0)
            add({**base, "pass": "fwd+bwd", **st_fb, "tflops": 3.5 * fl / (st_fb["median_us"] * 1e-6) / 1e12,
                 "flops": 3.5 * fl})
            # direct backward timing: forward outside the events
            reps = REPS
            for i in range(WARMUP):
                o = sdpa(*sets[i % ns], is_causal=causal)
                torch.autograd.grad(o, sets[i % ns], go)
            torch.cuda.synchronize()
            fwd_outs = [sdpa(*sets[r % ns], is_causal=causal) for r in range(reps)]
            torch.cuda.synchronize()
            starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
            ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
            backlog(reps * 400.0)
            for r in range(reps):
                starts[r].record()
                torch.autograd.grad(fwd_outs[r], sets[r % ns], go)
                ends[r].record()
            torch.cuda.synchronize()
            tb = sorted(s_.elapsed_time(e_) * 1000.0 for s_, e_ in zip(starts, ends))
            del fwd_outs
            bwd_sub = st_fb["median_us"] - st["median_us"]
            add({**base, "pass": "bwd", "method": "median(fwd+bwd) - median(fwd)", "median_us": bwd_sub,
                 "tflops": 2.5 * fl / (bwd_sub * 1e-6) / 1e12, "flops": 2.5 * fl,
                 "direct_median_us": median(tb), "direct_min_us": tb[0], "direct_p90_us": pct(tb, 0.9),
                 "direct_tflops": 2.5 * fl / (median(tb) * 1e-6) / 1e12, "reps": reps, "rot_sets": ns})

    prefill(4, 32, 2048, 128, False, False)
    prefill(4, 32, 2048, 128, True, True)
    prefill(1, 32, 8192, 128, True, False)

    # decode: GQA, q_len 1, kv_len 4096
    b, h, hkv, kv, d = 64, 32, 8, 4096, 128
    q = torch.randn(b, h, 1, d, device="cuda", dtype=bf)
    k = torch.randn(b, hkv, kv, d, device="cuda", dtype=bf)
    v = torch.randn(b, hkv, kv, d, device="cuda", dtype=bf)
    kv_bytes = 2 * b * hkv * kv * d * 2
    qo_bytes = 2 * b * h * d * 2
    fl = attn_flops(b, h, 1, kv, d, False)
    kr = vr = None
    attempts = [("FLASH_ATTENTION", "enable_gqa"), ("FLASH_ATTENTION", "repeat_kv"),
                ("EFFICIENT_ATTENTION", "enable_gqa"), ("EFFICIENT_ATTENTION", "repeat_kv"),
                ("CUDNN_ATTENTION", "enable_gqa"), ("MATH", "enable_gqa"), ("MATH", "repeat_kv")]
    primary_done = False
    for be_name, mode in attempts:
        be = getattr(SDPBackend, be_name, None)
        if be is None:
            continue
        if mode == "repeat_kv" and kr is None:
            kr = k.repeat_interleave(h // hkv, dim=1)
            vr = v.repeat_interleave(h // hkv, dim=1)
        if mode == "enable_gqa":
            fn = lambda i: sdpa(q, k, v, is_causal=False, enable_gqa=True)  # noqa: E731
        else:
            fn = lambda i: sdpa(q, kr, vr, is_causal=False)  # noqa: E731
        try:
            with sdpa_kernel(be), torch.no_grad():
                fn(0)
                torch.cuda.synchronize()
                st = time_gpu(fn, 1)
        except Exception as e:  # noqa: BLE001
            ERRORS.append({"section": "attention decode", "backend": be_name, "gqa_mode": mode,
                           "error": repr(e)[:500]})
            log("  decode %s/%s not available: %s" % (be_name, mode, repr(e)[:160]))
            continue
        moved = kv_bytes * (1 if mode == "enable_gqa" else h // hkv) + qo_bytes
        add({"kind": "attention", "dtype": "bf16", "batch": b, "heads": h, "kv_heads": hkv, "q_len": 1,
             "kv_len": kv, "head_dim": d, "causal": False, "pass": "fwd", "backend": be_name, "gqa_mode": mode,
             "primary": not primary_done, "tag": "decode", **st,
             "tflops": fl / (st["median_us"] * 1e-6) / 1e12, "flops": fl,
             "bytes_moved": moved, "gbps": moved / (st["median_us"] * 1e-6) / 1e9})
        primary_done = True


# ----------------------------------------------------------------------------
# launch overhead
# ----------------------------------------------------------------------------
@section("launch overhead")
def bench_launch():
    x = torch.randn(1, device="cuda")
    N = 1000
    samples = 20
    for _ in range(200):
        x.add_(1.0)
    torch.cuda.synchronize()
    # (a) eager loop of N launches, events around the loop (CPU-launch bound)
    if SAMPLER is not None:
        SAMPLER.paused = True  # keep the sampler thread off the CPU while measuring launch cost
    per = []
    for _ in range(samples):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        s.record()
        for _ in range(N):
            x.add_(1.0)
        e.record()
        torch.cuda.synchronize()
        per.append(s.elapsed_time(e) * 1000.0 / N)
    per.sort()
    if SAMPLER is not None:
        SAMPLER.paused = False
    add({"kind": "launch", "mode": "eager_loop", "op": "x.add_(1.0) on 1-element fp32", "launches_per_sample": N,
         "samples": samples, "median_us": median(per), "min_us": per[0], "p90_us": pct(per, 0.9),
         "note": "per-launch average; includes PyTorch dispatch + cudaLaunchKernel CPU cost (GPU starved)"})
    # (b) CUDA graph of N launches, replayed
    g = torch.cuda.CUDAGraph()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            x.add_(1.0)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    with torch.cuda.graph(g):
        for _ in range(N):
            x.add_(1.0)
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    per = []
    for _ in range(samples):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        g.replay()
        e.record()
        torch.cuda.synchronize()
        per.append(s.elapsed_time(e) * 1000.0 / N)
    per.sort()
    add({"kind": "launch", "mode": "cuda_graph_replay", "op": "x.add_(1.0) on 1-element fp32",
         "launches_per_sample": N, "samples": samples, "median_us": median(per), "min_us": per[0],
         "p90_us": pct(per, 0.9), "note": "graph of N kernels; time per kernel node"})
    # (c) single tiny kernel, stream back-logged, events around each launch
    st = time_gpu(lambda i: x.add_(1.0), 1, warmup=20, reps=200, backlog_per_rep_us=60.0)
    add({"kind": "launch", "mode": "gpu_exec_backlogged", "op": "x.add_(1.0) on 1-element fp32", **st,
         "note": "event pair around each launch with GPU back-logged: kernel duration + event overhead; "
                 "back_to_back_mean_us = per-kernel spacing on a saturated stream"})
    # (d) empty event pair (timing floor)
    st = time_gpu(lambda i: None, 1, warmup=20, reps=200, backlog_per_rep_us=30.0)
    add({"kind": "launch", "mode": "empty_event_pair", "op": "none", **st,
         "note": "two events with nothing between: resolution / floor of the event-pair method"})


# ----------------------------------------------------------------------------
# output
# ----------------------------------------------------------------------------
def write_json(path):
    doc = {"schema": "gcsim.torch_kernels.v1", "meta": META, "results": RESULTS, "errors": ERRORS}
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=False)
    os.replace(tmp, path)


def fmt_table():
    lines = []
    lines.append("%-10s %-10s %-44s %10s %10s %10s %10s" % ("kind", "dtype/op", "shape", "median_us",
                                                          "min_us", "p90_us", "rate"))
    for r in RESULTS:
        k = r["kind"]
        if k == "gemm":
            shape = "%dx%dx%d %s" % (r["m"], r["n"], r["k"], r.get("tag", ""))
            rate = "%.1f TF" % r["tflops"]
            dt = r["dtype"]
        elif k == "gemm_sustained":
            shape = "%dx%dx%d reps[%d,%d)" % (r["m"], r["n"], r["k"], r["rep_lo"], r["rep_hi"])
            rate = "%.1f TF" % r["tflops"]
            dt = r["dtype"]
        elif k == "memory":
            shape = "%s el=%d" % (r.get("shape", ""), r["elements"])
            rate = "%.0f GB/s" % r["gbps"]
            dt = r["op"]
        elif k == "attention":
            shape = "b%d h%d/%d q%d kv%d d%d %s %s %s" % (r["batch"], r["heads"], r["kv_heads"], r["q_len"],
                                                       r["kv_len"], r["head_dim"], "causal" if r["causal"] else "full",
                                                       r["pass"], r["backend"][:5] + ("/" + r["gqa_mode"]
                                                                                      if "gqa_mode" in r else ""))
            rate = ("%.0f GB/s" % r["gbps"]) if "gbps" in r else ("%.1f TF" % r["tflops"])
            dt = r["dtype"]
        else:
            shape = r.get("mode", "")
            rate = ""
            dt = r.get("op", "")[:10]
        lines.append("%-10s %-10s %-44s %10.2f %10.2f %10.2f %10s" % (
            k, dt[:10], shape[:44], r["median_us"], r.get("min_us", r.get("direct_min_us", float("nan"))),
            r.get("p90_us", r.get("direct_p90_us", float("nan"))), rate))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--name", default="torch_kernels.json")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, args.name)
    t_start = time.time()

    assert torch.cuda.is_available(), "no CUDA device"
    p = torch.cuda.get_device_properties(0)
    META.update({
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "script": "calibration/microbench/torch_kernels.py",
        "argv": sys.argv,
        "hostname": platform.node(),
        "kernel": platform.release(),
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "cuda_runtime": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "device_name": p.name,
        "compute_capability": "%d.%d" % (p.major, p.minor),
        "sm_count": p.multi_processor_count,
        "l2_bytes": getattr(p, "L2_cache_size", None),
        "total_memory_bytes": p.total_memory,
        "nvidia_smi_gpu": nvsmi("name,driver_version,pci.bus_id,memory.total,power.limit,clocks.max.sm,clocks.max.mem"),
        "clocks_before_idle": clocks_snapshot(),
        "flags": {
            "matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32,
            "matmul.allow_bf16_reduced_precision_reduction":
                getattr(torch.backends.cuda.matmul, "allow_bf16_reduced_precision_reduction", None),
            "matmul.allow_fp16_reduced_precision_reduction":
                getattr(torch.backends.cuda.matmul, "allow_fp16_reduced_precision_reduction", None),
        },
        "method": {"warmup": WARMUP, "reps": REPS, "rotation_bytes": ROT_BYTES,
                   "timing": "one CUDA event pair per repetition; stream back-logged with torch.cuda._sleep so "
                             "launch latency is hidden; median/min/p90 over repetitions",
                   "inputs": "torch.randn", "rates": "TFLOP/s = flops/median; GB/s = (read+write bytes)/median"},
    })
    global SAMPLER
    SAMPLER = ClockSampler()
    META["nvml_sampler"] = "ok, period 20 ms" if SAMPLER.ok else "unavailable: %s" % getattr(SAMPLER, "err", "")
    if not SAMPLER.ok:
        SAMPLER = None
    set_section("warm-up / loaded clocks start")
    STATE["sleep_cycles_per_us"] = calibrate_sleep()
    META["sleep_cycles_per_us"] = STATE["sleep_cycles_per_us"]
    try:
        META["clocks_under_gemm_load_start"] = loaded_clocks_snapshot()
    except Exception as e:  # noqa: BLE001
        ERRORS.append({"section": "loaded clocks start", "error": repr(e)})
    write_json(path)

    for fn in (bench_gemm_bf16, bench_gemm_fp16, bench_gemm_fp8, bench_gemm_fp32,
               bench_memory, bench_attention, bench_launch, bench_gemm_drift, bench_gemm_sustained):
        fn()
        if SAMPLER is not None:
            META["clock_samples_by_section"] = SAMPLER.summary()
        write_json(path)
    set_section("loaded clocks end")

    try:
        META["clocks_under_gemm_load_end"] = loaded_clocks_snapshot()
    except Exception as e:  # noqa: BLE001
        ERRORS.append({"section": "loaded clocks end", "error": repr(e)})
    META["clocks_after_idle"] = clocks_snapshot()
    META["elapsed_s"] = time.time() - t_start
    if SAMPLER is not None:
        SAMPLER.stop()
        META["clock_samples_by_section"] = SAMPLER.summary()
        META["clock_samples_raw"] = {"fields": ["t_s", "section", "sm_mhz", "mem_mhz", "power_w", "event_reasons"],
                                     "rows": SAMPLER.samples}
    write_json(path)

    log("")
    log("device: %s | driver/smi: %s" % (META["device_name"], META["nvidia_smi_gpu"].splitlines()[-1]))
    log("torch %s cuda %s | SMs %s | L2 %s | mem %s" % (META["torch"], META["cuda_runtime"], META["sm_count"],
                                                      META["l2_bytes"], META["total_memory_bytes"]))
    for key in ("clocks_before_idle", "clocks_under_gemm_load_start", "clocks_under_gemm_load_end",
                "clocks_after_idle"):
        if key in META:
            log("%-30s %s | %s" % (key, META[key]["clocks"].splitlines()[-1], META[key]["extra"].splitlines()[-1]))
    for sec, d in META.get("clock_samples_by_section", {}).items():
        log("NVML %-52s n=%4d SM MHz min/med/max %s/%s/%s  power med/max %.0f/%.0f W  reasons %s" % (
            sec[:52], d["n"], d["sm_mhz_min"], d["sm_mhz_median"], d["sm_mhz_max"], d["power_w_median"],
            d["power_w_max"], d["event_reasons_counts"]))
    log("bf16 relerr check (8192^3, fp64 ref): %s" % META.get("check_bf16_8192_relerr"))
    log("errors: %d" % len(ERRORS))
    for e in ERRORS:
        log("  ERR %s: %s" % (e.get("section"), e.get("error", "")[:200]))
    log(fmt_table())
    log("total %.1f s; wrote %s" % (META["elapsed_s"], path))


if __name__ == "__main__":
    main()
