#!/usr/bin/env python3
"""How NCCL kernels hold SMs: while they wait for a late peer, and in which order they get them
beside a GEMM (gcsim helper "holds", issue 16).  2 ranks (torchrun), one process group.

--mode waiting: PyTorch's default SDPA (cuDNN on Hopper, grid = SM count) timed with CUDA events
  while an NCCL op on the same GPU only waits for its peer (the peer's GPU sleeps 1.5x the timed
  loop before entering its side), against the same loop alone.  Ops: recv / send of 2 MiB and
  64 MiB (bf16), all-reduce of 64 MiB fp32 (as attention_beside_waiting_nccl.py) and 4 MiB bf16,
  reduce-scatter of 64 MiB bf16 input.  Then, on rank 0 only and under torch.profiler, one
  waiting case of each op (the NCCL kernel's grid, block, shared memory and how long it ran: does
  a send that fits NCCL's buffers end before its peer arrives?) and one normal call of each op.
--mode order: Megatron's overlapped input-gradient reduce-scatter.  Per release on both ranks: a
  gate sleep, GEMM g1 (8192^3 bf16, the data-gradient GEMM), then a reduce-scatter (256 MiB bf16
  input) on a second stream that waits for g1, then GEMM g2 (8192^3, the weight-gradient GEMM) on
  the first stream, launched after the reduce-scatter.  Under torch.profiler: when the NCCL
  kernel starts and ends relative to g1's end and g2's start/end.  Run once with
  CUDA_DEVICE_MAX_CONNECTIONS=1 (Megatron's setting) and once without (the launcher sets it).
Writes one JSON per rank (-o PATH.rank<r>, rewritten after every case) and logs to stdout.
"""
import argparse
import hashlib
import json
import os
import subprocess
import tempfile
import time
import traceback

import torch
import torch.distributed as dist
import torch.nn.functional as F

T0 = time.time()
MIB = 2**20


def log(msg):
    print("[%6.1fs] [r%d] %s" % (time.time() - T0, dist.get_rank() if dist.is_initialized() else -1, msg),
          flush=True)


def nvsmi():
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=index,name,driver_version,clocks.sm,clocks.mem,"
                               "power.draw,temperature.gpu,clocks_throttle_reasons.active", "--format=csv"],
                              capture_output=True, text=True, timeout=20).stdout
    except Exception as ex:  # noqa: BLE001
        return repr(ex)


def sleep_cycles_per_us():
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(1000)
    a.record()
    torch.cuda._sleep(20_000_000)
    b.record()
    torch.cuda.synchronize()
    return 20_000_000 / (a.elapsed_time(b) * 1e3)


def kernel_rows(prof):
    """The profiler's GPU kernels as rows sorted by start (us, profiler clock)."""
    with tempfile.TemporaryDirectory() as tmp:
        p = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(p)
        with open(p) as f:
            tr = json.load(f)
    rows = []
    for ev in tr.get("traceEvents", []):
        if ev.get("cat") != "kernel":
            continue
        a = ev.get("args", {})
        rows.append({"name": ev.get("name", "")[:120], "ts": float(ev["ts"]), "dur": float(ev.get("dur", 0.0)),
                     "stream": a.get("stream"), "grid": a.get("grid"), "block": a.get("block"),
                     "smem": a.get("shared memory"), "regs": a.get("registers per thread"),
                     "blocks_per_sm": a.get("blocks per SM")})
    rows.sort(key=lambda r: r["ts"])
    return rows


def kind_of(name):
    n = name.lower()
    if "nccl" in n:
        return "nccl"
    if "sleep" in n or "spin" in n:
        return "sleep"
    return "compute"


class Attn:
    def __init__(self, b, h, s, d, backward):
        self.backward = backward
        g = torch.Generator(device="cuda").manual_seed(1)
        mk = lambda: torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16, generator=g)  # noqa: E731
        self.q, self.k, self.v = mk(), mk(), mk()
        if backward:
            for t in (self.q, self.k, self.v):
                t.requires_grad_(True)
            self.out = F.scaled_dot_product_attention(self.q, self.k, self.v, is_causal=True)
            self.dout = torch.randn_like(self.out)

    def __call__(self):
        if self.backward:
            torch.autograd.grad(self.out, (self.q, self.k, self.v), self.dout, retain_graph=True)
        else:
            F.scaled_dot_product_attention(self.q, self.k, self.v, is_causal=True)


