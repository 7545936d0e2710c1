#!/usr/bin/env python3
"""How much a GEMM slows while an NCCL all-reduce runs beside it, and the all-reduce's own times.

Launch with one process per GPU (2 GPUs here), e.g.
    NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 \
    python3 -m torch.distributed.run --standalone --nproc_per_node=2 \
        calibration/microbench/gemm_beside_nccl.py --out DIR
or, to log NCCL's channel / algorithm / protocol choices for a few all-reduces only,
    NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH,TUNING,COLL,ENV \
    python3 -m torch.distributed.run --standalone --nproc_per_node=2 \
        calibration/microbench/gemm_beside_nccl.py --nccl-info

Measures, per rank, with CUDA events (never host clocks), after warm-up, on torch.randn data:
  1. bf16 GEMM (torch.matmul, out=) 8192^3 and 4096^3 alone;
  2. dist.all_reduce (SUM, bf16) alone for 1, 16, 64, 256, 1024 MiB: time, algbw = S/t,
     busbw = algbw * 2(n-1)/n (nccl-tests definitions);
  3. overlap: GEMMs on one CUDA stream ("compute") and all-reduce(s) on another ("comm"),
     both released at the same GPU instant (see "timeline" below); each GEMM and each
     all-reduce has its own event pair on its own stream; all events are read relative to the
     common release event t0, so every item is an interval on one time line.
       mode "single": ONE all-reduce + enough back-to-back GEMMs to cover ~2x its duration;
                      GEMMs that lie wholly inside the all-reduce interval are "inside", those
                      that start after it ended are an in-situ "after" reference.
       mode "steady": back-to-back all-reduces and back-to-back GEMMs, each stream ~20 ms of
                      work; per-GEMM times of GEMMs wholly inside the all-reduce window and
                      per-all-reduce times of all-reduces wholly inside the GEMM window.
     Variants (8192^3 GEMM with 1 GiB all-reduce): "hiprio" = an NCCL process group with
     is_high_priority_stream and a comm stream of priority -1 (whichever stream PyTorch launches
     the NCCL kernel on, it is high priority), and groups with NCCL config max_ctas = 16 / 8
     (fewer SMs for NCCL).

The "timeline" harness: torch.cuda.synchronize + a host (gloo) barrier so both ranks start
together; a torch.cuda._sleep kernel on the current stream holds the GPU while the host enqueues
everything (so CPU launch cost never shows in the timings); then event t0 on the current stream;
the compute and comm streams wait on t0.  `gate_ok` records that t0 had not yet completed when
enqueueing finished (i.e. the GPU really ran the enqueued work back to back).  PyTorch runs
the NCCL kernel on its own internal stream, which waits on the comm stream; the all-reduce's
events on the comm stream therefore bracket: release -> (peer arrival, free SMs) -> NCCL kernel
-> end.  That is the all-reduce time a program sees.

Suite "interf" (--suite interf, any world size; written for 4 GPUs): the interference study of
issue 16.  Compute kernels on the compute stream: bf16 GEMMs 8192^3, 4096^3 and 2048x8192x8192
(m x n x k) and a memory-bound bf16 add c = a + b of 2^27 elements (768 MiB moved per kernel);
collectives on the comm stream: all-reduce 256 MiB and 1 GiB, reduce-scatter 256 MiB (input) and
all-gather 256 MiB (output), NCCL's default algorithm and protocol.  Each kernel and each
collective alone (back to back, same release harness), then every kernel x collective pair in
"steady" mode (both streams back to back for ~20 ms): per-kernel times of kernels wholly inside the
collectives' window and per-collective times of collectives wholly inside the kernels' window, so
both sides' slowdowns.  Collective buffers are zeros (sums stay finite over ~80 back-to-back
all-reduces on 4 ranks; NCCL's time does not depend on the values).  Cases run in priority order
(the add and the GEMMs beside the all-reduces first), each kernel's and collective's reference
measured the first time it is needed; --budget-s (from the process's start) stops starting new
cases; each rank's partial results are written after every case.

Suite "ddp" (--suite ddp, or ddp+interf: ddp first, then interf, one process): what an eager DDP
step overlaps.  The memory-bound kernel kinds of an eager transformer backward at the step's
tensor sizes (bf16 add of 8, 32 and 64 MiB per tensor, bf16 mul 32 MiB (SiLU-times-gate),
aten silu 32 MiB, bf16 -> fp32 copy_ of 16 and 64 MiB of bf16 input, F.rms_norm forward on 32 MiB
of rows of 4096), inputs rotated over >= 256 MiB, each beside back-to-back all-reduces of DDP's
25 MiB bucket (fp32 and bf16, cycling through 8 distinct buffers as DDP's buckets are distinct
tensors) and of 256 MiB bf16 in place, "steady" mode as above; same JSON schema and record
fields as suite interf (records carry "suite": "ddp").

NVLink multicast (NVLS) must stay OFF on the lent machines: the three variables below are forced
here before torch is imported, and the launcher sets them too.
"""
import os
import time as _time

T0 = _time.time()  # process start, before torch's import: --budget-s counts from here

for _k, _v in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
               ("NVSHMEM_DISABLE_NVLS", "1")):
    os.environ[_k] = _v

import argparse
import datetime
import json
import math
import platform
import re
import statistics
import subprocess
import sys
import threading
import time
import traceback

import torch
import torch.distributed as dist

MIB = 1 << 20
GIB = 1 << 30
SLEEP_CYC_PER_US = 1980  # max SM clock of H100/H200 (MHz): _sleep(us*1980) sleeps >= us
BF16 = torch.bfloat16
AR_SIZES = [1 * MIB, 16 * MIB, 64 * MIB, 256 * MIB, 1 * GIB]
GEMM_SIZES = [8192, 4096]
OVERLAP_AR = [1 * GIB, 256 * MIB]
# suite "interf"
ADD_ELEMENTS = 1 << 27   # bf16 add: 3 x 256 MiB moved per kernel
INTERF_WINDOW_US = 15000.0  # each stream's back-to-back work per release
INTERF_REPS = 5
# suite "ddp": an eager backward's memory-bound kernels beside DDP's bucket all-reduces
DDP_HIDDEN = 4096  # row length of the rms_norm rows (the strategy step's hidden size is 4096)
DDP_BUCKET = 25 * MIB  # PyTorch DDP's default bucket_cap_mb
DDP_BUCKETS = 8  # distinct bucket buffers cycled (8 x 25 MiB overflow the 50-60 MB L2)
STEP_BUCKET = 360710144  # the measured DP4 step's fc1 gradient bucket, fp32 (DDP's rebuilt size)
TOL_US = 5.0  # slack when testing "wholly inside" (event granularity ~0.5 us, release skew)

SECTION = {"name": "init"}


def log(*a):
    print(f"[{time.time() - T0:6.1f}s]", *a, flush=True)


# ----------------------------------------------------------------------------
# statistics (pure Python)
# ----------------------------------------------------------------------------
def stats(xs):
    xs = sorted(float(x) for x in xs)
    n = len(xs)
    if n == 0:
        return None

    def q(p):
        return xs[min(n - 1, max(0, int(round(p * (n - 1)))))]

    return {"n": n, "median": statistics.median(xs), "min": xs[0], "p10": q(0.10),
            "p90": q(0.90), "max": xs[-1], "mean": sum(xs) / n}


def med(s):
    return None if s is None else s["median"]


def analyze_rep(rep):
    """rep: {'gemm': [(s,e)...], 'ar': [(s,e)...], 'wall': us} (us relative to t0)."""
    G, A = rep["gemm"], rep["ar"]
    out = {"gemm_all": [e - s for s, e in G], "ar_all": [e - s for s, e in A],
           "gemm_inside": [], "gemm_after": [], "gemm_before": [], "gemm_touching": [],
           "gemm_touch_frac": [], "ar_inside": [], "gemm_span": None, "ar_span": None,
           "wall": rep["wall"]}
    if G:
        out["gemm_span"] = G[-1][1] - G[0][0]
    if A:
        out["ar_span"] = A[-1][1] - A[0][0]
    if G and A:
        aw0, aw1 = A[0][0], A[-1][1]
        gw0, gw1 = G[0][0], G[-1][1]
        for s, e in G:
            d = e - s
            if s >= aw0 - TOL_US and e <= aw1 + TOL_US:
                out["gemm_inside"].append(d)
            elif s >= aw1:
                out["gemm_after"].append(d)
            elif e <= aw0:
                out["gemm_before"].append(d)
            ov = sum(max(0.0, min(e, ae) - max(s, as_)) for as_, ae in A)
            if ov > 0:
                out["gemm_touching"].append(d)
                out["gemm_touch_frac"].append(ov / d if d > 0 else 0.0)
        for s, e in A:
            if s >= gw0 - TOL_US and e <= gw1 + TOL_US:
                out["ar_inside"].append(e - s)
    return out


def pool(reps, key):
    xs = []
    for r in reps:
        v = r[key]
        if v is None:
            continue
        if isinstance(v, list):
            xs.extend(v)
        else:
            xs.append(v)
    return stats(xs)


