#!/usr/bin/env python3
"""How two CUDA streams share one GPU: kernels alone and launched together.

Cases (all bf16, torch.randn inputs, never zeros):
  (a) 1 GiB copy  dst.copy_(src)  alone; two such copies on streams A and B together;
  (b) GEMM 8192x8192x8192 alone; the GEMM on A with a 1 GiB copy on B together;
  (c) GEMM 4096^3 alone, layer_norm(8192x4096) alone, and both together (A, B).

Method (same as calibration/microbench/torch_kernels.py):
  * warm-up runs first; then REPS repetitions, medians reported (min/p90 too);
  * the main stream is back-logged with torch.cuda._sleep before the timed
    repetitions, so every launch is queued before the GPU reaches it: the
    events bracket GPU execution, not Python dispatch;
  * each repetition: event s0 on the main stream; streams A and B wait on s0;
    on each stream an event pair brackets its op; the main stream waits on A
    and B and records e0. Per op: its own pair; wall: s0 -> e0. The "alone"
    cases use the same harness with one stream empty. Op on A is enqueued
    before the op on B. Repetitions are serialized by the join.
  * inputs smaller than 256 MiB rotate among several sets (L2 is 50 MB);
  * the GPU rests ~1 s before each GEMM case (large GEMMs hit the 700 W cap);
  * nvidia-smi clocks.sm,clocks.mem,power.draw before and after each case.
Note: a same-dtype contiguous copy_ in PyTorch is a cudaMemcpyAsync
device-to-device, which the driver runs as an SM copy kernel.

Usage: python3 calibration/microbench/concurrent_kernels.py --out DIR [--name FILE]
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

import torch
import torch.nn.functional as F

GIB = 1 << 30
ROT_BYTES = 256 << 20
WARMUP = 5
REPS = 30
STATE = {"cyc_per_us": None}
RESULTS = []


def log(*a):
    print(*a, flush=True)


def clocks():
    try:
        o = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu,"
                            "clocks_event_reasons.active", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=30)
        return o.stdout.strip()
    except Exception as e:  # noqa: BLE001
        return "nvidia-smi failed: %r" % (e,)


def median(v):
    s = sorted(v)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def pct(s, q):
    s = sorted(s)
    return s[min(len(s) - 1, max(0, int(math.ceil(q * len(s))) - 1))]


def stats(v):
    return {"median_us": median(v), "min_us": min(v), "p90_us": pct(v, 0.9), "max_us": max(v)}


def calibrate_sleep():
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(1000)
    torch.cuda.synchronize()
    s.record()
    torch.cuda._sleep(20_000_000)
    e.record()
    torch.cuda.synchronize()
    return 20_000_000 / (s.elapsed_time(e) * 1000.0)


def measure(name, op_a, op_b, reps=REPS, warmup=WARMUP, rest_s=0.0, backlog_us=20_000.0, extra=None):
    """op_a / op_b: callables run(i) or None. Returns the record."""
    main = torch.cuda.current_stream()
    sa, sb = torch.cuda.Stream(), torch.cuda.Stream()
    ev = lambda: torch.cuda.Event(enable_timing=True)  # noqa: E731

    def one(i, rec):
        s0 = ev()
        s0.record(main)
        out = {"s0": s0}
        for key, st, op in (("a", sa, op_a), ("b", sb, op_b)):
            if op is None:
                continue
            st.wait_event(s0)
            with torch.cuda.stream(st):
                b, e = ev(), ev()
                b.record(st)
                op(i)
                e.record(st)
            out[key] = (b, e)
        for st, op in ((sa, op_a), (sb, op_b)):
            if op is not None:
                main.wait_stream(st)
        e0 = ev()
        e0.record(main)
        out["e0"] = e0
        if rec is not None:
            rec.append(out)

    for i in range(warmup):
        one(i, None)
    torch.cuda.synchronize()
    if rest_s:
        time.sleep(rest_s)
    clk_before = clocks()
    recs = []
    torch.cuda._sleep(int(STATE["cyc_per_us"] * backlog_us))
    t0 = time.time()
    for r in range(reps):
        one(warmup + r, recs)
    cpu_enqueue_ms = (time.time() - t0) * 1e3
    torch.cuda.synchronize()
    clk_after = clocks()
    wall, ta, tb, skew_a, skew_b = [], [], [], [], []
    for o in recs:
        wall.append(o["s0"].elapsed_time(o["e0"]) * 1e3)
        if "a" in o:
            ta.append(o["a"][0].elapsed_time(o["a"][1]) * 1e3)
            skew_a.append(o["s0"].elapsed_time(o["a"][0]) * 1e3)
        if "b" in o:
            tb.append(o["b"][0].elapsed_time(o["b"][1]) * 1e3)
            skew_b.append(o["s0"].elapsed_time(o["b"][0]) * 1e3)
    rec = {"case": name, "reps": reps, "warmup": warmup, "rest_s": rest_s, "wall": stats(wall),
           "wall_us_all": wall, "cpu_enqueue_ms": cpu_enqueue_ms, "backlog_us": backlog_us,
           "clocks_before": clk_before, "clocks_after": clk_after}
    if ta:
        rec["a"] = stats(ta)
        rec["a_start_after_s0_us_median"] = median(skew_a)
        rec["a_us_all"] = ta
    if tb:
        rec["b"] = stats(tb)
        rec["b_start_after_s0_us_median"] = median(skew_b)
        rec["b_us_all"] = tb
    if extra:
        rec.update(extra)
    RESULTS.append(rec)
    log("  %-34s wall %9.1f  A %9s  B %9s  | %s -> %s" % (
        name, rec["wall"]["median_us"], "%.1f" % rec["a"]["median_us"] if ta else "-",
        "%.1f" % rec["b"]["median_us"] if tb else "-", clk_before, clk_after))
    return rec


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--name", default="concurrent_kernels.json")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, args.name)
    t_start = time.time()
    bf = torch.bfloat16
    p = torch.cuda.get_device_properties(0)
    meta = {"date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            "script": "calibration/microbench/concurrent_kernels.py", "argv": sys.argv,
            "hostname": platform.node(), "python": sys.version.split()[0], "torch": torch.__version__,
            "cuda_runtime": torch.version.cuda, "device_name": p.name, "sm_count": p.multi_processor_count,
            "l2_bytes": getattr(p, "L2_cache_size", None), "total_memory_bytes": p.total_memory,
            "nvidia_smi": subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,power.limit,clocks.max.sm",
                                          "--format=csv,noheader"], capture_output=True, text=True).stdout.strip(),
            "clocks_idle_start": clocks(),
            "method": "see script docstring: per-op CUDA event pairs on streams A/B, wall s0->e0 on the main "
                      "stream, back-logged with torch.cuda._sleep, medians over reps; torch.randn inputs"}
    STATE["cyc_per_us"] = calibrate_sleep()
    meta["sleep_cycles_per_us"] = STATE["cyc_per_us"]
    checks = {}

    # ---------------- (a) 1 GiB copies ----------------
    n = GIB // 2
    src = [torch.randn(n, device="cuda", dtype=bf) for _ in range(2)]
    dst = [torch.empty(n, device="cuda", dtype=bf) for _ in range(2)]
    cpA = lambda i: dst[0].copy_(src[0])  # noqa: E731
    cpB = lambda i: dst[1].copy_(src[1])  # noqa: E731
    log("== (a) 1 GiB bf16 copies")
    measure("copy1g_alone_A", cpA, None, extra={"bytes_moved": 2 * GIB})
    measure("copy1g_alone_B", None, cpB, extra={"bytes_moved": 2 * GIB})
    measure("copy1g_x2_together", cpA, cpB, extra={"bytes_moved": 4 * GIB})
    torch.cuda.synchronize()
    checks["copy_equal"] = bool(torch.equal(dst[0], src[0]) and torch.equal(dst[1], src[1]))

    # ---------------- (b) GEMM 8192^3 + 1 GiB copy ----------------
    log("== (b) GEMM 8192^3 bf16, with a 1 GiB copy beside it")
    N = 8192
    A8 = torch.randn(N, N, device="cuda", dtype=bf)
    B8 = torch.randn(N, N, device="cuda", dtype=bf)
    C8 = torch.empty(N, N, device="cuda", dtype=bf)
    g8 = lambda i: torch.matmul(A8, B8, out=C8)  # noqa: E731
    measure("gemm8192_alone", g8, None, reps=20, warmup=3, rest_s=1.0, extra={"flops": 2.0 * N ** 3})
    measure("gemm8192_plus_copy1g_together", g8, cpB, reps=20, warmup=3, rest_s=1.0,
            extra={"flops": 2.0 * N ** 3, "bytes_moved_b": 2 * GIB})
    measure("gemm8192_alone_after", g8, None, reps=20, warmup=3, rest_s=1.0, extra={"flops": 2.0 * N ** 3})
    measure("copy1g_alone_B_after", None, cpB, extra={"bytes_moved": 2 * GIB})
    torch.cuda.synchronize()
    ref = A8[:64].float() @ B8.float()
    checks["gemm8192_relerr_rows0_63"] = float((C8[:64].float() - ref).norm() / ref.norm())
    del A8, B8, C8, ref, src, dst
    torch.cuda.empty_cache()

    # ---------------- (c) GEMM 4096^3 + layer_norm 8192x4096 ----------------
    log("== (c) GEMM 4096^3 bf16 with layer_norm(8192x4096) beside it")
    M = 4096
    ng = 3  # 96 MiB per set -> 288 MiB
    As = [torch.randn(M, M, device="cuda", dtype=bf) for _ in range(ng)]
    Bs = [torch.randn(M, M, device="cuda", dtype=bf) for _ in range(ng)]
    Cs = [torch.empty(M, M, device="cuda", dtype=bf) for _ in range(ng)]
    nl = 2  # 128 MiB per set (in + out) -> 256 MiB
    X = [torch.randn(8192, 4096, device="cuda", dtype=bf) for _ in range(nl)]
    Y = [torch.empty(8192, 4096, device="cuda", dtype=bf) for _ in range(nl)]
    w = torch.randn(4096, device="cuda", dtype=bf)
    bia = torch.randn(4096, device="cuda", dtype=bf)

    def g4(i):
        torch.matmul(As[i % ng], Bs[i % ng], out=Cs[i % ng])

    # layer_norm allocates its output each call (caching allocator, stream-ordered reuse)
    def ln2(i):
        F.layer_norm(X[i % nl], (4096,), w, bia)

    measure("gemm4096_alone", g4, None, rest_s=1.0, extra={"flops": 2.0 * M ** 3, "rot_sets": ng})
    measure("layernorm8192x4096_alone", None, ln2, extra={"bytes_moved": 2 * 8192 * 4096 * 2, "rot_sets": nl})
    measure("gemm4096_plus_layernorm_together", g4, ln2, rest_s=1.0,
            extra={"flops_a": 2.0 * M ** 3, "bytes_moved_b": 2 * 8192 * 4096 * 2})
    measure("gemm4096_alone_after", g4, None, rest_s=1.0, extra={"flops": 2.0 * M ** 3, "rot_sets": ng})
    torch.cuda.synchronize()
    ref = As[0][:64].float() @ Bs[0].float()
    checks["gemm4096_relerr_rows0_63"] = float((Cs[0][:64].float() - ref).norm() / ref.norm())
    y = F.layer_norm(X[0], (4096,), w, bia).float()
    yr = F.layer_norm(X[0].double(), (4096,), w.double(), bia.double())
    checks["layernorm_relerr"] = float((y.double() - yr).norm() / yr.norm())

    meta["clocks_idle_end"] = clocks()
    meta["checks"] = checks
    meta["elapsed_s"] = time.time() - t_start
    with open(path, "w") as f:
        json.dump({"schema": "gcsim.concurrent_kernels.v1", "meta": meta, "results": RESULTS}, f, indent=1)
    log("")
    log("device %s | %s | torch %s" % (p.name, meta["nvidia_smi"], torch.__version__))
    log("checks %s" % json.dumps(checks))
    log("%-34s %10s %10s %10s %10s %10s %10s" % ("case", "wall_med", "A_med", "B_med", "A_p90", "B_p90", "wall_p90"))
    for r in RESULTS:
        f = lambda k, s: ("%.1f" % r[k][s]) if k in r else "-"  # noqa: E731
        log("%-34s %10s %10s %10s %10s %10s %10s" % (r["case"], f("wall", "median_us"), f("a", "median_us"),
                                                     f("b", "median_us"), f("a", "p90_us"), f("b", "p90_us"),
                                                     f("wall", "p90_us")))
    log("total %.1f s; wrote %s" % (meta["elapsed_s"], path))


if __name__ == "__main__":
    main()
