#!/usr/bin/env python3
"""When a collective really gets its SMs beside a chain of GEMMs, and how attention (PyTorch SDPA)
and an NCCL collective slow each other (issue 16, interference).  2 GPUs, one process per GPU:

    python3 -m torch.distributed.run --standalone --nproc_per_node=2 \\
        calibration/microbench/attention_beside_nccl.py --out DIR [--budget-s 100]
    (calibration/microbench/run_attention_beside_nccl.sh launches it under a wall-time cap)

The harness (process group, streams, release gate, steady-mode pair timing, alone references,
clock sampler, metadata) is gemm_beside_nccl.py's Bench; this script adds:

  (a) "dispatch": a chain of N_CHAIN bf16 8192^3 GEMMs on the DEFAULT stream (as in training) and
      ONE collective (all-reduce 64 / 256 MiB) launched mid-chain on the comm stream.  The launch
      instant is set by a sleep kernel on the comm stream that starts before the GEMMs are
      released (so it never queues behind their CTAs) and ends LAUNCH_GEMMS GEMM-times after the
      release.  Under torch.profiler (CUDA activity only) every kernel's GPU start/end is recorded:
      the GEMMs', the sleep kernels' and the NCCL kernel's, with grid/block/shared memory, so one
      sees when the NCCL kernel starts relative to the GEMM running at its launch (hypothesis:
      equal-priority grids are dispatched in launch order, so it starts only when that GEMM's
      last wave starts / its CTAs drain).  Variant "hiprio": the same with an NCCL process group
      on a high-priority stream.  CUDA-event intervals (relative to the release) are recorded
      too, so the result stands without the profiler.
  (b) "attention": F.scaled_dot_product_attention, bf16, causal, head dim 128, PyTorch's default
      backend (the kernels that ran are recorded by name from a profiled call), q/k/v laid out
      as strategy_step_bench.py's attention makes them (one (b, s, 3, h, d) projection output,
      transposed): forward (no grad) and backward (autograd.grad of q, k, v from a retained
      forward), alone
      and in gemm_beside_nccl's "steady" mode beside all-reduce and reduce-scatter of 256 MiB
      and 1 GiB: per-kernel and per-collective medians and both ratios.
  (c) extra held-out steady cases for the dispatch model: GEMM 8192^3 / 4096^3 beside a 64 MiB
      all-reduce, and 8192^3 beside 256 MiB all-reduces on the high-priority group.

Every case is guarded; each rank writes its partial JSON after each case; rank 0 merges.
Reads clocks and power only; never changes a GPU setting.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gemm_beside_nccl as gbn  # noqa: E402  (sets the NVLS-off variables before torch's import)

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402

MIB, GIB, BF16 = gbn.MIB, gbn.GIB, gbn.BF16
log, med, pool, stats = gbn.log, gbn.med, gbn.pool, gbn.stats
SECTION = gbn.SECTION

N_CHAIN = 8                      # GEMMs per dispatch release
LAUNCH_GEMMS = (2.3, 2.7, 3.5)   # collective launched this many GEMM-times after the release
DISPATCH_SIZES = (64 * MIB, 256 * MIB)
DISPATCH_REPS = 3
# (batch, heads, seq): DP4's micro-batch of strategy_step_bench.py (2 x 4096, 32 heads), and a
# shorter sequence with the same tokens per head
ATTN_SHAPES = ((2, 32, 4096), (4, 32, 2048))
HEAD_DIM = 128
ATTN_ROT_BYTES = 200 * MIB       # >= 4x the 50 MB L2 per rotation


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def cycles_per_us():
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    cyc = 4_000_000
    s.record()
    torch.cuda._sleep(cyc)
    e.record()
    torch.cuda.synchronize()
    return cyc / (s.elapsed_time(e) * 1000.0)


def kernel_rows(trace_path):
    """The chrome trace's GPU kernels as compact rows sorted by start (us, profiler clock)."""
    with open(trace_path) as f:
        tr = json.load(f)
    rows = []
    for ev in tr.get("traceEvents", []):
        if ev.get("cat") != "kernel":
            continue
        a = ev.get("args", {})
        rows.append({"name": ev.get("name", "")[:160], "ts": float(ev["ts"]),
                     "dur": float(ev.get("dur", 0.0)), "stream": a.get("stream"),
                     "grid": a.get("grid"), "block": a.get("block"),
                     "smem": a.get("shared memory"), "regs": a.get("registers per thread"),
                     "blocks_per_sm": a.get("blocks per SM")})
    rows.sort(key=lambda r: r["ts"])
    return rows