# ----------------------------------------------------------------------------
# NVML clock / power sampler (rank 0 samples every GPU it can see)
# ----------------------------------------------------------------------------
class ClockSampler:
    def __init__(self, period=0.025):
        self.period = period
        self.samples = []  # (t, section, gpu, sm_mhz, mem_mhz, power_w, reasons)
        self.err = None
        self.stop_ev = threading.Event()
        try:
            import pynvml
            pynvml.nvmlInit()
            self.nv = pynvml
            self.handles = [pynvml.nvmlDeviceGetHandleByIndex(i)
                            for i in range(pynvml.nvmlDeviceGetCount())]
            self.reason_fn = None
            for fname in ("nvmlDeviceGetCurrentClocksEventReasons",
                          "nvmlDeviceGetCurrentClocksThrottleReasons"):
                if hasattr(pynvml, fname):
                    self.reason_fn = getattr(pynvml, fname)
                    break
            self.th = threading.Thread(target=self._loop, daemon=True)
            self.th.start()
        except Exception as ex:  # noqa: BLE001
            self.err = repr(ex)
            self.handles = []

    def _loop(self):
        nv = self.nv
        t0 = time.time()
        while not self.stop_ev.is_set():
            for i, h in enumerate(self.handles):
                try:
                    r = self.reason_fn(h) if self.reason_fn else None
                    self.samples.append((round(time.time() - t0, 4), SECTION["name"], i,
                                         nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
                                         nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM),
                                         nv.nvmlDeviceGetPowerUsage(h) / 1000.0, r))
                except Exception as ex:  # noqa: BLE001
                    self.err = repr(ex)
            time.sleep(self.period)

    def stop(self):
        self.stop_ev.set()

    def summary(self):
        by = {}
        for t, sec, g, sm, mem, pw, r in self.samples:
            by.setdefault(sec, {}).setdefault(g, []).append((sm, mem, pw, r))
        out = {}
        for sec, gd in by.items():
            out[sec] = {}
            for g, rows in gd.items():
                reasons = 0
                for row in rows:
                    if row[3] is not None:
                        reasons |= int(row[3])
                out[sec][str(g)] = {
                    "n": len(rows),
                    "sm_mhz": {k: v for k, v in stats([x[0] for x in rows]).items() if k != "mean"},
                    "mem_mhz_median": med(stats([x[1] for x in rows])),
                    "power_w": {k: round(v, 1) for k, v in stats([x[2] for x in rows]).items()
                                if k in ("median", "max")},
                    "clock_event_reasons_or": hex(reasons)}
        return out


def nvsmi(args):
    try:
        return subprocess.run(["nvidia-smi"] + args, capture_output=True, text=True,
                              timeout=30).stdout
    except Exception as ex:  # noqa: BLE001
        return "ERROR " + repr(ex)


