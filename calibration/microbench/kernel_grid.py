#!/usr/bin/env python3
"""Single-kernel costs on one GPU, each at its own SM clock (issue 16: GEMM fixed cost, wave
quantization and mid-size efficiency; softmax; the compiled loss kernels).

  gemm         cuBLAS bf16 through torch.mm over a grid of M, N, K in {128 .. 8192} (all 343
               combinations), every square size 128 .. 8192, Llama-like layer GEMMs (forward
               x @ W^T, input gradient dy @ W, weight gradient dy^T @ x at 2048-8192 tokens),
               the shapes test_h100_validation.cpp predicts, and skinny decode GEMMs
  softmax      eager torch.softmax / log_softmax over rows x cols, forward and forward+backward,
               bf16 and fp32
  loss         torch.compile'd F.cross_entropy(logits.float(), target) over bf16 logits (the
               compiled build's loss: an online-softmax forward and a log-softmax backward kernel)
  (1.1)        appended after each phase's 1.0 points, which keep their order: "tile" GEMMs
               around 1024^3 (one and two waves of small tiles) and 11 more softmax/log_softmax
               row shapes (7 bf16, 4 fp32)

Method. Every time comes from torch_timing.measure (the microbenchmarks' one loop: warm-up, the
stream back-logged with torch.cuda._sleep, CUDA events around each repetition -> median_us, and
around batches of back-to-back repetitions -> time_us, the spacing of the kernel in a stream of
work, which is what gcsim's kernel time stands for). Inputs rotate over enough copies that one round
exceeds 3x L2 (at most 64 copies; below that the smallest GEMMs' operands may sit in L2 between
back-to-back repetitions, as they would in a stream of small GEMMs). GEMMs are also timed cold:
an event pair around each repetition with L2 flushed just before it (a memset of 2x L2) ->
cold_median_us. An NVML thread samples the SM clock, memory clock, power and clock-event reasons
every 5 ms; every point records the samples that fall inside its timing (min/median/max SM MHz),
so each time can be compared at the clock it ran at. torch.profiler over 3 repetitions gives
each kernel's name (cuBLAS's names carry the CTA tile, cluster shape, split-K / stream-K), count
and mean duration (the kernel alone, without the launch gap).

The budget (--budget-s, wall seconds from the start, torch import included) is split: GEMMs until
--gemm-until, softmax until --softmax-until, the compiled loss after; a point that does not fit
is recorded as skipped. One JSON (-o), rewritten every few points; a failing point is recorded
in `errors` and skipped.
    CUDA_VISIBLE_DEVICES=3 python3 calibration/microbench/kernel_grid.py -o OUT.json
"""
import argparse
import bisect
import ctypes
import datetime
import hashlib
import json
import math
import os
import random
import statistics
import sys
import threading
import time
import traceback

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_timing  # noqa: E402  (the shared CUDA-event timing loop)
import compiled_kernels  # noqa: E402  (the loss op, its run_point and profile_kernels)

VERSION = "kernel_grid 1.1"  # 1.1: the "tile" GEMMs and the extra softmax rows, appended
T0 = time.time()
B16, F32 = torch.bfloat16, torch.float32
MAX_ROTATION_SETS = 64
MAX_ROTATION_BYTES = 4 << 30
COLD_REPS = 15
PROFILE_REPS = 3


def log(*a):
    print("[%6.1fs]" % (time.time() - T0), *a, flush=True)


def elapsed():
    return time.time() - T0


def script_sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def smi_state():
    return {"utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "state": torch_timing.nvsmi("index,clocks.sm,clocks.mem,power.draw,temperature.gpu,"
                                        "clocks_throttle_reasons.active")}


def nvml_index():
    """NVML's (and nvidia-smi's) index of torch's device 0: the first CUDA_VISIBLE_DEVICES entry
    when it is a number (NVML enumerates every GPU, whatever CUDA_VISIBLE_DEVICES says)."""
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip()
    return int(first) if first.isdigit() else 0


# ----------------------------------------------------------------------------------------------
# NVML sampling