def kind_of(name):
    n = name.lower()
    if "nccl" in n:
        return "nccl"
    if "spin" in n or "sleep" in n:
        return "sleep"
    return "compute"


def split_releases(rows, n_rel, n_gemm):
    """Per release: the compute kernels (n_gemm), the NCCL kernel and the sleep kernels, relative
    to the release's first sleep kernel's start (the gate).  Releases are told apart by their gate
    sleeps: each release enqueues two sleeps (gate, launch) before any other kernel."""
    gates = [i for i, r in enumerate(rows) if kind_of(r["name"]) == "sleep"]
    out = []
    if len(gates) != 2 * n_rel:
        return None
    for k in range(n_rel):
        lo = gates[2 * k]
        hi = gates[2 * k + 2] if k + 1 < n_rel else len(rows)
        chunk = rows[lo:hi]
        base = chunk[0]["ts"]
        comp = [(r["ts"] - base, r["ts"] + r["dur"] - base) for r in chunk
                if kind_of(r["name"]) == "compute"]
        nccl = [(r["ts"] - base, r["ts"] + r["dur"] - base) for r in chunk
                if kind_of(r["name"]) == "nccl"]
        sl = sorted(((r["ts"] - base, r["ts"] + r["dur"] - base) for r in chunk
                     if kind_of(r["name"]) == "sleep"), key=lambda x: x[1])
        rec = {"compute": comp, "nccl": nccl, "sleeps": sl}
        # the gate sleep ends first (the release), the launch sleep later (the launch instant)
        if len(sl) == 2 and len(nccl) == 1 and len(comp) == n_gemm:
            rel, launch = sl[0][1], sl[1][1]
            ns, ne = nccl[0]
            running = [i for i, (s, e) in enumerate(comp) if s <= launch < e]
            rec["release_us"] = rel
            rec["launch_us"] = launch - rel
            rec["nccl_start_after_launch_us"] = ns - launch
            rec["nccl_dur_us"] = ne - ns
            rec["gemm_dur_us"] = [e - s for s, e in comp]
            if running:
                i = running[0]
                rec["gemm_running_at_launch"] = i
                rec["nccl_start_minus_that_gemm_end_us"] = ns - comp[i][1]
                rec["that_gemm_end_minus_launch_us"] = comp[i][1] - launch
            rec["gemms_overlapping_nccl"] = [i for i, (s, e) in enumerate(comp)
                                             if s < ne and e > ns]
        out.append(rec)
    return out