# ----------------------------------------------------------------------------
# the measuring harness
# ----------------------------------------------------------------------------
class Bench:
    def __init__(self, args):
        self.args = args
        self.rank = int(os.environ["RANK"])
        self.world = int(os.environ["WORLD_SIZE"])
        self.lr = int(os.environ.get("LOCAL_RANK", self.rank))
        torch.cuda.set_device(self.lr)
        self.dev = torch.device("cuda", self.lr)
        dist.init_process_group("nccl", device_id=self.dev,
                                timeout=datetime.timedelta(seconds=180))
        self.cpu_pg = dist.new_group(backend="gloo")
        self.comp = torch.cuda.Stream(device=self.dev)
        self.comm = torch.cuda.Stream(device=self.dev)
        # highest-priority comm stream, for the "hiprio" variant (lower number = higher priority)
        self.comm_hi = torch.cuda.Stream(device=self.dev, priority=-1)
        self.gen = torch.Generator(device=self.dev)
        self.gen.manual_seed(1234 + 17 * self.rank)
        self.res = {"gemm_alone": {}, "allreduce_alone": {}, "overlap": {}, "checks": {},
                    "errors": [], "gate_fail_count": 0}

    # -- helpers ---------------------------------------------------------------
    def randn(self, *shape):
        return torch.randn(*shape, device=self.dev, dtype=BF16, generator=self.gen)

    def host_barrier(self):
        torch.cuda.synchronize()
        dist.barrier(group=self.cpu_pg)

    def gemm_sets(self, n):
        # rotate input sets so the operands never sit in the 60 MB L2 between GEMMs
        set_bytes = 3 * n * n * 2
        k = max(1, math.ceil(256 * MIB / set_bytes))
        return [(self.randn(n, n), self.randn(n, n),
                 torch.empty(n, n, device=self.dev, dtype=BF16)) for _ in range(k)]

    def timeline(self, sets=None, n_gemm=0, ar=None, n_ar=0, pg=None, comm=None, kern_fn=None,
                 comm_fn=None, gate_extra_us=0.0):
        """Release n_ar all-reduces (comm stream) and n_gemm GEMMs (compute stream) at one GPU
        instant t0; return every item's [start, end] in us relative to t0.  kern_fn(i) / comm_fn()
        replace the GEMM / the all-reduce (suite interf); the result keys stay "gemm" / "ar"."""
        if ar is not None:
            ar[0].copy_(ar[1])  # refill with the rank's random data (sums grow x2 per op)
        self.host_barrier()
        cur = torch.cuda.current_stream()
        comm = comm if comm is not None else self.comm
        gate_us = 3000 + 30 * n_gemm + 150 * n_ar + gate_extra_us
        torch.cuda._sleep(int(gate_us * SLEEP_CYC_PER_US))
        t0 = torch.cuda.Event(enable_timing=True)
        t0.record(cur)
        a_ev, g_ev = [], []
        if n_ar:
            comm.wait_event(t0)
            with torch.cuda.stream(comm):
                for _ in range(n_ar):
                    s = torch.cuda.Event(enable_timing=True)
                    e = torch.cuda.Event(enable_timing=True)
                    s.record()
                    if comm_fn is not None:
                        comm_fn()
                    else:
                        dist.all_reduce(ar[0], group=pg)
                    e.record()
                    a_ev.append((s, e))
        if n_gemm:
            self.comp.wait_event(t0)
            with torch.cuda.stream(self.comp):
                for i in range(n_gemm):
                    s = torch.cuda.Event(enable_timing=True)
                    e = torch.cuda.Event(enable_timing=True)
                    s.record()
                    if kern_fn is not None:
                        kern_fn(i)
                    else:
                        A, B, C = sets[i % len(sets)]
                        torch.matmul(A, B, out=C)
                    e.record()
                    g_ev.append((s, e))
        gate_ok = not t0.query()
        if n_ar:
            cur.wait_stream(comm)
        if n_gemm:
            cur.wait_stream(self.comp)
        tend = torch.cuda.Event(enable_timing=True)
        tend.record(cur)
        tend.synchronize()
        if not gate_ok:
            self.res["gate_fail_count"] += 1

        def rel(ev):
            return t0.elapsed_time(ev) * 1000.0

        return {"gemm": [(rel(s), rel(e)) for s, e in g_ev],
                "ar": [(rel(s), rel(e)) for s, e in a_ev],
                "wall": rel(tend), "gate_ok": gate_ok}

    def run_reps(self, reps, warm, **kw):
        for _ in range(warm):
            self.timeline(**kw)
        out = [self.timeline(**kw) for _ in range(reps)]
        return [analyze_rep(r) for r in out], all(r["gate_ok"] for r in out)

    def ar_bufs(self, nbytes):
        n = nbytes // 2
        src = self.randn(n)
        return (torch.empty_like(src), src)

    # -- sections -------------------------------------------------------------------
    def gemm_alone(self, tag):
        SECTION["name"] = "gemm_alone_" + tag
        for n in GEMM_SIZES:
            sets = self.gemm_sets(n)
            n_gemm = 20
            reps, gate_ok = self.run_reps(3, 1, sets=sets, n_gemm=n_gemm)
            s = pool(reps, "gemm_all")
            rec = {"m": n, "n": n, "k": n, "per_gemm_us": s, "gemms_per_rep": n_gemm,
                   "reps": len(reps), "gate_ok": gate_ok,
                   "tflops_at_median": 2.0 * n ** 3 / (s["median"] * 1e-6) / 1e12,
                   "rot_sets": len(sets)}
            self.res["gemm_alone"].setdefault(str(n), {})[tag] = rec
            log(f"[r{self.rank}] gemm alone {tag} {n}^3: median {s['median']:.1f} us "
                f"({rec['tflops_at_median']:.0f} TFLOP/s) p10 {s['p10']:.1f} p90 {s['p90']:.1f}")
            del sets

    def check_gemm(self):
        n = 8192
        A, B = self.randn(n, n), self.randn(n, n)
        C = torch.matmul(A, B)
        rows = 128
        ref = A[:rows].double() @ B.double()
        err = ((C[:rows].double() - ref).norm() / ref.norm()).item()
        self.res["checks"]["gemm_8192_bf16_rel_err_vs_fp64_128rows"] = err
        log(f"[r{self.rank}] gemm check rel err {err:.2e}")

    def check_allreduce(self):
        buf, src = self.ar_bufs(16 * MIB)
        buf.copy_(src)
        dist.all_reduce(buf)
        gathered = [torch.empty_like(src) for _ in range(self.world)]
        dist.all_gather(gathered, src)
        ref = sum(g.float() for g in gathered)
        err = ((buf.float() - ref).norm() / ref.norm()).item()
        ok = bool(torch.isfinite(buf).all().item())
        self.res["checks"]["allreduce_16MiB_rel_err_vs_fp32_sum"] = err
        self.res["checks"]["allreduce_16MiB_finite"] = ok
        log(f"[r{self.rank}] all-reduce check rel err {err:.2e} finite {ok}")

    def allreduce_alone(self):
        SECTION["name"] = "allreduce_alone"
        n = self.world
        for S in AR_SIZES:
            ar = self.ar_bufs(S)
            single, ok1 = self.run_reps(30, 5, ar=ar, n_ar=1)
            loop, ok2 = self.run_reps(5, 1, ar=ar, n_ar=20)
            s1 = pool(single, "ar_all")
            sl = pool(loop, "ar_all")
            span = stats([r["ar_span"] / 20.0 for r in loop])
            t = span["median"]  # nccl-tests style: back-to-back loop time / iterations
            algbw = S / (t * 1e-6) / 1e9
            rec = {"bytes": S, "dtype": "bfloat16", "op": "sum",
                   "single_us": s1, "loop20_per_op_us": sl, "loop20_span_per_op_us": span,
                   "algbw_GBps": algbw, "busbw_GBps": algbw * 2 * (n - 1) / n,
                   "algbw_GBps_single": S / (s1["median"] * 1e-6) / 1e9,
                   "busbw_GBps_single": S / (s1["median"] * 1e-6) / 1e9 * 2 * (n - 1) / n,
                   "gate_ok": ok1 and ok2}
            self.res["allreduce_alone"][str(S)] = rec
            log(f"[r{self.rank}] all-reduce alone {S // MIB} MiB: single {s1['median']:.1f} us, "
                f"loop {t:.1f} us/op, busbw {rec['busbw_GBps']:.1f} GB/s")
            del ar

    def overlap(self, key, n, S, mode, pg=None, reps=None, comm=None):
        SECTION["name"] = "overlap_" + key
        g_alone = med(self.res["gemm_alone"][str(n)]["before"]["per_gemm_us"])
        a_alone = med(self.res["allreduce_alone"][str(S)]["single_us"])
        a_loop = med(self.res["allreduce_alone"][str(S)]["loop20_per_op_us"])
        if mode == "single":
            n_ar = 1
            n_gemm = max(4, math.ceil(2.0 * a_alone / g_alone) + 2)
            reps = reps or 30
        else:
            target = 20000.0
            n_ar = max(3, math.ceil(target / a_loop))
            n_gemm = max(3, math.ceil(target / g_alone))
            reps = reps or 20
        sets = self.gemm_sets(n)
        ar = self.ar_bufs(S)
        # all-reduce alone in this very harness and group (same n_ar), for the ratio
        ar_ref, _ = self.run_reps(10 if mode == "single" else 5, 2, ar=ar, n_ar=n_ar, pg=pg,
                                  comm=comm)
        rs, gate_ok = self.run_reps(reps, 3, sets=sets, n_gemm=n_gemm, ar=ar, n_ar=n_ar, pg=pg,
                                    comm=comm)
        gi, ga, gt = pool(rs, "gemm_inside"), pool(rs, "gemm_after"), pool(rs, "gemm_touching")
        ai, aa = pool(rs, "ar_inside"), pool(rs, "ar_all")
        ar_ref_s = pool(ar_ref, "ar_all")
        gspan = pool(rs, "gemm_span")
        extra = stats([r["gemm_span"] - n_gemm * g_alone for r in rs])
        rec = {"gemm_mnk": n, "ar_bytes": S, "mode": mode, "n_gemm": n_gemm, "n_ar": n_ar,
               "reps": reps, "gate_ok": gate_ok,
               "gemm_alone_us": g_alone, "ar_alone_us_single": a_alone, "ar_alone_us_loop": a_loop,
               "ar_alone_same_harness_us": ar_ref_s,
               "gemm_inside_ar_us": gi, "gemm_after_ar_us": ga, "gemm_touching_ar_us": gt,
               "gemm_touch_frac": pool(rs, "gemm_touch_frac"),
               "gemm_all_us": pool(rs, "gemm_all"), "gemm_before_ar_us": pool(rs, "gemm_before"),
               "ar_inside_gemms_us": ai, "ar_all_us": aa,
               "gemm_span_us": gspan, "ar_span_us": pool(rs, "ar_span"), "wall_us": pool(rs, "wall"),
               "gemm_stream_extra_us": extra,
               "ratio_gemm_inside_vs_alone": (med(gi) / g_alone) if gi else None,
               "ratio_gemm_inside_vs_after": (med(gi) / med(ga)) if gi and ga else None,
               "ratio_gemm_touching_vs_alone": (med(gt) / g_alone) if gt else None,
               "ratio_ar_vs_alone_same_harness": (med(aa) / med(ar_ref_s)) if aa else None,
               "ratio_ar_inside_vs_alone_same_harness": (med(ai) / med(ar_ref_s)) if ai else None,
               }
        if mode == "single" and aa:
            # GEMM-stream time lost per us of all-reduce: 0 = GEMMs untouched, 1 = serialised
            rec["gemm_extra_per_ar_us"] = med(extra) / med(aa)
        self.res["overlap"][key] = rec
        log(f"[r{self.rank}] overlap {key}: n_gemm {n_gemm} n_ar {n_ar} | gemm alone {g_alone:.1f} "
            f"inside {med(gi) if gi else float('nan'):.1f} (x{rec['ratio_gemm_inside_vs_alone'] or float('nan'):.3f}) "
            f"after {med(ga) if ga else float('nan'):.1f} | ar alone {med(ar_ref_s):.1f} "
            f"under {med(aa):.1f} (x{rec['ratio_ar_vs_alone_same_harness']:.3f}) "
            f"| stream extra {med(extra):.1f} us gate_ok {gate_ok}")
        del sets, ar

    def variant_group(self, name):
        opts = dist.ProcessGroupNCCL.Options()
        if name == "hiprio":
            opts.is_high_priority_stream = True
        elif name.startswith("maxctas"):
            cfg = opts.config
            cfg.max_ctas = int(name[len("maxctas"):])
            opts.config = cfg
        info = {"is_high_priority_stream": bool(opts.is_high_priority_stream)}
        try:
            info["config_max_ctas_readback"] = int(opts.config.max_ctas)
        except Exception as ex:  # noqa: BLE001
            info["config_max_ctas_readback"] = repr(ex)
        self.res.setdefault("variant_groups", {})[name] = info
        return dist.new_group(ranks=list(range(self.world)), backend="nccl", pg_options=opts)

    # -- main -------------------------------------------------------------------------
    def run_all(self):
        a = self.args
        self.check_gemm()
        self.check_allreduce()
        self.gemm_alone("before")
        self.allreduce_alone()
        for n in GEMM_SIZES:
            for S in OVERLAP_AR:
                for mode in ("single", "steady"):
                    key = f"gemm{n}_ar{S // MIB}MiB_{mode}"
                    try:
                        self.overlap(key, n, S, mode)
                    except Exception:  # noqa: BLE001
                        self.res["errors"].append({"where": key, "tb": traceback.format_exc()})
                        log(traceback.format_exc())
                    self.dump_partial()
        if not a.no_variants:
            for v in ("hiprio", "maxctas16", "maxctas8"):
                try:
                    pg = self.variant_group(v)
                except Exception:  # noqa: BLE001
                    self.res["errors"].append({"where": "group " + v, "tb": traceback.format_exc()})
                    log(traceback.format_exc())
                    continue
                for mode in ("single", "steady"):
                    key = f"gemm8192_ar1024MiB_{mode}_{v}"
                    try:
                        self.overlap(key, 8192, 1 * GIB, mode, pg=pg,
                                     comm=self.comm_hi if v == "hiprio" else None)
                    except Exception:  # noqa: BLE001
                        self.res["errors"].append({"where": key, "tb": traceback.format_exc()})
                        log(traceback.format_exc())
                self.dump_partial()
        self.gemm_alone("after")
        SECTION["name"] = "done"

    # -- suite "interf": kernels x collectives, both sides' slowdowns ---------------------------
    def interf_kernels(self):
        """name -> (kern_fn(i), description).  GEMM operands rotate over sets of >= 256 MiB."""
        ks = {}
        for n in (8192, 4096):
            sets = self.gemm_sets(n)
            ks[f"gemm{n}"] = ((lambda i, sets=sets: torch.matmul(*sets[i % len(sets)][:2],
                                                                 out=sets[i % len(sets)][2])),
                              {"kind": "gemm", "m": n, "n": n, "k": n, "dtype": "bfloat16",
                               "rot_sets": len(sets)})
        m, n, k = 2048, 8192, 8192
        nsets = max(1, math.ceil(256 * MIB / ((m * k + k * n + m * n) * 2)))
        sets = [(self.randn(m, k), self.randn(k, n), torch.empty(m, n, device=self.dev, dtype=BF16))
                for _ in range(nsets)]
        ks["gemm2048x8192x8192"] = ((lambda i, sets=sets: torch.matmul(
            *sets[i % len(sets)][:2], out=sets[i % len(sets)][2])),
            {"kind": "gemm", "m": m, "n": n, "k": k, "dtype": "bfloat16", "rot_sets": nsets})
        e = ADD_ELEMENTS
        a, b, c = self.randn(e), self.randn(e), torch.empty(e, device=self.dev, dtype=BF16)
        ks["add_bf16"] = ((lambda i, a=a, b=b, c=c: torch.add(a, b, out=c)),
                          {"kind": "elementwise_add", "elements": e, "dtype": "bfloat16",
                           "hbm_bytes_per_kernel": 3 * 2 * e})
        return ks

    def interf_comms(self, ar_sizes=(256 * MIB, 1 * GIB), rs_sizes=(256 * MIB,),
                     ag_sizes=(256 * MIB,), pg=None, tag=""):
        """name -> (comm_fn(), description).  Sizes as nccl-tests counts them (all-reduce: the
        buffer; reduce-scatter: its input; all-gather: its output).  pg: the process group (None:
        the default one); tag is appended to each name."""
        w = self.world
        cs = {}
        for S in ar_sizes:
            buf = torch.zeros(S // 2, device=self.dev, dtype=BF16)
            cs[f"ar{S // MIB}MiB{tag}"] = ((lambda buf=buf: dist.all_reduce(buf, group=pg)),
                                           {"op": "all_reduce", "bytes": S, "dtype": "bfloat16"})
        for S in rs_sizes:
            rs_in = torch.zeros(S // 2, device=self.dev, dtype=BF16)
            rs_out = torch.zeros(S // 2 // w, device=self.dev, dtype=BF16)
            cs[f"rs{S // MIB}MiB{tag}"] = (
                (lambda o=rs_out, i=rs_in: dist.reduce_scatter_tensor(o, i, group=pg)),
                {"op": "reduce_scatter", "bytes": S, "dtype": "bfloat16"})
        for S in ag_sizes:
            ag_in = torch.zeros(S // 2 // w, device=self.dev, dtype=BF16)
            ag_out = torch.zeros(S // 2, device=self.dev, dtype=BF16)
            cs[f"ag{S // MIB}MiB{tag}"] = (
                (lambda o=ag_out, i=ag_in: dist.all_gather_into_tensor(o, i, group=pg)),
                {"op": "all_gather", "bytes": S, "dtype": "bfloat16"})
        return cs

    def warm_comms(self, cs, n_buffers):
        """Every collective of `cs` run ungated (no sleep kernel in flight) before any timeline:
        NCCL connects its rings / trees and protocols lazily at the first collective that needs
        them (NCCL_RUNTIME_CONNECT, "Connected all rings" in the log), and the first call of the
        2026-11-27 4x H100 run, made inside the gated harness, never returned (memkern_bench.py,
        which warms its all-reduces this way, ran the same 25 MiB all-reduces gated without
        trouble).  n_buffers[name]: how many distinct buffers a name cycles (each gets two calls)."""
        for name, (fn, desc) in cs.items():
            self.progress(f"warm {name}")
            for _ in range(2 * n_buffers.get(name, 1)):
                fn()
            torch.cuda.synchronize()
            dist.barrier(group=self.cpu_pg)
            log(f"[r{self.rank}] warmed {name} ({desc['op']} {desc['bytes']} B "
                f"{desc.get('dtype', 'bfloat16')})")

    def progress(self, what):
        """Marks progress for the watchdog (start_watchdog)."""
        self.last_progress = (time.time(), what)

    def start_watchdog(self, stall_s):
        """If no case or warm-up step finishes for stall_s seconds (a collective that never
        returns), write this rank's partial results and leave the process (exit 3), so that the
        launcher's next stage gets the remaining time."""
        self.progress("start")

        def loop():
            while True:
                time.sleep(1.0)
                t, what = self.last_progress
                if time.time() - t > stall_s:
                    log(f"[r{self.rank}] WATCHDOG: no progress for {stall_s:.0f} s since "
                        f"'{what}'; writing partial results and exiting")
                    self.res["errors"].append({"where": what, "tb": f"watchdog: stalled "
                                               f"> {stall_s} s"})
                    try:
                        self.dump_partial()
                    finally:
                        os._exit(3)
        threading.Thread(target=loop, daemon=True).start()

    def over_budget(self):
        """The same decision on every rank (a rank skipping alone would hang its peers); the
        budget counts from the process's start (T0)."""
        flag = torch.tensor([1 if time.time() - T0 > self.args.budget_s else 0])
        dist.all_reduce(flag, op=dist.ReduceOp.MAX, group=self.cpu_pg)
        return bool(flag.item())

    def run_interf(self, t_start):
        """Cases in priority order, each with its references measured the first time they are
        needed: the memory-bound add and the GEMMs beside the all-reduces first, reduce-scatter
        and all-gather last.  No case starts once --budget-s (from process start) is spent."""
        res = self.res
        for key in ("kernel_alone", "comm_alone", "interf", "skipped"):
            res.setdefault(key, {} if key != "skipped" else [])
        res.setdefault("suite", "interf")
        ks = self.interf_kernels()
        cs = self.interf_comms()
        log(f"[r{self.rank}] buffers ready")
        self.warm_comms(cs, {})
        order = [(k, c) for c in ("ar256MiB", "ar1024MiB") for k in
                 ("add_bf16", "gemm8192", "gemm4096", "gemm2048x8192x8192")]
        order += [(k, c) for c in ("rs256MiB", "ag256MiB") for k in
                  ("add_bf16", "gemm8192", "gemm4096", "gemm2048x8192x8192")]
        for kname, cname in order:
            key = f"{kname}__{cname}"
            if self.over_budget():
                res["skipped"].append(key)
                continue
            try:
                self.interf_case(kname, ks[kname], cname, cs[cname])
            except Exception:  # noqa: BLE001
                res["errors"].append({"where": key, "tb": traceback.format_exc()})
                log(traceback.format_exc())
            self.dump_partial()
        if res["skipped"]:
            log(f"[r{self.rank}] budget spent, skipped: {', '.join(res['skipped'])}")
        SECTION["name"] = "done"

    # -- suite "ddp": an eager backward's memory-bound kernels beside DDP's bucket all-reduces ----
    def ddp_kernels(self):
        """name -> (kern_fn(i), description): the memory-bound kernel kinds of an eager transformer
        backward at the step's tensor sizes (8-64 MiB per bf16 tensor), every input rotated over
        >= 256 MiB of sets so each call reads HBM (the 50 MB L2 holds none of them between calls)."""
        ks = {}

        def nsets(set_bytes):
            return max(1, min(64, math.ceil(256 * MIB / set_bytes)))

        def elems(mib):
            return (mib * MIB // 2) // DDP_HIDDEN * DDP_HIDDEN  # whole rows of DDP_HIDDEN

        for fn_name, mib in (("add", 8), ("add", 32), ("add", 64), ("mul", 32)):
            e = elems(mib)
            k = nsets(3 * 2 * e)
            sets = [(self.randn(e), self.randn(e), torch.empty(e, device=self.dev, dtype=BF16))
                    for _ in range(k)]
            op = torch.add if fn_name == "add" else torch.mul
            ks[f"{fn_name}_bf16_{mib}MiB"] = (
                (lambda i, sets=sets, op=op: op(*sets[i % len(sets)][:2], out=sets[i % len(sets)][2])),
                {"kind": "elementwise", "fn": fn_name, "elements": e, "dtype": "bfloat16",
                 "hbm_bytes_per_kernel": 3 * 2 * e, "rot_sets": k})
        e = elems(32)
        k = nsets(2 * 2 * e)
        sets = [(self.randn(e), torch.empty(e, device=self.dev, dtype=BF16)) for _ in range(k)]
        ks["silu_bf16_32MiB"] = (
            (lambda i, sets=sets: torch.ops.aten.silu.out(sets[i % len(sets)][0],
                                                          out=sets[i % len(sets)][1])),
            {"kind": "elementwise", "fn": "silu", "elements": e, "dtype": "bfloat16",
             "hbm_bytes_per_kernel": 2 * 2 * e, "rot_sets": k})
        for mib in (16, 64):  # bf16 -> fp32 (DDP's / autocast's gradient casts): 6 B per element
            e = elems(mib)
            k = nsets(6 * e)
            sets = [(self.randn(e), torch.empty(e, device=self.dev, dtype=torch.float32))
                    for _ in range(k)]
            ks[f"cast_bf16_fp32_{mib}MiB"] = (
                (lambda i, sets=sets: sets[i % len(sets)][1].copy_(sets[i % len(sets)][0])),
                {"kind": "cast", "elements": e, "dtype": "bfloat16", "out_dtype": "float32",
                 "hbm_bytes_per_kernel": 6 * e, "rot_sets": k})
        e = elems(32)
        rows = e // DDP_HIDDEN
        k = nsets(2 * 2 * e)
        w = self.randn(DDP_HIDDEN)
        xs = [self.randn(rows, DDP_HIDDEN) for _ in range(k)]
        ks["rms_norm_bf16_32MiB"] = (
            (lambda i, xs=xs, w=w: torch.nn.functional.rms_norm(xs[i % len(xs)], [DDP_HIDDEN], w,
                                                                1e-6)),
            {"kind": "rms_norm", "tokens": rows, "hidden": DDP_HIDDEN, "elements": e,
             "dtype": "bfloat16", "hbm_bytes_per_kernel": 2 * 2 * e, "rot_sets": k,
             "call": "torch.nn.functional.rms_norm (forward; the per-call time spans every "
                     "kernel it launches)"})
        return ks

    def ddp_comms(self):
        """DDP-like all-reduces: 25 MiB buckets (PyTorch DDP's bucket_cap_mb), bf16 and fp32,
        cycling through 8 distinct buffers (DDP's buckets are distinct tensors; 200 MiB overflow
        the L2), and a 256 MiB bf16 all-reduce in place (as suite interf)."""
        cs = {}
        for dt, tag in ((BF16, "bf16"), (torch.float32, "fp32")):
            esz = torch.tensor([], dtype=dt).element_size()
            bufs = [torch.zeros(DDP_BUCKET // esz, device=self.dev, dtype=dt)
                    for _ in range(DDP_BUCKETS)]
            ctr = [0]

            def fn(bufs=bufs, ctr=ctr):
                dist.all_reduce(bufs[ctr[0] % len(bufs)])
                ctr[0] += 1
            cs[f"ar25MiBx{DDP_BUCKETS}_{tag}"] = (
                fn, {"op": "all_reduce", "bytes": DDP_BUCKET, "dtype": tag,
                     "distinct_buffers": DDP_BUCKETS})
        cs.update(self.interf_comms(ar_sizes=(256 * MIB,), rs_sizes=(), ag_sizes=()))
        return cs

    def step_kernels(self):
        """name -> (kern_fn(i), description): single kernels of the measured DP4 step's eager
        backward (strategy_step_bench.py's Llama: 8192 tokens per micro-batch, hidden 4096, SwiGLU
        11008, RMSNorm in fp32) at its sizes, the passes gcsim charges most beside DDP's all-reduces:
        the SwiGLU backward's cat of the gate and up gradients (2 x 172 MiB bf16 in, 344 out),
        aten silu_backward (172 MiB bf16 each) and its mul, the RMSNorm backward's fp32 pow and
        its broadcast mul by the rows' rsqrt (128 MiB fp32), and the whole RMSNorm backward as
        autograd runs it (one call = all its kernels).  Inputs rotated over >= 512 MiB."""
        ks = {}
        tok, h, f = 8192, DDP_HIDDEN, 11008

        def nsets(set_bytes):
            return max(2, min(8, math.ceil(512 * MIB / set_bytes)))

        k = nsets(4 * tok * f * 2)
        sets = [(self.randn(tok, f), self.randn(tok, f),
                 torch.empty(tok, 2 * f, device=self.dev, dtype=BF16)) for _ in range(k)]
        ks["step_cat_bf16_2x172MiB"] = (
            (lambda i, sets=sets: torch.cat(sets[i % len(sets)][:2], dim=-1,
                                            out=sets[i % len(sets)][2])),
            {"kind": "step_pass", "fn": "cat", "shape": [tok, 2 * f], "dtype": "bfloat16",
             "hbm_bytes_per_kernel": 4 * tok * f * 2, "rot_sets": k})
        k = nsets(3 * tok * f * 2)
        sets = [(self.randn(tok, f), self.randn(tok, f), torch.empty(tok, f, device=self.dev,
                                                                     dtype=BF16)) for _ in range(k)]
        ks["step_silu_bwd_bf16_172MiB"] = (
            (lambda i, sets=sets: torch.ops.aten.silu_backward.grad_input(
                sets[i % len(sets)][0], sets[i % len(sets)][1], grad_input=sets[i % len(sets)][2])),
            {"kind": "step_pass", "fn": "silu_backward", "shape": [tok, f], "dtype": "bfloat16",
             "hbm_bytes_per_kernel": 3 * tok * f * 2, "rot_sets": k})
        ks["step_mul_bf16_172MiB"] = (
            (lambda i, sets=sets: torch.mul(*sets[i % len(sets)][:2], out=sets[i % len(sets)][2])),
            {"kind": "elementwise", "fn": "mul", "elements": tok * f, "dtype": "bfloat16",
             "hbm_bytes_per_kernel": 3 * tok * f * 2, "rot_sets": k})
        k = nsets(2 * tok * h * 4)
        xs = [torch.randn(tok, h, device=self.dev, dtype=torch.float32, generator=self.gen)
              for _ in range(k)]
        outs = [torch.empty_like(x) for x in xs]
        rs = [torch.rand(tok, 1, device=self.dev, dtype=torch.float32, generator=self.gen) + 0.5
              for _ in range(k)]
        ks["step_pow_fp32_128MiB"] = (
            (lambda i, xs=xs, outs=outs: torch.pow(xs[i % len(xs)], 2, out=outs[i % len(xs)])),
            {"kind": "step_pass", "fn": "pow", "shape": [tok, h], "dtype": "float32",
             "hbm_bytes_per_kernel": 2 * tok * h * 4, "rot_sets": k})
        ks["step_mul_rsqrt_fp32_128MiB"] = (
            (lambda i, xs=xs, outs=outs, rs=rs: torch.mul(xs[i % len(xs)], rs[i % len(xs)],
                                                          out=outs[i % len(xs)])),
            {"kind": "step_pass", "fn": "mul_broadcast_rows", "shape": [tok, h],
             "dtype": "float32", "hbm_bytes_per_kernel": 2 * tok * h * 4, "rot_sets": k})
        # The framework's RMSNorm (fp32 upcast) forward once per set, its backward per call.
        w = torch.ones(h, device=self.dev, dtype=torch.float32, requires_grad=True)
        graphs = []
        # forward on the compute stream: autograd runs each backward op on its forward op's stream
        with torch.cuda.stream(self.comp):
            for _ in range(2):
                x = self.randn(tok, h).requires_grad_(True)
                xf = x.to(torch.float32)
                y = w * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5)).to(BF16)
                graphs.append((y, torch.randn(y.shape, device=self.dev, dtype=y.dtype,
                                              generator=self.gen), x))
        torch.cuda.synchronize()

        def rms_bwd(i, graphs=graphs, w=w):
            y, g, x = graphs[i % len(graphs)]
            torch.autograd.grad(y, (x, w), g, retain_graph=True)
        ks["step_rmsnorm_bwd_eager_64MiB"] = (
            rms_bwd, {"kind": "step_pass", "fn": "rmsnorm_backward_autograd", "shape": [tok, h],
                      "dtype": "bfloat16 in, fp32 inside",
                      "call": "torch.autograd.grad of framework_step.py's RMSNorm forward "
                              "(x and w): one call spans every kernel of its backward"})
        return ks

    def run_step(self):
        """Suite "step": step_kernels beside back-to-back fp32 all-reduces of the step's fc1
        bucket (360710144 B, DDP's rebuilt bucket size in ddp_bucket_timeline_2026-11-26, two
        distinct buffers) and of the 25 MiB bucket (8 buffers)."""
        res = self.res
        for key in ("kernel_alone", "comm_alone", "interf", "skipped"):
            res.setdefault(key, {} if key != "skipped" else [])
        ks = self.step_kernels()
        cs = {}
        for nbytes, nbuf, name in ((STEP_BUCKET, 2, "ar344MiBx2_fp32"),
                                   (DDP_BUCKET, DDP_BUCKETS, f"ar25MiBx{DDP_BUCKETS}_fp32")):
            bufs = [torch.zeros(nbytes // 4, device=self.dev, dtype=torch.float32)
                    for _ in range(nbuf)]
            ctr = [0]

            def fn(bufs=bufs, ctr=ctr):
                dist.all_reduce(bufs[ctr[0] % len(bufs)])
                ctr[0] += 1
            cs[name] = (fn, {"op": "all_reduce", "bytes": nbytes, "dtype": "fp32",
                             "distinct_buffers": nbuf})
        log(f"[r{self.rank}] step buffers ready")
        cs = {n: c for n, c in cs.items() if re.search(self.args.comms, n)}
        self.warm_comms(cs, {n: d.get("distinct_buffers", 1) for n, (_, d) in cs.items()})
        for cname in cs:
            if not re.search(self.args.comms, cname):
                continue
            for kname in ks:
                key = f"{kname}__{cname}"
                if self.over_budget():
                    res["skipped"].append(key)
                    continue
                try:
                    rec = self.pair_case(kname, ks[kname], cname, cs[cname])
                    rec["suite"] = "step"
                except Exception:  # noqa: BLE001
                    res["errors"].append({"where": key, "tb": traceback.format_exc()})
                    log(traceback.format_exc())
                self.dump_partial()
        del ks, cs
        torch.cuda.empty_cache()

    def run_ddp(self):
        """The ddp cases, every kernel beside each collective ("steady"), the 25 MiB fp32 bucket
        (the measured step's DDP reduces fp32 gradients) first.  Results go to the same
        res["kernel_alone"], ["comm_alone"], ["interf"] as suite interf (kernel names differ)."""
        res = self.res
        for key in ("kernel_alone", "comm_alone", "interf", "skipped"):
            res.setdefault(key, {} if key != "skipped" else [])
        res["suite"] = self.args.suite
        ks = self.ddp_kernels()
        cs = self.ddp_comms()
        log(f"[r{self.rank}] ddp buffers ready")
        cs = {n: c for n, c in cs.items() if re.search(self.args.comms, n)}
        self.warm_comms(cs, {n: d.get("distinct_buffers", 1) for n, (_, d) in cs.items()})
        order = [(k, c) for c in ("ar256MiB", f"ar25MiBx{DDP_BUCKETS}_fp32",
                                  f"ar25MiBx{DDP_BUCKETS}_bf16")
                 if re.search(self.args.comms, c) for k in ks]
        for kname, cname in order:
            key = f"{kname}__{cname}"
            if self.over_budget():
                res["skipped"].append(key)
                continue
            try:
                rec = self.pair_case(kname, ks[kname], cname, cs[cname])
                rec["suite"] = "ddp"
            except Exception:  # noqa: BLE001
                res["errors"].append({"where": key, "tb": traceback.format_exc()})
                log(traceback.format_exc())
            self.dump_partial()
        del ks, cs
        torch.cuda.empty_cache()

    def interf_case(self, kname, kern, cname, comm, target=INTERF_WINDOW_US, gate_extra_us=0.0):
        """One kernel x collective pair in "steady" mode: kern = (kern_fn(i), description), comm =
        (comm_fn(), description).  Each side's alone reference is measured the first time it is
        needed (same harness); results go to res["kernel_alone"], ["comm_alone"], ["interf"]."""
        res = self.res
        key = f"{kname}__{cname}"
        self.progress(key)
        if kname not in res["kernel_alone"]:
            SECTION["name"] = f"kernel_alone_{kname}"
            reps, ok = self.run_reps(2, 1, kern_fn=kern[0], n_gemm=10,
                                     gate_extra_us=gate_extra_us)
            s = pool(reps, "gemm_all")
            res["kernel_alone"][kname] = {"desc": kern[1], "per_kernel_us": s,
                                          "per_rep": 10, "reps": 2, "gate_ok": ok}
            log(f"[r{self.rank}] {kname} alone: median {s['median']:.1f} us "
                f"p10 {s['p10']:.1f} p90 {s['p90']:.1f}")
        if cname not in res["comm_alone"]:
            SECTION["name"] = f"comm_alone_{cname}"
            fn, desc = comm
            probe, _ = self.run_reps(1, 1, comm_fn=fn, n_ar=3)
            n_c = max(3, math.ceil(target / med(pool(probe, "ar_all"))))
            reps, ok = self.run_reps(3, 0, comm_fn=fn, n_ar=n_c)
            s = pool(reps, "ar_all")
            span = stats([r["ar_span"] / n_c for r in reps])
            algbw = desc["bytes"] / (span["median"] * 1e-6) / 1e9
            res["comm_alone"][cname] = {"desc": desc, "per_op_us": s,
                                        "span_per_op_us": span, "n_ops": n_c, "reps": 3,
                                        "gate_ok": ok, "algbw_GBps": algbw}
            log(f"[r{self.rank}] {cname} alone: {n_c} back to back, median "
                f"{s['median']:.1f} us per op, algbw {algbw:.1f} GB/s")
        SECTION["name"] = "interf_" + key
        k_alone = med(res["kernel_alone"][kname]["per_kernel_us"])
        c_alone = res["comm_alone"][cname]
        n_c = c_alone["n_ops"]
        n_k = max(3, math.ceil(target / k_alone))
        rs, ok = self.run_reps(INTERF_REPS, 1, kern_fn=kern[0], n_gemm=n_k, comm_fn=comm[0], n_ar=n_c,
                               gate_extra_us=gate_extra_us)
        ki, ca = pool(rs, "gemm_inside"), pool(rs, "ar_inside")
        c_ref = med(c_alone["per_op_us"])
        rec = {"kernel": kname, "comm": cname, "n_kernels": n_k, "n_comms": n_c,
               "reps": INTERF_REPS, "gate_ok": ok,
               "kernel_alone_us": k_alone, "comm_alone_us": c_ref,
               "kernel_inside_comm_us": ki, "comm_inside_kernels_us": ca,
               "kernel_all_us": pool(rs, "gemm_all"), "comm_all_us": pool(rs, "ar_all"),
               "kernel_span_us": pool(rs, "gemm_span"),
               "comm_span_us": pool(rs, "ar_span"), "wall_us": pool(rs, "wall"),
               "ratio_kernel": (med(ki) / k_alone) if ki else None,
               "ratio_comm": (med(ca) / c_ref) if ca else None}
        res["interf"][key] = rec
        log(f"[r{self.rank}] {key}: {n_k} kernels, {n_c} comms | kernel "
            f"{k_alone:.1f} -> {med(ki) if ki else float('nan'):.1f} us "
            f"(x{rec['ratio_kernel'] or float('nan'):.3f}) | comm {c_ref:.1f} -> "
            f"{med(ca) if ca else float('nan'):.1f} us "
            f"(x{rec['ratio_comm'] or float('nan'):.3f}) gate_ok {ok}")
        return rec

    # -- "pair" releases (suites ddp and step since the third call) ----------------------------
    def pair_release(self, kern_fn=None, n_k=0, comm_fn=None, n_c=0, k_delay_us=0.0,
                     c_delay_us=0.0):
        """memkern_bench.py's harness, which ran gated NCCL all-reduces of 25 MiB on these machines
        (the per-item harness above stalled at the first gated 25 MiB all-reduce, twice): the
        sleep gate on the compute stream (not the default stream), t0 recorded after it, the
        comm stream waiting on t0; one event pair around all n_c collectives and one around all
        n_k kernels (no event between items), each side optionally delayed by a sleep.  Returns
        (a0, a1, k0, k1) in us from t0 (None for an absent side) and gate_ok."""
        self.host_barrier()
        gate_us = 3000.0 + 40.0 * n_k + 150.0 * n_c + k_delay_us + c_delay_us
        t0 = torch.cuda.Event(enable_timing=True)
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
        with torch.cuda.stream(self.comp):
            torch.cuda._sleep(int(gate_us * SLEEP_CYC_PER_US))
            t0.record(self.comp)
        if n_c:
            self.comm.wait_event(t0)
            with torch.cuda.stream(self.comm):
                if c_delay_us > 0:
                    torch.cuda._sleep(int(c_delay_us * SLEEP_CYC_PER_US))
                ev[0].record(self.comm)
                for _ in range(n_c):
                    comm_fn()
                ev[1].record(self.comm)
        if n_k:
            with torch.cuda.stream(self.comp):
                if k_delay_us > 0:
                    torch.cuda._sleep(int(k_delay_us * SLEEP_CYC_PER_US))
                ev[2].record(self.comp)
                for i in range(n_k):
                    kern_fn(i)
                ev[3].record(self.comp)
        gate_ok = not t0.query()
        torch.cuda.synchronize()
        if not gate_ok:
            self.res["gate_fail_count"] += 1

        def rel(e):
            return t0.elapsed_time(e) * 1000.0
        a0, a1 = (rel(ev[0]), rel(ev[1])) if n_c else (None, None)
        k0, k1 = (rel(ev[2]), rel(ev[3])) if n_k else (None, None)
        return (a0, a1, k0, k1), gate_ok

    def pair_case(self, kname, kern, cname, comm, reps=3, gate_extra_us=0.0):
        """One kernel x collective pair with pair_release, both sides' means per item:
          kernel alone: R kernels (~2 ms) alone; collective alone: C collectives (~3 ms) alone;
          kernel side: the R kernels 300 us after the release, beside collectives covering
            3 x their batch + 1.5 ms (the batch must lie wholly inside the collectives' span);
          collective side: the C collectives 300 us after the release, beside kernels covering
            2.5 x their span + 1 ms (wholly inside the kernels' span).
        Each: 1 warm-up release + `reps`; the per-item mean of a release is its span / count.
        The record has suite interf's fields; n_kernels / n_comms are the counts of a ~15 ms
        steady window (what interference_compare.py replays), the counts run are in pair_*."""
        res = self.res
        key = f"{kname}__{cname}"
        self.progress(key)
        kfn, kdesc = kern
        cfn, cdesc = comm
        if kname not in res["kernel_alone"]:
            SECTION["name"] = f"kernel_alone_{kname}"
            _, probe_ok = self.pair_release(kfn, 3)
            (_, _, k0, k1), _ = self.pair_release(kfn, 3)
            per = (k1 - k0) / 3
            n = int(min(400, max(4, math.ceil(2000.0 / max(per, 1.0)))))
            self.pair_release(kfn, n)
            vals, oks = [], []
            for _ in range(reps):
                (_, _, k0, k1), ok = self.pair_release(kfn, n)
                vals.append((k1 - k0) / n)
                oks.append(ok)
            res["kernel_alone"][kname] = {"desc": kdesc, "per_kernel_us": stats(vals),
                                          "per_rep": n, "reps": reps, "gate_ok": all(oks),
                                          "harness": "pair"}
            log(f"[r{self.rank}] {kname} alone: {n} per release, mean {statistics.median(vals):.1f} us")
        if cname not in res["comm_alone"]:
            SECTION["name"] = f"comm_alone_{cname}"
            self.pair_release(comm_fn=cfn, n_c=3)
            (a0, a1, _, _), _ = self.pair_release(comm_fn=cfn, n_c=3)
            per = (a1 - a0) / 3
            n = int(min(300, max(3, math.ceil(3000.0 / max(per, 1.0)))))
            self.pair_release(comm_fn=cfn, n_c=n)
            vals, oks = [], []
            for _ in range(reps):
                (a0, a1, _, _), ok = self.pair_release(comm_fn=cfn, n_c=n)
                vals.append((a1 - a0) / n)
                oks.append(ok)
            med_c = statistics.median(vals)
            res["comm_alone"][cname] = {"desc": cdesc, "per_op_us": stats(vals), "n_ops": n,
                                        "reps": reps, "gate_ok": all(oks), "harness": "pair",
                                        "algbw_GBps": cdesc["bytes"] / (med_c * 1e-6) / 1e9}
            log(f"[r{self.rank}] {cname} alone: {n} per release, mean {med_c:.1f} us per op")
        SECTION["name"] = "pair_" + key
        ka_rec, ca_rec = res["kernel_alone"][kname], res["comm_alone"][cname]
        k_alone, c_alone = med(ka_rec["per_kernel_us"]), med(ca_rec["per_op_us"])
        n_k, n_c = ka_rec["per_rep"], ca_rec["n_ops"]
        # kernel side: the R kernels inside a longer run of collectives
        c_cover = int(min(300, max(3, math.ceil((3.0 * n_k * k_alone + 1500.0) / c_alone))))
        k_vals, k_in, k_ok = [], [], []
        for r in range(reps + 1):
            (a0, a1, k0, k1), ok = self.pair_release(kfn, n_k, cfn, c_cover, k_delay_us=300.0)
            if r == 0:
                continue
            k_vals.append((k1 - k0) / n_k)
            k_in.append(bool(k0 >= a0 - TOL_US and k1 <= a1 + TOL_US))
            k_ok.append(ok)
        # collective side: the C collectives inside a longer run of kernels
        k_cover = int(min(3000, max(3, math.ceil((2.5 * n_c * c_alone + 1000.0) / k_alone))))
        c_vals, c_in, c_ok = [], [], []
        for r in range(reps + 1):
            (a0, a1, k0, k1), ok = self.pair_release(kfn, k_cover, cfn, n_c, c_delay_us=300.0,)
            if r == 0:
                continue
            c_vals.append((a1 - a0) / n_c)
            c_in.append(bool(a0 >= k0 - TOL_US and a1 <= k1 + TOL_US))
            c_ok.append(ok)
        ki = stats([v for v, i in zip(k_vals, k_in) if i])
        ci = stats([v for v, i in zip(c_vals, c_in) if i])
        rec = {"kernel": kname, "comm": cname, "harness": "pair",
               "n_kernels": max(3, math.ceil(INTERF_WINDOW_US / k_alone)),
               "n_comms": max(3, math.ceil(INTERF_WINDOW_US / c_alone)),
               "pair_kernel_side": {"n_kernels": n_k, "n_comms": c_cover, "per_kernel_us": k_vals,
                                    "inside": k_in, "gate_ok": k_ok},
               "pair_comm_side": {"n_kernels": k_cover, "n_comms": n_c, "per_op_us": c_vals,
                                  "inside": c_in, "gate_ok": c_ok},
               "reps": reps, "gate_ok": all(k_ok) and all(c_ok),
               "kernel_alone_us": k_alone, "comm_alone_us": c_alone,
               "kernel_inside_comm_us": ki, "comm_inside_kernels_us": ci,
               "ratio_kernel": (med(ki) / k_alone) if ki else None,
               "ratio_comm": (med(ci) / c_alone) if ci else None}
        res["interf"][key] = rec
        log(f"[r{self.rank}] {key}: kernel {k_alone:.1f} -> {med(ki) if ki else float('nan'):.1f} us "
            f"(x{rec['ratio_kernel'] or float('nan'):.3f}) | comm {c_alone:.1f} -> "
            f"{med(ci) if ci else float('nan'):.1f} us (x{rec['ratio_comm'] or float('nan'):.3f}) "
            f"inside {sum(k_in)}/{len(k_in)} {sum(c_in)}/{len(c_in)} gate_ok {rec['gate_ok']}")
        return rec

    def dump_partial(self):
        p = os.path.join(self.args.partial_dir or self.args.out, f"rank{self.rank}_partial.json")
        with open(p, "w") as f:
            json.dump(self.res, f, indent=1, default=str)


def meta_info(bench):
    m = {"utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
         "host": platform.node(), "kernel": platform.release(), "python": sys.version.split()[0],
         "torch": torch.__version__, "torch_cuda": torch.version.cuda,
         "nccl_version": ".".join(str(x) for x in torch.cuda.nccl.version())
         if isinstance(torch.cuda.nccl.version(), tuple) else str(torch.cuda.nccl.version()),
         "world_size": bench.world,
         "devices": [], "env": {k: os.environ.get(k) for k in (
             "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS",
             "NCCL_DEBUG", "NCCL_ALGO", "NCCL_PROTO", "NCCL_MAX_CTAS", "NCCL_MIN_CTAS",
             "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_MAX_CONNECTIONS", "NCCL_RUNTIME_CONNECT")},
         "argv": sys.argv,
         "cublas_note": "torch.matmul(A,B,out=C) bf16 row-major, output bf16, default cuBLAS heuristics"}
    for i in range(torch.cuda.device_count()):
        p = torch.cuda.get_device_properties(i)
        m["devices"].append({"index": i, "name": p.name, "sms": p.multi_processor_count,
                             "mem_bytes": p.total_memory, "cc": f"{p.major}.{p.minor}",
                             "l2_bytes": getattr(p, "L2_cache_size", None)})
    try:
        m["p2p_access_0_1"] = torch.cuda.can_device_access_peer(0, 1)
    except Exception as ex:  # noqa: BLE001
        m["p2p_access_0_1"] = repr(ex)
    q = "name,pci.bus_id,driver_version,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,power.limit,power.draw,temperature.gpu"
    m["nvidia_smi_query"] = nvsmi(["--query-gpu=" + q, "--format=csv"])
    m["nvidia_smi_topo"] = nvsmi(["topo", "-m"])
    if bench.args.suite == "ar":  # run_interference.sh logs the topology; keep start-up short
        m["nvidia_smi_nvlink_status"] = nvsmi(["nvlink", "-s"])
    try:
        o = dist.ProcessGroupNCCL.Options()
        m["pg_default_is_high_priority_stream"] = bool(o.is_high_priority_stream)
    except Exception as ex:  # noqa: BLE001
        m["pg_default_is_high_priority_stream"] = repr(ex)
    return m


def nccl_info_mode():
    rank = int(os.environ["RANK"])
    lr = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(lr)
    dev = torch.device("cuda", lr)
    dist.init_process_group("nccl", device_id=dev)
    g = torch.Generator(device=dev)
    g.manual_seed(99 + rank)
    for S in AR_SIZES:
        x = torch.randn(S // 2, device=dev, dtype=BF16, generator=g)
        dist.all_reduce(x)
        torch.cuda.synchronize()
        if rank == 0:
            print(f"=== gemm_beside_nccl --nccl-info: all-reduce of {S} bytes done", flush=True)
        del x
    dist.barrier()
    dist.destroy_process_group()


def fmt(x, w=9, p=1):
    return f"{x:{w}.{p}f}" if isinstance(x, (int, float)) and x is not None else f"{'-':>{w}}"


def table(final):
    r0 = final["ranks"]["0"]
    r1 = final["ranks"].get("1")
    lines = []
    lines.append("== GEMM alone (per-GEMM median us, bf16, back-to-back) ==")
    for n in GEMM_SIZES:
        for tag in ("before", "after"):
            a = r0["gemm_alone"].get(str(n), {}).get(tag)
            b = r1["gemm_alone"].get(str(n), {}).get(tag) if r1 else None
            if a:
                lines.append(f"  {n}^3 {tag:6s} r0 {fmt(a['per_gemm_us']['median'])} us "
                             f"({a['tflops_at_median']:.0f} TF/s)  r1 "
                             f"{fmt(b['per_gemm_us']['median']) if b else '-'} us")
    lines.append("== all-reduce alone (bf16 sum, 2 ranks) r0 [r1] ==")
    lines.append(f"  {'size':>8} {'single_us':>10} {'loop_us/op':>11} {'algbw':>7} {'busbw':>7}  r1_loop_us")
    for S in AR_SIZES:
        a = r0["allreduce_alone"].get(str(S))
        b = r1["allreduce_alone"].get(str(S)) if r1 else None
        if a:
            lines.append(f"  {S // MIB:>5}MiB {fmt(a['single_us']['median'], 10)} "
                         f"{fmt(a['loop20_span_per_op_us']['median'], 11)} {fmt(a['algbw_GBps'], 7)} "
                         f"{fmt(a['busbw_GBps'], 7)}  {fmt(b['loop20_span_per_op_us']['median']) if b else '-'}")
    lines.append("== overlap (rank 0; [r1 ratio]) ==")
    lines.append(f"  {'case':38s} {'g_alone':>8} {'g_inside':>8} {'ratio':>6} {'g_after':>8} "
                 f"{'ar_alone':>8} {'ar_ovl':>8} {'ratio':>6} {'extra/ar':>8} {'g_touch':>8} {'r1_g':>6} {'r1_ar':>6}")
    for key, o in r0["overlap"].items():
        o1 = r1["overlap"].get(key) if r1 else None
        lines.append(
            f"  {key:38s} {fmt(o['gemm_alone_us'], 8)} {fmt(med(o['gemm_inside_ar_us']), 8)} "
            f"{fmt(o['ratio_gemm_inside_vs_alone'], 6, 3)} {fmt(med(o['gemm_after_ar_us']), 8)} "
            f"{fmt(med(o['ar_alone_same_harness_us']), 8)} {fmt(med(o['ar_all_us']), 8)} "
            f"{fmt(o['ratio_ar_vs_alone_same_harness'], 6, 3)} {fmt(o.get('gemm_extra_per_ar_us'), 8, 3)} "
            f"{fmt(med(o.get('gemm_touching_ar_us')), 8)} "
            f"{fmt(o1['ratio_gemm_inside_vs_alone'] if o1 else None, 6, 3)} "
            f"{fmt(o1['ratio_ar_vs_alone_same_harness'] if o1 else None, 6, 3)}")
    return "\n".join(lines)


INTERF_DEFINITIONS = {
    "times": "microseconds, CUDA events; medians over pooled samples of every repetition",
    "kernel_alone.per_kernel_us": "10 back-to-back kernels per release, 2 releases",
    "comm_alone.per_op_us": "n_ops back-to-back collectives per release (~15 ms), 3 releases",
    "interf.kernel_inside_comm_us": "per-kernel times of kernels wholly inside the collectives' "
                                    "window [first start, last end]",
    "interf.comm_inside_kernels_us": "per-collective times of collectives wholly inside the "
                                     "kernels' window",
    "interf.ratio_kernel": "median kernel inside / median kernel alone",
    "interf.ratio_comm": "median collective inside / median collective alone (same n_ops)",
    "collective bytes": "all_reduce: buffer; reduce_scatter: input; all_gather: output",
}


def interf_table(final):
    lines = ["== interf: kernel and collective alone / beside (median us; rank r ratios) =="]
    ranks = final["ranks"]
    r0 = ranks["0"]
    for name, rec in r0.get("kernel_alone", {}).items():
        lines.append(f"  {name:24s} alone {fmt(med(rec['per_kernel_us']))} us")
    for name, rec in r0.get("comm_alone", {}).items():
        lines.append(f"  {name:24s} alone {fmt(med(rec['per_op_us']))} us/op "
                     f"algbw {fmt(rec['algbw_GBps'], 7)} GB/s")
    lines.append(f"  {'case':32s} {'k_alone':>8} {'k_in':>8} {'comm':>8} {'c_in':>8}  "
                 "ratio kernel per rank | ratio comm per rank")
    for key, o in r0.get("interf", {}).items():
        rk = " ".join(fmt(ranks[r].get("interf", {}).get(key, {}).get("ratio_kernel"), 5, 3)
                      for r in sorted(ranks))
        rc = " ".join(fmt(ranks[r].get("interf", {}).get(key, {}).get("ratio_comm"), 5, 3)
                      for r in sorted(ranks))
        lines.append(f"  {key:32s} {fmt(o['kernel_alone_us'], 8)} "
                     f"{fmt(med(o['kernel_inside_comm_us']), 8)} {fmt(o['comm_alone_us'], 8)} "
                     f"{fmt(med(o['comm_inside_kernels_us']), 8)}  {rk} | {rc}")
    if r0.get("skipped"):
        lines.append("  skipped (budget): " + ", ".join(r0["skipped"]))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--name", default="gemm_beside_nccl.json")
    ap.add_argument("--nccl-info", action="store_true")
    ap.add_argument("--no-variants", action="store_true")
    ap.add_argument("--suite", choices=("ar", "interf", "ddp", "ddp+interf", "ddp+step+interf",
                                        "step", "ddp+step"), default="ar",
                    help="ar: the 2-GPU GEMM-beside-all-reduce study (default); interf: kernels x "
                         "collectives, both sides' slowdowns (issue 16); ddp: an eager "
                         "backward's memory-bound kernels beside DDP-like all-reduces (same "
                         "schema); ddp+interf: both, ddp first")
    ap.add_argument("--partial-dir", default=None,
                    help="where each rank writes its partial JSON (default: --out)")
    ap.add_argument("--comms", default=".*",
                    help="suites ddp / step: only the collectives whose name matches this "
                         "regular expression")
    ap.add_argument("--stall-s", type=float, default=0.0,
                    help="suites interf / ddp / step: leave (exit 3, partial results written) "
                         "when no case finishes for this long; 0: never")
    ap.add_argument("--budget-s", type=float, default=1e9,
                    help="interf: start no case after this many seconds from the process's start")
    args = ap.parse_args()
    if args.nccl_info:
        nccl_info_mode()
        return
    os.makedirs(args.out, exist_ok=True)
    if args.partial_dir:
        os.makedirs(args.partial_dir, exist_ok=True)
    bench = Bench(args)
    log(f"[r{bench.rank}] process group up (world {bench.world})")
    sampler = ClockSampler() if bench.rank == 0 else None
    meta = meta_info(bench) if bench.rank == 0 else None
    log(f"[r{bench.rank}] metadata taken")
    t_start = time.time()
    bench.dump_partial()  # an empty partial at once: a stalled first case still leaves a file
    if args.stall_s > 0:
        bench.start_watchdog(args.stall_s)
    try:
        if args.suite == "ar":
            bench.run_all()
        if "ddp" in args.suite:
            bench.run_ddp()
        if "step" in args.suite:
            bench.run_step()
        if "interf" in args.suite:
            bench.run_interf(t_start)
    except Exception:  # noqa: BLE001
        bench.res["errors"].append({"where": "run_all", "tb": traceback.format_exc()})
        log(traceback.format_exc())
    bench.progress("done")
    bench.res["elapsed_s"] = time.time() - t_start
    bench.dump_partial()
    dist.barrier(group=bench.cpu_pg)
    if bench.rank == 0:
        sampler.stop()
        meta["nvidia_smi_query_end"] = nvsmi(["--query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.limit,power.draw,temperature.gpu", "--format=csv"])
        meta["clock_sampler_error"] = sampler.err
        ranks = {}
        for r in range(bench.world):
            with open(os.path.join(args.partial_dir or args.out, f"rank{r}_partial.json")) as f:
                ranks[str(r)] = json.load(f)
        if args.suite != "ar":
            final = {"schema": "gcsim.calibration.interference.v1",
                     "script": "calibration/microbench/gemm_beside_nccl.py --suite " + args.suite,
                     "meta": meta, "clocks_by_section": sampler.summary(), "ranks": ranks,
                     "definitions": INTERF_DEFINITIONS}
            p = os.path.join(args.out, args.name)
            with open(p, "w") as f:
                json.dump(final, f, indent=1, default=str)
            log(f"wrote {p}")
            log(interf_table(final))
            dist.barrier(group=bench.cpu_pg)
            dist.destroy_process_group()
            return
        final = {"schema": "gcsim.calibration.gemm_beside_nccl.v1",
                 "script": "calibration/microbench/gemm_beside_nccl.py",
                 "meta": meta, "clocks_by_section": sampler.summary(), "ranks": ranks,
                 "definitions": {
                     "times": "microseconds, CUDA events; medians over pooled samples",
                     "algbw_GBps": "bytes / t / 1e9, t = back-to-back loop of 20 / 20",
                     "busbw_GBps": "algbw * 2(n-1)/n, n = world size",
                     "gemm_inside_ar_us": "per-GEMM times of GEMMs wholly inside the all-reduce window",
                     "gemm_after_ar_us": "per-GEMM times of GEMMs that started after the last all-reduce ended (same reps)",
                     "gemm_stream_extra_us": "GEMM-stream span minus n_gemm * gemm_alone median",
                     "gemm_extra_per_ar_us": "single mode: median extra / median all-reduce time",
                     "ar_alone_same_harness_us": "all-reduce(s) alone, released the same way, same n_ar and group",
                     "ar_all_us": "all-reduce times with the GEMMs running",
                 }}
        p = os.path.join(args.out, args.name)
        with open(p, "w") as f:
            json.dump(final, f, indent=1, default=str)
        log(f"wrote {p}")
        log(table(final))
    dist.barrier(group=bench.cpu_pg)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