def timed(fn, n):
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(n + 1)]
    ev[0].record()
    for i in range(n):
        fn()
        ev[i + 1].record()
    return ev


def per_iter_us(ev):
    torch.cuda.synchronize()
    return [ev[i].elapsed_time(ev[i + 1]) * 1e3 for i in range(len(ev) - 1)]


def median(xs):
    s = sorted(xs)
    return s[len(s) // 2]


class Ops:
    """The NCCL ops of the waiting cases: start(measured side, async) and peer(blocking)."""

    def __init__(self, rank):
        self.peer = 1 - rank
        self.bufs = {
            "p2p_2m": torch.ones(MIB, device="cuda", dtype=torch.bfloat16),
            "p2p_64m": torch.ones(32 * MIB, device="cuda", dtype=torch.bfloat16),
            "p2p_256m": torch.ones(128 * MIB, device="cuda", dtype=torch.bfloat16),
            "ar_64m_f32": torch.ones(16 * MIB, device="cuda", dtype=torch.float32),
            "ar_4m_bf16": torch.ones(2 * MIB, device="cuda", dtype=torch.bfloat16),
            "rs_in": torch.ones(32 * MIB, device="cuda", dtype=torch.bfloat16),
            "rs_out": torch.empty(16 * MIB, device="cuda", dtype=torch.bfloat16),
        }
        b = self.bufs
        p = self.peer
        # kind -> (measured side's async call, peer's blocking call, bytes)
        self.kinds = {
            "recv_waiting_2MiB": (lambda: dist.irecv(b["p2p_2m"], p), lambda: dist.send(b["p2p_2m"], p), 2 * MIB),
            "send_waiting_2MiB": (lambda: dist.isend(b["p2p_2m"], p), lambda: dist.recv(b["p2p_2m"], p), 2 * MIB),
            "allreduce_waiting_64MiB_f32": (lambda: dist.all_reduce(b["ar_64m_f32"], async_op=True),
                                            lambda: dist.all_reduce(b["ar_64m_f32"]), 64 * MIB),
            "send_waiting_64MiB": (lambda: dist.isend(b["p2p_64m"], p), lambda: dist.recv(b["p2p_64m"], p),
                                   64 * MIB),
            "send_waiting_256MiB": (lambda: dist.isend(b["p2p_256m"], p), lambda: dist.recv(b["p2p_256m"], p),
                                    256 * MIB),
            "recv_waiting_64MiB": (lambda: dist.irecv(b["p2p_64m"], p), lambda: dist.send(b["p2p_64m"], p),
                                   64 * MIB),
            "allreduce_waiting_4MiB_bf16": (lambda: dist.all_reduce(b["ar_4m_bf16"], async_op=True),
                                            lambda: dist.all_reduce(b["ar_4m_bf16"]), 4 * MIB),
            "reducescatter_waiting_64MiB": (
                lambda: dist.reduce_scatter_tensor(b["rs_out"], b["rs_in"], async_op=True),
                lambda: dist.reduce_scatter_tensor(b["rs_out"], b["rs_in"]), 64 * MIB),
        }

    def warm(self, rank):
        for kind, (_, _, _) in self.kinds.items():
            if kind.startswith(("recv", "send")):
                continue
            self.kinds[kind][1]()
        for buf in ("p2p_2m", "p2p_64m", "p2p_256m"):
            for src in (0, 1):
                if rank == src:
                    dist.send(self.bufs[buf], self.peer)
                else:
                    dist.recv(self.bufs[buf], self.peer)
        torch.cuda.synchronize()


def one_waiting_rep(rank, measured, ops, kind, fn, iters, delay_cycles):
    """One repetition: the measured rank's op waits while fn runs iters times; returns per-iter us."""
    start, peer_call, _ = ops.kinds[kind]
    dist.barrier()
    torch.cuda.synchronize()
    if rank == measured:
        work = start()
        ev = timed(fn, iters)
        work.wait()
        out = per_iter_us(ev)
    else:
        torch.cuda._sleep(delay_cycles)
        peer_call()
        out = None
    torch.cuda.synchronize()
    return out


def run_waiting(args, doc, save):
    rank = dist.get_rank()
    cyc = doc["sleep_cycles_per_us"]
    ops = Ops(rank)
    ops.warm(rank)
    dist.barrier()
    shapes = [("b2h32s4096", 2, 32, 4096), ("b4h32s2048", 4, 32, 2048)]
    for sname, b, h, s in shapes:
        for backward in (False, True):
            name = "sdpa_%s_%s" % ("bwd" if backward else "fwd", sname)
            try:
                fn = Attn(b, h, s, 128, backward)
                for _ in range(5):
                    fn()
                torch.cuda.synchronize()
                alone = []
                for _ in range(args.reps):
                    alone += per_iter_us(timed(fn, args.iters))
                t_iter = median(alone)
                log("%s alone median %.1f us" % (name, t_iter))
            except Exception as ex:  # noqa: BLE001
                doc["errors"].append("%s setup: %r" % (name, ex))
                log("ERROR %s setup %r" % (name, ex))
                dist.barrier()
                continue
            delay_cycles = int(1.5 * t_iter * args.iters * cyc) + int(300 * cyc)
            for kind in ops.kinds:
                for measured in (0, 1):
                    over = torch.tensor([1 if time.time() - T0 > args.budget_s else 0], device="cuda")
                    dist.all_reduce(over, op=dist.ReduceOp.MAX)  # both ranks stop at the same case
                    if over.item():
                        doc["errors"].append("budget reached before %s %s r%d" % (name, kind, measured))
                        break
                    try:
                        per = []
                        for _ in range(args.reps):
                            r = one_waiting_rep(rank, measured, ops, kind, fn, args.iters, delay_cycles)
                            if r is not None:
                                per += r
                        if rank == measured:
                            m = median(per)
                            doc["cases"].append({"kernel": name, "beside": kind, "rank": rank,
                                                 "alone_us": t_iter, "beside_us": m, "slowdown": m / t_iter,
                                                 "beside_all_us": per})
                            log("%s beside %s: %.1f us (x%.3f)" % (name, kind, m, m / t_iter))
                    except Exception as ex:  # noqa: BLE001
                        doc["errors"].append("%s %s r%d: %r" % (name, kind, measured, ex))
                        log("ERROR %s %s %r" % (name, kind, ex))
                    save()
            if name == "sdpa_fwd_b2h32s4096":
                profile_waiting(args, doc, save, ops, fn, delay_cycles)
            del fn
            torch.cuda.empty_cache()


def profile_waiting(args, doc, save, ops, fn, delay_cycles):
    """Rank 0 measured and profiled, one rep per op: the NCCL kernel's launch shape and span."""
    rank = dist.get_rank()
    for kind in ops.kinds:
        over = torch.tensor([1 if time.time() - T0 > args.budget_s else 0], device="cuda")
        dist.all_reduce(over, op=dist.ReduceOp.MAX)
        if over.item():
            doc["errors"].append("budget reached before profiling %s" % kind)
            return
        try:
            prof = None
            if rank == 0:
                prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA])
                prof.start()
            try:
                one_waiting_rep(rank, 0, ops, kind, fn, args.iters, delay_cycles)
                dist.barrier()
                torch.cuda.synchronize()
                if not kind.startswith(("send", "recv")):
                    ops.kinds[kind][1]()  # and one normal call, both ranks in time
                torch.cuda.synchronize()
            finally:
                if prof is not None:
                    prof.stop()
            if prof is not None:
                rows = kernel_rows(prof)
                nccl = [r for r in rows if kind_of(r["name"]) == "nccl"]
                comp = [r for r in rows if kind_of(r["name"]) == "compute"]
                rec = {"kind": kind, "nccl_kernels": nccl,
                       "compute_first_ts": comp[0]["ts"] if comp else None,
                       "compute_last_end": max(r["ts"] + r["dur"] for r in comp) if comp else None,
                       "compute_kernel_names": sorted({r["name"] for r in comp})[:6]}
                doc["profiled_waiting"].append(rec)
                if nccl:
                    n0 = nccl[0]
                    log("profiled %s: nccl %s grid %s block %s smem %s dur %.1f us (compute %s..%s)" % (
                        kind, n0["name"][:50], n0["grid"], n0["block"], n0["smem"], n0["dur"],
                        rec["compute_first_ts"], rec["compute_last_end"]))
        except Exception:  # noqa: BLE001
            doc["errors"].append("profile %s: %s" % (kind, traceback.format_exc()[-600:]))
            log("ERROR profiling %s" % kind)
        save()