class AttnBench(gbn.Bench):
    def __init__(self, args):
        super().__init__(args)
        self.res.update({"suite": "attention_beside_nccl", "dispatch": {}, "attention_backend": {},
                         "kernel_alone": {}, "comm_alone": {}, "interf": {}, "skipped": []})
        self.cyc = cycles_per_us()
        self.res["sleep_cycles_per_us"] = self.cyc

    # -- (a) dispatch order --------------------------------------------------------------------
    def dispatch_release(self, A, B, C, comm_fn, launch_us):
        """One release: N_CHAIN GEMMs on the default stream, one collective on the comm stream
        launched launch_us after the release.  Returns CUDA-event intervals relative to t0."""
        self.host_barrier()
        cur = torch.cuda.current_stream()
        gate_us = 3000.0 + 40.0 * N_CHAIN
        torch.cuda._sleep(int(gate_us * self.cyc))          # gate on the default stream
        with torch.cuda.stream(self.comm):                  # launch timer: runs beside the gate
            torch.cuda._sleep(int((gate_us + launch_us) * self.cyc))
            cs, ce = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            cs.record()
            comm_fn()
            ce.record()
        t0 = torch.cuda.Event(enable_timing=True)
        t0.record(cur)
        g_ev = []
        for _ in range(N_CHAIN):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record(cur)
            torch.matmul(A, B, out=C)
            e.record(cur)
            g_ev.append((s, e))
        gate_ok = not t0.query()
        cur.wait_stream(self.comm)
        end = torch.cuda.Event(enable_timing=True)
        end.record(cur)
        end.synchronize()

        def rel(ev):
            return t0.elapsed_time(ev) * 1000.0

        return {"gemm": [(rel(s), rel(e)) for s, e in g_ev], "comm": (rel(cs), rel(ce)),
                "gate_ok": gate_ok}

    def run_dispatch(self, variant, comms):
        """comms: name -> (fn, desc).  Every (collective, launch point) release DISPATCH_REPS
        times under one profiler session; per-rank rows and their per-release analysis."""
        SECTION["name"] = "dispatch_" + variant
        n = 8192
        A, B, C = self.randn(n, n), self.randn(n, n), torch.empty(n, n, device=self.dev, dtype=BF16)
        for _ in range(3):
            torch.matmul(A, B, out=C)
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(5):
            torch.matmul(A, B, out=C)
        e.record()
        e.synchronize()
        g_us = s.elapsed_time(e) * 1000.0 / 5
        plan = [(cname, f) for cname in comms for f in LAUNCH_GEMMS]
        for cname, f in plan:  # warm-up, unprofiled (NCCL connections, cuBLAS heuristics)
            self.dispatch_release(A, B, C, comms[cname][0], f * g_us)
        events = []
        prof = None
        try:  # the CUDA-event intervals stand without the profiler
            prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA])
            prof.start()
        except Exception:  # noqa: BLE001
            self.res["errors"].append({"where": "profiler start " + variant,
                                       "tb": traceback.format_exc()})
            prof = None
        try:
            for cname, f in plan:
                for _ in range(DISPATCH_REPS):
                    events.append({"comm": cname, "launch_gemms": f,
                                   **self.dispatch_release(A, B, C, comms[cname][0], f * g_us)})
        finally:
            if prof is not None:
                prof.stop()
        rec = {"gemm_alone_us": g_us, "n_chain": N_CHAIN, "plan": plan, "reps": DISPATCH_REPS,
               "releases_cuda_events": events}
        self.res["dispatch"][variant] = rec
        if prof is None:
            return
        try:
            with tempfile.TemporaryDirectory() as tmp:
                p = os.path.join(tmp, "trace.json")
                prof.export_chrome_trace(p)
                rows = kernel_rows(p)
            rec["kernel_rows"] = rows
            rel = split_releases(rows, len(events), N_CHAIN)
            rec["releases_profiled"] = rel
            if rel:
                for ev, r in zip(events, rel):
                    r["comm"], r["launch_gemms"] = ev["comm"], ev["launch_gemms"]
                for cname, f in plan:
                    gaps = [r.get("nccl_start_minus_that_gemm_end_us") for r in rel
                            if r["comm"] == cname and r["launch_gemms"] == f]
                    gaps = [x for x in gaps if x is not None]
                    if gaps:
                        log(f"[r{self.rank}] dispatch {variant} {cname} at {f} GEMMs: NCCL start "
                            f"- end of the GEMM running at launch: median {med(stats(gaps)):.1f} "
                            f"us (GEMM {g_us:.0f} us)")
            else:
                log(f"[r{self.rank}] dispatch {variant}: trace not split ({len(rows)} kernels)")
        except Exception:  # noqa: BLE001
            self.res["errors"].append({"where": "dispatch trace " + variant,
                                       "tb": traceback.format_exc()})
            log(traceback.format_exc())

    # -- (b) attention -------------------------------------------------------------------------
    def attention_kernels(self):
        """name -> (fn(i), desc): SDPA forward and backward per shape, inputs rotated over sets."""
        ks = {}
        d = HEAD_DIM
        for b, h, s in ATTN_SHAPES:
            per_set = b * s * h * d * 2 * 8   # q, k, v, out, d_out, dq, dk, dv (bf16)
            nsets = max(2, min(6, -(-ATTN_ROT_BYTES // per_set)))
            sets = []
            for _ in range(nsets):
                x = self.randn(b, s, 3, h, d).requires_grad_(True)
                # the forward on the compute stream: autograd runs the backward on the stream
                # its forward ran on, whatever stream is current when it is called
                self.comp.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(self.comp):
                    q, k, v = x.transpose(1, 3).unbind(2)  # (b, h, s, d) views, as the strategy
                    o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                    do = torch.randn_like(o)
                torch.cuda.current_stream().wait_stream(self.comp)
                sets.append((x, q, k, v, o, do))
            pairs = s * (s + 1) / 2
            fl = 4.0 * b * h * d * pairs
            desc = {"kind": "sdpa", "batch": b, "heads": h, "seq": s, "head_dim": d,
                    "causal": True, "dtype": "bfloat16", "rot_sets": nsets,
                    "layout": "x(b,s,3,h,d).transpose(1,3).unbind(2)"}

            def fwd(i, sets=sets):
                _, q, k, v, _, _ = sets[i % len(sets)]
                with torch.no_grad():
                    F.scaled_dot_product_attention(q, k, v, is_causal=True)

            def bwd(i, sets=sets):
                # gradients of q, k, v (not of x: that would add unbind's stacking copy)
                _, q, k, v, o, do = sets[i % len(sets)]
                torch.autograd.grad(o, (q, k, v), do, retain_graph=True)

            ks[f"sdpa_fwd_b{b}h{h}s{s}"] = (fwd, {**desc, "pass": "fwd", "flops": fl})
            ks[f"sdpa_bwd_b{b}h{h}s{s}"] = (bwd, {**desc, "pass": "bwd", "flops": 2.5 * fl})
        return ks

    def record_backend(self, ks):
        """Which kernels the default SDPA backend launches (one profiled call per kernel)."""
        info = {"cudnn_sdp_enabled": torch.backends.cuda.cudnn_sdp_enabled(),
                "flash_sdp_enabled": torch.backends.cuda.flash_sdp_enabled(),
                "mem_efficient_sdp_enabled": torch.backends.cuda.mem_efficient_sdp_enabled(),
                "kernels": {}}
        for name, (fn, _) in ks.items():
            try:
                fn(0)
                torch.cuda.synchronize()
                prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA])
                prof.start()
                fn(1)
                torch.cuda.synchronize()
                prof.stop()
                with tempfile.TemporaryDirectory() as d:
                    p = os.path.join(d, "t.json")
                    prof.export_chrome_trace(p)
                    info["kernels"][name] = [{k: r[k] for k in ("name", "dur", "grid", "block",
                                                               "smem", "regs")}
                                             for r in kernel_rows(p)]
                log(f"[r{self.rank}] {name}: " + "; ".join(
                    f"{r['name'][:70]} {r['dur']:.0f} us grid {r['grid']}"
                    for r in info["kernels"][name]))
            except Exception:  # noqa: BLE001
                info["kernels"][name] = "error: " + traceback.format_exc()
        self.res["attention_backend"] = info

    # -- the run ---------------------------------------------------------------------------------
    def guarded(self, key, fn):
        if self.over_budget():
            self.res["skipped"].append(key)
            return
        try:
            fn()
        except Exception:  # noqa: BLE001
            self.res["errors"].append({"where": key, "tb": traceback.format_exc()})
            log(traceback.format_exc())
        self.dump_partial()

    def run(self):
        comms = self.interf_comms(ar_sizes=(64 * MIB, 256 * MIB, 1 * GIB),
                                  rs_sizes=(256 * MIB, 1 * GIB), ag_sizes=())
        log(f"[r{self.rank}] comm buffers ready")
        hi = {}
        if not self.args.attention_only:
            disp = {f"ar{S // MIB}MiB": comms[f"ar{S // MIB}MiB"] for S in DISPATCH_SIZES}
            self.guarded("dispatch_normal", lambda: self.run_dispatch("normal", disp))

            def make_hi():
                pg = self.variant_group("hiprio")
                hi.update(self.interf_comms(ar_sizes=(256 * MIB,), rs_sizes=(), ag_sizes=(),
                                            pg=pg, tag="_hiprio"))
            self.guarded("hiprio_group", make_hi)
            if hi:
                self.guarded("dispatch_hiprio", lambda: self.run_dispatch("hiprio", hi))
        ks = {}
        self.guarded("attention_inputs", lambda: ks.update(self.attention_kernels()))
        log(f"[r{self.rank}] attention inputs ready: {', '.join(ks)}")
        if ks and not self.args.attention_only:
            self.guarded("attention_backend", lambda: self.record_backend(ks))
        order = [(k, c) for c in ("ar256MiB", "rs256MiB", "ar1024MiB", "rs1024MiB") for k in ks]
        for kname, cname in order:
            # the backward's autograd call costs ~100-300 us of host time per launch: a longer gate
            self.guarded(f"{kname}__{cname}", lambda kname=kname, cname=cname: self.interf_case(
                kname, ks[kname], cname, comms[cname], gate_extra_us=400.0 * 40))
        gk = {}
        self.guarded("gemm_inputs", lambda: gk.update(self.interf_kernels()))
        extra = [("gemm8192", "ar64MiB", comms), ("gemm4096", "ar64MiB", comms),
                 ("gemm8192", "ar256MiB_hiprio", hi)]
        for kname, cname, src in extra:
            if cname in src and kname in gk:
                self.guarded(f"{kname}__{cname}", lambda kname=kname, cname=cname, src=src:
                             self.interf_case(kname, gk[kname], cname, src[cname]))
        SECTION["name"] = "done"


DEFINITIONS = {
    "times": "microseconds; CUDA events or CUPTI kernel timestamps (profiler), per rank",
    "dispatch.<variant>.kernel_rows": "every GPU kernel of the profiled releases: name, start ts "
                                      "(profiler clock), dur, stream, grid, block, smem, regs",
    "dispatch.<variant>.releases_profiled": "per release, relative to the gate sleep's start: "
                                            "compute kernels, the NCCL kernel, the sleeps; "
                                            "launch_us = launch sleep end - gate sleep end; "
                                            "nccl_start_minus_that_gemm_end_us: NCCL kernel start "
                                            "minus the end of the GEMM running at the launch",
    "dispatch.<variant>.releases_cuda_events": "CUDA-event intervals relative to t0 (the release)",
    "interf": "as gemm_beside_nccl.py --suite interf (steady mode, ~15 ms per stream)",
    "attention_backend.kernels": "kernels one call of each SDPA pass launched (default backend)",
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--name", default="attention_beside_nccl.json")
    ap.add_argument("--partial-dir", default=None)
    ap.add_argument("--budget-s", type=float, default=1e9,
                    help="start no case after this many seconds from the process's start")
    ap.add_argument("--attention-only", action="store_true",
                    help="only (b): no profiler, no second process group (the first run hung "
                         "after them, at the first collective of (b))")
    args = ap.parse_args()
    args.suite = "interf"  # meta_info: keep start-up short (no nvlink -s)
    os.makedirs(args.out, exist_ok=True)
    if args.partial_dir:
        os.makedirs(args.partial_dir, exist_ok=True)
    bench = AttnBench(args)
    log(f"[r{bench.rank}] process group up (world {bench.world})")
    sampler = gbn.ClockSampler() if bench.rank == 0 else None
    meta = gbn.meta_info(bench) if bench.rank == 0 else None
    t_start = time.time()
    try:
        bench.run()
    except Exception:  # noqa: BLE001
        bench.res["errors"].append({"where": "run", "tb": traceback.format_exc()})
        log(traceback.format_exc())
    bench.res["elapsed_s"] = time.time() - t_start
    bench.dump_partial()
    dist.barrier(group=bench.cpu_pg)
    if bench.rank == 0:
        sampler.stop()
        meta["nvidia_smi_query_end"] = gbn.nvsmi(["--query-gpu=name,clocks.sm,clocks.mem,"
                                                  "power.draw,temperature.gpu,"
                                                  "clocks_throttle_reasons.active",
                                                  "--format=csv"])
        meta["clock_sampler_error"] = sampler.err
        meta["cudnn"] = torch.backends.cudnn.version()
        meta["sha256"] = {os.path.basename(p): sha256(p) for p in
                          (os.path.abspath(__file__), os.path.abspath(gbn.__file__))}
        ranks = {}
        for r in range(bench.world):
            with open(os.path.join(args.partial_dir or args.out, f"rank{r}_partial.json")) as f:
                ranks[str(r)] = json.load(f)
        final = {"schema": "gcsim.calibration.attention_beside_nccl.v1",
                 "script": "calibration/microbench/attention_beside_nccl.py", "meta": meta,
                 "clocks_by_section": sampler.summary(), "ranks": ranks,
                 "definitions": DEFINITIONS}
        p = os.path.join(args.out, args.name)
        with open(p, "w") as f:
            json.dump(final, f, indent=1, default=str)
        log(f"wrote {p}")
        log(gbn.interf_table(final))
    dist.barrier(group=bench.cpu_pg)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