class ClockSampler:
    """SM clock (MHz), memory clock (MHz), power (W) and clock-event reasons every `period` s in a
    thread, as (t_s since start, sm, mem, power, reasons) tuples."""

    def __init__(self, index, period=0.005):
        self.samples, self.times, self.ok, self.err, self.period = [], [], False, None, period
        self.stop_flag = False
        try:
            import pynvml
            pynvml.nvmlInit()
            self.nv = pynvml
            self.h = pynvml.nvmlDeviceGetHandleByIndex(index)
            self.reasons_fn = None
            for name in ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"):
                if hasattr(pynvml, name):
                    self.reasons_fn = getattr(pynvml, name)
                    break
            self.info = {"nvml_index": index, "pci_bus_id": pynvml.nvmlDeviceGetPciInfo(self.h).busId,
                         "name": pynvml.nvmlDeviceGetName(self.h)}
            self.info = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in self.info.items()}
            self.read()
            self.ok = True
        except Exception as e:  # noqa: BLE001
            self.err = repr(e)
            self.info = {"nvml_index": index}

    def read(self):
        nv, h = self.nv, self.h
        sm = nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)
        mem = nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM)
        pw = nv.nvmlDeviceGetPowerUsage(h) / 1000.0
        reasons = self.reasons_fn(h) if self.reasons_fn else -1
        return (round(elapsed(), 4), sm, mem, round(pw, 1), int(reasons))

    def start(self):
        if not self.ok:
            return
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self):
        while not self.stop_flag:
            try:
                x = self.read()
                self.samples.append(x)
                self.times.append(x[0])
            except Exception as e:  # noqa: BLE001
                self.err = repr(e)
            time.sleep(self.period)

    def stop(self):
        self.stop_flag = True

    def window(self, t0, t1):
        """Summary of the samples inside [t0, t1] (seconds since start)."""
        n = len(self.times)
        lo, hi = bisect.bisect_left(self.times, t0, 0, n), bisect.bisect_right(self.times, t1, 0, n)
        s = self.samples[lo:hi]
        if not s:
            return {"n": 0}
        sm = [x[1] for x in s]
        return {"n": len(s), "sm_mhz_min": min(sm), "sm_mhz_median": statistics.median(sm),
                "sm_mhz_max": max(sm), "mem_mhz_median": statistics.median([x[2] for x in s]),
                "power_w_max": max(x[3] for x in s),
                "reasons_or": "0x%x" % _or([x[4] for x in s if x[4] >= 0])}

    def timeline(self, every_s=0.05):
        out, last = [], -1.0
        for x in self.samples:
            if x[0] - last >= every_s:
                out.append(x)
                last = x[0]
        return out


def _or(values):
    r = 0
    for v in values:
        r |= v
    return r


# ----------------------------------------------------------------------------------------------
# GEMMs