def run_order(args, doc, save):
    """Megatron's order: g1, then a reduce-scatter waiting for g1 on a second stream, then g2."""
    rank = dist.get_rank()
    cyc = doc["sleep_cycles_per_us"]
    n = 8192
    g = torch.Generator(device="cuda").manual_seed(2)
    A = torch.randn(n, n, device="cuda", dtype=torch.bfloat16, generator=g)
    B = torch.randn(n, n, device="cuda", dtype=torch.bfloat16, generator=g)
    C1, C2 = torch.empty_like(A), torch.empty_like(A)
    rs_in = torch.ones(128 * MIB, device="cuda", dtype=torch.bfloat16)  # 256 MiB input
    rs_out = torch.empty(64 * MIB, device="cuda", dtype=torch.bfloat16)
    comm = torch.cuda.Stream()
    cur = torch.cuda.current_stream()
    for _ in range(3):
        torch.matmul(A, B, out=C1)
    dist.reduce_scatter_tensor(rs_out, rs_in)
    torch.cuda.synchronize()
    # Alone: GEMM and reduce-scatter.
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(5):
        torch.matmul(A, B, out=C1)
    e.record()
    e.synchronize()
    doc["order"]["gemm_alone_us"] = s.elapsed_time(e) * 1e3 / 5
    dist.barrier()
    s.record()
    for _ in range(5):
        dist.reduce_scatter_tensor(rs_out, rs_in)
    e.record()
    e.synchronize()
    doc["order"]["rs_alone_us"] = s.elapsed_time(e) * 1e3 / 5
    log("order: gemm alone %.1f us, reduce-scatter alone %.1f us" % (doc["order"]["gemm_alone_us"],
                                                                       doc["order"]["rs_alone_us"]))

    def release():
        dist.barrier()
        torch.cuda.synchronize()
        torch.cuda._sleep(int(3000 * cyc))  # gate: everything below is enqueued before g1 runs
        t0, g1e, g2s, g2e = (torch.cuda.Event(enable_timing=True) for _ in range(4))
        t0.record(cur)
        torch.matmul(A, B, out=C1)  # g1
        g1e.record(cur)
        with torch.cuda.stream(comm):
            comm.wait_event(g1e)
            work = dist.reduce_scatter_tensor(rs_out, rs_in, async_op=True)
        g2s.record(cur)
        torch.matmul(A, B, out=C2)  # g2, launched after the reduce-scatter
        g2e.record(cur)
        # Waited on only after g2 is enqueued (as Megatron does): with one
        # launch queue a wait enqueued before g2 would hold g2 behind it.
        with torch.cuda.stream(comm):
            work.wait()
            rse = torch.cuda.Event(enable_timing=True)
            rse.record(comm)
        cur.wait_stream(comm)
        torch.cuda.synchronize()
        return {"g1_end": t0.elapsed_time(g1e) * 1e3, "rs_end": t0.elapsed_time(rse) * 1e3,
                "g2_end": t0.elapsed_time(g2e) * 1e3}

    for _ in range(2):
        release()
    doc["order"]["events"] = [release() for _ in range(args.order_reps)]
    save()
    prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA])
    prof.start()
    try:
        for _ in range(args.order_reps):
            release()
    finally:
        prof.stop()
    rows = kernel_rows(prof)
    doc["order"]["kernel_rows"] = rows
    rel = []
    gates = [i for i, r in enumerate(rows) if kind_of(r["name"]) == "sleep"]
    for k, lo in enumerate(gates):
        hi = gates[k + 1] if k + 1 < len(gates) else len(rows)
        chunk = rows[lo:hi]
        comp = [r for r in chunk if kind_of(r["name"]) == "compute"]
        # the next release's barrier (an all-reduce) falls in this chunk: only the reduce-scatter
        nccl = [r for r in chunk if kind_of(r["name"]) == "nccl" and "reducescatter" in r["name"].lower()]
        if len(comp) != 2 or len(nccl) != 1:
            rel.append({"unparsed": [(r["name"][:40], r["ts"], r["dur"]) for r in chunk]})
            continue
        g1, g2, rs = comp[0], comp[1], nccl[0]
        base = g1["ts"] + g1["dur"]
        rel.append({"g1_dur": g1["dur"], "g2_start": g2["ts"] - base, "g2_dur": g2["dur"],
                    "rs_start": rs["ts"] - base, "rs_dur": rs["dur"], "rs_end": rs["ts"] + rs["dur"] - base,
                    "g2_end": g2["ts"] + g2["dur"] - base, "rs_grid": rs["grid"], "g2_grid": g2["grid"],
                    "rs_name": rs["name"][:80], "g2_name": g2["name"][:80]})
    doc["order"]["releases_profiled"] = rel
    for r in rel:
        if "rs_start" in r:
            log("order: rs %.1f..%.1f us (dur %.1f, grid %s), g2 %.1f..%.1f us (dur %.1f) after g1's end" % (
                r["rs_start"], r["rs_end"], r["rs_dur"], r["rs_grid"], r["g2_start"], r["g2_end"], r["g2_dur"]))
    save()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-o", required=True)
    ap.add_argument("--mode", required=True, help="waiting, order, or waiting,order")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--order-reps", type=int, default=5)
    ap.add_argument("--budget-s", type=float, default=50)
    args = ap.parse_args()
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    rank = dist.get_rank()
    doc = {"schema": "gcsim.calibration.holds_bench.v1", "mode": args.mode,
           "script_sha256": hashlib.sha256(open(__file__, "rb").read()).hexdigest(),
           "torch": torch.__version__, "cuda": torch.version.cuda,
           "nccl": ".".join(map(str, torch.cuda.nccl.version())), "cudnn": torch.backends.cudnn.version(),
           "device": torch.cuda.get_device_name(), "sm_count": torch.cuda.get_device_properties(local).multi_processor_count,
           "cuda_device_max_connections": os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS"),
           "nccl_env": {k: v for k, v in os.environ.items() if k.startswith("NCCL_")},
           "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "nvidia_smi_before": nvsmi() if rank == 0 else "", "iters": args.iters, "reps": args.reps,
           "cases": [], "profiled_waiting": [], "order": {}, "errors": []}
    doc["sleep_cycles_per_us"] = sleep_cycles_per_us()

    def save():
        with open(args.o + ".rank%d" % rank, "w") as f:
            json.dump(doc, f, indent=1)

    for mode in args.mode.split(","):
        try:
            if mode == "waiting":
                run_waiting(args, doc, save)
            elif mode == "order":
                run_order(args, doc, save)
            else:
                doc["errors"].append("unknown mode " + mode)
        except Exception:  # noqa: BLE001
            doc["errors"].append(mode + ": " + traceback.format_exc()[-1500:])
            log("ERROR " + traceback.format_exc()[-400:])
    if rank == 0:
        doc["nvidia_smi_after"] = nvsmi()
    save()
    log("done, %d cases, errors: %s" % (len(doc["cases"]), doc["errors"]))
    try:
        dist.barrier()
        dist.destroy_process_group()
    except Exception:  # noqa: BLE001
        pass


if __name__ == "__main__":
    main()