def gemm_points():
    """(group, m, n, k, layout) in priority order. layout: 'tn' = x @ W^T (nn.Linear forward,
    W stored n x k), 'nn' = dy @ W (input gradient, W stored k x n), 'wgrad' = dy^T @ x (weight
    gradient, both stored k-major: k x m and k x n)."""
    pts = []
    seen = set()

    def add(group, m, n, k, layout="tn"):
        key = (m, n, k, layout)
        if key not in seen:
            seen.add(key)
            pts.append((group, m, n, k, layout))

    # the shapes test_h100_validation.cpp predicts (torch_kernels.py, 2026-11-22)
    for m, n, k in [(8192, 8192, 8192), (4096, 4096, 4096), (2048, 2048, 2048), (1024, 1024, 1024),
                    (512, 512, 512), (256, 256, 256), (8192, 12288, 4096), (8192, 4096, 4096),
                    (8192, 16384, 4096), (8192, 4096, 16384), (16, 4096, 4096), (128, 8192, 8192),
                    (1, 8192, 8192), (1536, 2816, 8192), (1536, 3072, 8192), (1664, 2816, 8192)]:
        add("validation", m, n, k)
    for s in (128, 192, 384, 640, 768, 1536, 2560, 3072, 5120, 6144):
        add("square", s, s, s)
    # wave quantization at 128x256 tiles on 132 SMs: 132, 133, 144, 264, 265 tiles
    for m, n in [(1536, 2816), (1664, 2816), (1536, 3072), (3072, 2816), (3200, 2816),
                 (2048, 4224), (2176, 4224)]:
        add("wave", m, n, 4096)
    # Llama-like layer GEMMs: (hidden, q+k+v width, ffn) per model; TP8 70B shards
    models = [("llama-1b", 2048, 2560, 5632), ("llama2-7b", 4096, 12288, 11008),
              ("llama3-8b", 4096, 6144, 14336), ("llama3-70b-tp8", 8192 // 8, 10240 // 8, 28672 // 8)]
    for tokens in (4096, 2048, 8192):
        for name, h, qkv, ffn in models:
            hin = 8192 if name.endswith("tp8") else h      # the 70B shard: full hidden in, shard out
            attn_out = h                                    # o-projection's contraction (shard width)
            layer = [("qkv", qkv, hin), ("o", hin, attn_out), ("gate_up", 2 * ffn, hin), ("down", hin, ffn)]
            for _, out_f, in_f in layer:
                add("llama fwd " + name, tokens, out_f, in_f, "tn")
                add("llama dgrad " + name, tokens, in_f, out_f, "nn")
                add("llama wgrad " + name, out_f, in_f, tokens, "wgrad")
    # decode / skinny
    for m in (1, 8, 32, 64, 256):
        for n, k in [(4096, 4096), (14336, 4096), (4096, 14336)]:
            add("skinny", m, n, k)
    # the full grid, shuffled (a budget cut then thins it evenly instead of dropping a corner)
    sizes = (128, 256, 512, 1024, 2048, 4096, 8192)
    grid = [(m, n, k) for m in sizes for n in sizes for k in sizes]
    random.Random(2026).shuffle(grid)
    for m, n, k in grid:
        add("grid", m, n, k)
    # 1.1, after every 1.0 point (whose order is unchanged): one-wave and two-wave GEMMs around
    # 1024^3 (cuBLAS runs 1024 x 1024 as 128 CTAs of 128x64; the model as 256 of 64x64 in two
    # waves), M x N from 768 to 1536 at K 1024 and 4096
    for m, n in [(768, 768), (768, 1024), (1024, 768), (896, 1024), (1024, 1152), (1152, 1152),
                 (1024, 1280), (1280, 1280), (1024, 1536), (1536, 1536), (1024, 1088)]:
        for k in (1024, 4096):
            add("tile", m, n, k)
    return pts


def gemm_operands(m, n, k, layout):
    if layout == "tn":
        a, b = torch.randn(m, k, device="cuda", dtype=B16), torch.randn(n, k, device="cuda", dtype=B16)
        return a, b, torch.empty(m, n, device="cuda", dtype=B16)
    if layout == "nn":
        a, b = torch.randn(m, k, device="cuda", dtype=B16), torch.randn(k, n, device="cuda", dtype=B16)
        return a, b, torch.empty(m, n, device="cuda", dtype=B16)
    a, b = torch.randn(k, m, device="cuda", dtype=B16), torch.randn(k, n, device="cuda", dtype=B16)
    return a, b, torch.empty(m, n, device="cuda", dtype=B16)


def gemm_call(layout):
    if layout == "tn":
        return lambda a, b, c: torch.mm(a, b.t(), out=c)
    if layout == "nn":
        return lambda a, b, c: torch.mm(a, b, out=c)
    return lambda a, b, c: torch.mm(a.t(), b, out=c)


def cold_times(enqueue, flush, reps=COLD_REPS):
    """An event pair around each repetition, L2 flushed (flush()) just before it, the stream
    back-logged so the host never starves it."""
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    gate = torch.cuda.Event()
    torch_timing.backlog(reps * 80.0 + 300.0)
    gate.record()
    for r in range(reps):
        flush()
        starts[r].record()
        enqueue(r)
        ends[r].record()
    ok = not gate.query()
    torch.cuda.synchronize()
    t = [a.elapsed_time(b) * 1000.0 for a, b in zip(starts, ends)]
    return {"cold_median_us": statistics.median(t), "cold_min_us": min(t), "cold_backlog_ok": ok}


def profile_kernels(enqueue, reps=PROFILE_REPS):
    return compiled_kernels.profile_kernels(enqueue, reps)


PROFILE_COST = {"n": 0, "s": 0.0}


def want_profile(group, index):
    """Every non-grid point; grid points too while a profile costs < 60 ms, else every third."""
    if group != "grid" or PROFILE_COST["n"] == 0:
        return True
    return PROFILE_COST["s"] / PROFILE_COST["n"] < 0.06 or index % 3 == 0


def run_gemm(group, m, n, k, layout, sampler, flush, index=0):
    first = gemm_operands(m, n, k, layout)
    set_bytes = sum(t.numel() * t.element_size() for t in first)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    sets = max(1, min(-(-3 * l2 // set_bytes), MAX_ROTATION_SETS, MAX_ROTATION_BYTES // set_bytes))
    inputs = [first] + [gemm_operands(m, n, k, layout) for _ in range(sets - 1)]
    mm = gemm_call(layout)

    def enqueue(rep):
        a, b, c = inputs[rep % len(inputs)]
        mm(a, b, c)

    t_start = elapsed()
    rec = {"kind": "gemm", "group": group, "m": m, "n": n, "k": k, "layout": layout, "dtype": "bf16",
           "input_sets": len(inputs), "set_bytes": set_bytes, "t_start_s": round(t_start, 3)}
    rec.update(torch_timing.measure(enqueue))
    rec["clock"] = sampler.window(t_start, elapsed() + 0.002)
    t_cold = elapsed()
    rec.update(cold_times(enqueue, flush))
    rec["clock_cold"] = sampler.window(t_cold, elapsed() + 0.002)
    rec["tflops"] = 2.0 * m * n * k / rec["time_us"] * 1e-6
    rec["t_end_s"] = round(elapsed(), 3)
    if want_profile(group, index):
        t_prof = time.time()
        try:
            rec["kernels"] = profile_kernels(enqueue)
        except Exception as e:  # noqa: BLE001
            rec["kernels_error"] = repr(e)
        if PROFILE_COST["n"] > 0 or time.time() - t_prof < 1.0:  # the first one (Kineto's start) apart
            PROFILE_COST["n"] += 1
            PROFILE_COST["s"] += time.time() - t_prof
    del inputs, first
    return rec


# ----------------------------------------------------------------------------------------------
# softmax (eager) and the compiled loss

def softmax_points():
    pts = []
    for op in ("softmax", "log_softmax"):
        for rows, cols in [(8192, 4096), (16384, 1024), (65536, 256), (4096, 32000), (32768, 2048),
                           (4096, 8192), (2048, 50304), (131072, 128)]:
            pts.append((op, rows, cols, "bf16"))
        for rows, cols in [(4096, 32000), (8192, 4096)]:
            pts.append((op, rows, cols, "fp32"))
    # 1.1, after every 1.0 point: more row lengths of each kernel (warp per row, CTA per row in
    # registers, three passes) in both dtypes, softmax and log_softmax alike
    for op in ("softmax", "log_softmax"):
        for rows, cols in [(32768, 512), (16384, 1536), (16384, 3072), (8192, 6144), (16384, 4096),
                           (4096, 16384), (1024, 128256)]:
            pts.append((op, rows, cols, "bf16"))
        for rows, cols in [(65536, 256), (16384, 1024), (16384, 2048), (2048, 50304)]:
            pts.append((op, rows, cols, "fp32"))
    return pts


def run_softmax(op, rows, cols, dtype, sampler):
    dt = B16 if dtype == "bf16" else F32
    fn = torch.softmax if op == "softmax" else torch.log_softmax
    one = rows * cols * (2 if dtype == "bf16" else 4)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    sets = max(1, min(-(-3 * l2 // one), 16, MAX_ROTATION_BYTES // one))
    xs = [torch.randn(rows, cols, device="cuda", dtype=dt).requires_grad_(True) for _ in range(sets)]
    with torch.no_grad():
        ys = [fn(x, -1) for x in xs]
    gy = torch.randn(rows, cols, device="cuda", dtype=dt)

    def fwd(rep):
        with torch.no_grad():
            return fn(xs[rep % sets], -1)

    def bwd(rep):  # the backward kernel alone: softmax_backward_data / log_softmax_backward_data
        i = rep % sets
        if op == "softmax":
            return torch.ops.aten._softmax_backward_data(gy, ys[i], -1, dt)
        return torch.ops.aten._log_softmax_backward_data(gy, ys[i], -1, dt)

    t_start = elapsed()
    rec = {"kind": "softmax", "op": op, "rows": rows, "cols": cols, "dtype": dtype, "input_sets": sets,
           "t_start_s": round(t_start, 3), "bytes_fwd": 2 * one, "bytes_bwd": 3 * one}
    rec["fwd"] = torch_timing.measure(fwd)
    rec["bwd"] = torch_timing.measure(bwd)
    rec["clock"] = sampler.window(t_start, elapsed() + 0.002)
    rec["fwd_gbps"] = rec["bytes_fwd"] / rec["fwd"]["time_us"] * 1e-3
    rec["bwd_gbps"] = rec["bytes_bwd"] / rec["bwd"]["time_us"] * 1e-3
    try:
        rec["kernels_fwd"] = profile_kernels(fwd)
        rec["kernels_bwd"] = profile_kernels(bwd)
    except Exception as e:  # noqa: BLE001
        rec["kernels_error"] = repr(e)
    del xs, ys
    return rec


def loss_points():
    # held-out shapes first (the 2026-11-26 run has 4096-16384 rows of 32000 and 128256), then a
    # repeat of that run's 4096 x 32000 and 4096 x 128256 on this GPU
    return [(2048, 32000), (4096, 50304), (2048, 128256), (8192, 65536), (1024, 151936),
            (4096, 32000), (4096, 128256)]


def run_loss(rows, vocab, sampler):
    # every shape compiles the same function anew (dynamic=False): lift dynamo's recompile limit
    try:
        import torch._dynamo
        for key in ("cache_size_limit", "recompile_limit"):
            if hasattr(torch._dynamo.config, key):
                setattr(torch._dynamo.config, key, 64)
    except Exception as e:  # noqa: BLE001
        log("dynamo config: %r" % (e,))
    t_start = elapsed()
    rec = compiled_kernels.run_point("cross_entropy", dict(rows=rows, vocab=vocab),
                                     lambda: compiled_kernels.cross_entropy(rows, vocab), "compile")
    rec.pop("triton_source", None)  # large; the per-kernel op counts stay
    rec["kind"] = "loss"
    rec["t_start_s"] = round(t_start, 3)
    rec["clock"] = sampler.window(t_start, elapsed() + 0.002)
    return rec


# ----------------------------------------------------------------------------------------------

def library_versions():
    v = {}
    try:
        v["nccl"] = ".".join(str(x) for x in torch.cuda.nccl.version())
    except Exception as e:  # noqa: BLE001
        v["nccl"] = "unknown: %r" % (e,)
    try:
        import triton
        v["triton"] = triton.__version__
    except Exception as e:  # noqa: BLE001
        v["triton"] = "unknown: %r" % (e,)
    for lib in ("libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"):
        try:
            v["cublaslt_version"] = int(ctypes.CDLL(lib).cublasLtGetVersion())
            v["cublaslt_library"] = lib
            break
        except Exception as e:  # noqa: BLE001
            v["cublaslt_version"] = "unknown: %r" % (e,)
    v["allow_bf16_reduced_precision_reduction"] = torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction
    v["cuda_visible_devices"] = os.environ.get("CUDA_VISIBLE_DEVICES")
    return v


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--budget-s", type=float, default=170.0)
    ap.add_argument("--gemm-until", type=float, default=90.0)
    ap.add_argument("--softmax-until", type=float, default=105.0)
    a = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    doc = {"schema": "gcsim.calibration.kernel_grid.v1",
           "sha256": {f: script_sha256(os.path.join(here, f))
                      for f in ("kernel_grid.py", "torch_timing.py", "compiled_kernels.py")},
           "meta": torch_timing.provenance("calibration/microbench/kernel_grid.py", VERSION),
           "nvidia_smi_before": smi_state(), "results": [], "errors": [], "skipped": []}
    doc["meta"].update(library_versions())
    doc["meta"]["import_s"] = elapsed()
    sampler = ClockSampler(nvml_index())
    doc["nvml"] = {"ok": sampler.ok, "error": sampler.err, "info": sampler.info,
                   "columns": ["t_s", "sm_mhz", "mem_mhz", "power_w", "clock_event_reasons"]}
    sampler.start()
    last_save = [0.0]

    def save(force=False):
        if not force and elapsed() - last_save[0] < 4.0:
            return
        doc["clock_timeline"] = sampler.timeline()
        doc["elapsed_s"] = elapsed()
        tmp = a.out + ".tmp"
        with open(tmp, "w") as fh:
            json.dump(doc, fh, separators=(",", ":"))
        os.replace(tmp, a.out)
        last_save[0] = elapsed()

    save(True)
    log("device %s, torch %s, CUDA %s, cuBLASLt %s, NVML %s" % (
        doc["meta"]["device_name"], torch.__version__, torch.version.cuda,
        doc["meta"].get("cublaslt_version"), sampler.info if sampler.ok else sampler.err))
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush_buf = torch.empty(2 * l2, device="cuda", dtype=torch.uint8)

    def flush():
        flush_buf.zero_()

    def attempt(what, fn):
        try:
            rec = fn()
            doc["results"].append(rec)
            return rec
        except Exception as e:  # noqa: BLE001
            doc["errors"].append({"point": what, "error": repr(e), "trace": traceback.format_exc()[-2000:]})
            log("FAILED %s: %r" % (what, e))
            torch.cuda.empty_cache()
            return None
        finally:
            save()

    for index, (group, m, n, k, layout) in enumerate(gemm_points()):
        if elapsed() > min(a.gemm_until, a.budget_s):
            doc["skipped"].append({"kind": "gemm", "group": group, "m": m, "n": n, "k": k, "layout": layout})
            continue
        rec = attempt("gemm %s %dx%dx%d %s" % (group, m, n, k, layout),
                      lambda: run_gemm(group, m, n, k, layout, sampler, flush, index))
        if rec:
            kname = rec.get("kernels", [{}])[0].get("name", "?") if rec.get("kernels") else "?"
            log("gemm %-24s %5d %5d %5d %-5s %9.2f us (cold %9.2f) %6.1f TF/s  SM %s MHz  %s" % (
                group[:24], m, n, k, layout, rec["time_us"], rec["cold_median_us"], rec["tflops"],
                rec["clock"].get("sm_mhz_median"), kname[:90]))
    doc["profile_cost"] = dict(PROFILE_COST)
    if not isinstance(doc["meta"].get("cublaslt_version"), int):  # cuBLAS loads at the first GEMM
        doc["meta"].update(library_versions())
    save(True)
    for op, rows, cols, dtype in softmax_points():
        if elapsed() > min(a.softmax_until, a.budget_s):
            doc["skipped"].append({"kind": "softmax", "op": op, "rows": rows, "cols": cols, "dtype": dtype})
            continue
        rec = attempt("%s %dx%d %s" % (op, rows, cols, dtype),
                      lambda: run_softmax(op, rows, cols, dtype, sampler))
        if rec:
            log("%-11s %6d x %6d %s fwd %8.1f us (%5.0f GB/s) bwd %8.1f us (%5.0f GB/s)  %s | %s" % (
                op, rows, cols, dtype, rec["fwd"]["time_us"], rec["fwd_gbps"], rec["bwd"]["time_us"],
                rec["bwd_gbps"], (rec.get("kernels_fwd") or [{}])[0].get("name", "?")[:60],
                (rec.get("kernels_bwd") or [{}])[0].get("name", "?")[:60]))
        torch.cuda.empty_cache()
    save(True)
    for rows, vocab in loss_points():
        if a.budget_s - elapsed() < 10.0:
            doc["skipped"].append({"kind": "loss", "rows": rows, "vocab": vocab})
            continue
        attempt("loss %dx%d" % (rows, vocab), lambda: run_loss(rows, vocab, sampler))
        torch.cuda.empty_cache()
    sampler.stop()
    doc["nvidia_smi_after"] = smi_state()
    save(True)
    log("done: %d points, %d errors, %d skipped" % (len(doc["results"]), len(doc["errors"]), len(doc["skipped"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
