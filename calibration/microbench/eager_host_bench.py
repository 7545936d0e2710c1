#!/usr/bin/env python3
"""The host's side of eager PyTorch on this machine, per rank of a torchrun group: what gcsim's
`cluster.host` profile needs, measured with small generic calls, no model and no MoE layer
(`gcsim calibrate --host-fit OUT.json -o host.yaml` turns it into a profile).

    torchrun --nproc_per_node N calibration/microbench/eager_host_bench.py -o OUT.json [--append]

Every rank runs the same rounds at once (a barrier before each round), the GPU back-logged with
torch.cuda._sleep so that no call waits for it: each call's host time is the time from the
previous call's return to its own return (time.perf_counter_ns after every call, ~0.2 us), the
Python between calls included, as gcsim charges it.

One round:
  mixed   the op catalogue below, each op OPS_REPEAT times, in an order shuffled per round (the
          same on every rank: its collectives must match): each op's cost in a stream of other
          calls, not repeated back to back (a tight loop of one op runs faster than real code)
            mm          y = x @ w.t()                      (small bf16 GEMM)
            mm_t        g.t() @ x                          (GEMM on a transposed view)
            cast        y.float()
            softmax     torch.softmax(y, dim=-1)
            topk        torch.topk(p, 2, dim=-1)
            gather      x.index_select(0, idx)
            scale       x * p.unsqueeze(1)                 (broadcast multiply)
            zero        o.zero_()
            index_add   o.index_add_(0, idx, x)
            silu, mul, cat                                 (elementwise, concatenation)
            a2a         all_to_all_single of W int64s      (even, no splits)
            a2a_splits  torch.empty + all_to_all_single with uneven split lists (the output's
                        allocation in its cost, as code that receives a new buffer pays it)
  loop    a Python loop over LOOP_ITERS row slices of a buffer, after its output's allocation:
          fwd: mm, silu of a column half, mul, mm into a slice of the output (a SwiGLU MLP);
          bwd: the same MLP's backward, 9 calls (t()@, @t(), mul, silu_backward, silu, mul, cat,
          t()@, mm into a slice). A loop's first iteration costs more than the later ones: per
          pass, `first_extra` = allocation + first iteration - its calls x the later calls' mean.
  sync    (after the round, GPU idle) start event, torch.cuda._sleep(SYNC_SLEEP_US), a2a of W
          int64s, end event, .tolist(): the host's return after the end event on the GPU (both
          clocks from the start event, recorded on an idle GPU right after the host's t0); and
          the a2a_splits call right after it returned; .tolist() of the same tensor on an idle GPU.
          Also each round's first launch after the host's synchronize (`launch_after_sync_us`).
Blocks of ROUNDS rounds after WARM warm-up rounds; per block and rank the median over rounds of
every op's cost (its occurrences' mean per round), the loop's per-call cost and first extra, and
the sync readings. Per block, every rank's loop cost per call: the slowest rank over the ranks'
median is the group's pace (a collective waits for the last rank's launch).
"""
import argparse
import gc
import hashlib
import json
import os
import random
import statistics
import sys
import threading
import time

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_timing as tt  # noqa: E402

VERSION = "eager_host_bench 1.0"
BF = torch.bfloat16
ROWS, HIDDEN, FFN, COLS = 256, 256, 128, 8  # small: every kernel is a few us, the host is measured
OPS_REPEAT = 3
LOOP_ITERS = 4
LOOP_ROWS = 32
BACKLOG_US = 15000.0  # > one round's host time (~100 calls at <= 100 us)
SYNC_SLEEP_US = 300.0  # the host reaches .tolist() well before the GPU ends (host ~100 us)
OPS = ("mm", "mm_t", "cast", "softmax", "topk", "gather", "scale", "zero", "index_add", "silu", "mul", "cat",
       "a2a", "a2a_splits")


class Stamps:
    def __init__(self):
        self.labels, self.ns = [], []

    def __call__(self, label):
        self.ns.append(time.perf_counter_ns())
        self.labels.append(label)


class Tensors:
    """Inputs of every call, on this rank's GPU."""

    def __init__(self, W, r):
        g = torch.Generator(device="cuda")
        g.manual_seed(99 + r)
        rnd = lambda *s: torch.randn(*s, device="cuda", dtype=BF, generator=g)  # noqa: E731
        self.W, self.r = W, r
        self.x = rnd(ROWS, HIDDEN)
        self.w = rnd(COLS, HIDDEN)
        self.gl = rnd(ROWS, COLS)
        self.y = rnd(ROWS, COLS)
        self.p = torch.rand(ROWS, device="cuda", dtype=BF, generator=g)
        self.idx = torch.randperm(ROWS, device="cuda", generator=g)
        self.o = torch.empty(ROWS, HIDDEN, device="cuda", dtype=BF)
        self.a = rnd(ROWS, 2 * FFN)
        self.cnt = torch.arange(W, device="cuda", dtype=torch.int64)
        self.cnt_recv = torch.empty_like(self.cnt)
        # Uneven splits: rows to peer j = 8 (1 + (r + j) mod W), symmetric, so what r receives from
        # s equals what it sends to s.
        self.split = [8 * (1 + (r + j) % W) for j in range(W)]
        self.src = rnd(sum(self.split), HIDDEN)
        # The loop's MLP weights and its saved activations for the backward.
        self.w1 = rnd(HIDDEN, 2 * FFN)
        self.w2 = rnd(FFN, HIDDEN)
        self.xs = rnd(LOOP_ITERS * LOOP_ROWS, HIDDEN)


def run_op(T, name, S):
    if name == "mm":
        T.y2 = T.x @ T.w.t()
    elif name == "mm_t":
        T.dw = T.gl.t() @ T.x
    elif name == "cast":
        T.yf = T.y.float()
    elif name == "softmax":
        T.sm = torch.softmax(T.y, dim=-1)
    elif name == "topk":
        T.tv, T.ti = torch.topk(T.y, 2, dim=-1)
    elif name == "gather":
        T.gx = T.x.index_select(0, T.idx)
    elif name == "scale":
        T.sx = T.x * T.p.unsqueeze(1)
    elif name == "zero":
        T.o.zero_()
    elif name == "index_add":
        T.o.index_add_(0, T.idx, T.x)
    elif name == "silu":
        T.s1 = F.silu(T.a[:, :FFN])
    elif name == "mul":
        T.m = T.a[:, :FFN] * T.a[:, FFN:]
    elif name == "cat":
        T.c = torch.cat([T.a[:, :FFN], T.a[:, FFN:]], dim=1)
    elif name == "a2a":
        dist.all_to_all_single(T.cnt_recv, T.cnt)
    elif name == "a2a_splits":
        out = torch.empty(sum(T.split), HIDDEN, device="cuda", dtype=BF)
        dist.all_to_all_single(out, T.src, output_split_sizes=T.split, input_split_sizes=T.split)
        T.recv = out
    else:
        raise ValueError(name)
    S(name)


def loop_fwd(T, S):
    y = torch.empty_like(T.xs)
    S("fwd_alloc")
    saved = []
    o = 0
    for _ in range(LOOP_ITERS):
        xe = T.xs[o:o + LOOP_ROWS]
        a = xe @ T.w1
        S("fwd")
        s1 = F.silu(a[:, :FFN])
        S("fwd")
        h = s1 * a[:, FFN:]
        S("fwd")
        torch.mm(h, T.w2, out=y[o:o + LOOP_ROWS])
        S("fwd")
        saved.append((xe, a, h))
        o += LOOP_ROWS
    return y, saved


def loop_bwd(T, gy, saved, S):
    gx = torch.empty_like(gy)
    S("bwd_alloc")
    o = 0
    for e in range(LOOP_ITERS):
        xe, a, h = saved[e]
        ge = gy[o:o + LOOP_ROWS]
        dw2 = h.t() @ ge
        S("bwd")
        dh = ge @ T.w2.t()
        S("bwd")
        a1, a2 = a[:, :FFN], a[:, FFN:]
        t = dh * a2
        S("bwd")
        d1 = torch.ops.aten.silu_backward(t, a1)
        S("bwd")
        sa = F.silu(a1)
        S("bwd")
        m = dh * sa
        S("bwd")
        da = torch.cat([d1, m], dim=1)
        S("bwd")
        dw1 = xe.t() @ da
        S("bwd")
        torch.mm(da, T.w1.t(), out=gx[o:o + LOOP_ROWS])
        S("bwd")
        del dw1, dw2
        o += LOOP_ROWS
    return gx


def loop_costs(labels, cost, pas, per_iter):
    """(later calls' mean cost, first_extra) of one pass of the loop in a round."""
    start = labels.index(pas + "_alloc")
    calls = [cost[i] for i in range(start + 1, len(labels)) if labels[i] == pas]
    first, later = calls[:per_iter], calls[per_iter:]
    mean_later = sum(later) / len(later)
    return mean_later, cost[start] + sum(first) - per_iter * mean_later


def one_round(T, order):
    """The round's per-call host costs (label, us)."""
    S = Stamps()
    t0 = time.perf_counter_ns()
    tt.backlog(BACKLOG_US)  # the first launch after the host waited for the GPU (a synchronize)
    S("after_sync")
    for name in order:
        run_op(T, name, S)
    y, saved = loop_fwd(T, S)
    loop_bwd(T, y, saved, S)
    prev, cost = t0, []
    for ns in S.ns:
        cost.append((ns - prev) / 1000.0)
        prev = ns
    return S.labels, cost


def sync_reading(T):
    """(host return after the GPU's end of the exchange, .tolist() on an idle GPU, the a2a_splits
    call right after that .tolist() returned), us."""
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    dist.barrier()
    torch.cuda.synchronize()
    t0 = time.perf_counter_ns()
    s.record()
    tt.backlog(SYNC_SLEEP_US)
    dist.all_to_all_single(T.cnt_recv, T.cnt)
    e.record()
    T.cnt_recv.tolist()
    t1 = time.perf_counter_ns()
    out = torch.empty(sum(T.split), HIDDEN, device="cuda", dtype=BF)
    dist.all_to_all_single(out, T.src, output_split_sizes=T.split, input_split_sizes=T.split)
    after = (time.perf_counter_ns() - t1) / 1000.0
    wake = (t1 - t0) / 1000.0 - s.elapsed_time(e) * 1000.0
    torch.cuda.synchronize()
    t2 = time.perf_counter_ns()
    T.cnt_recv.tolist()
    idle = (time.perf_counter_ns() - t2) / 1000.0
    return wake, idle, after


def run_block(T, rounds, warm, seed0):
    per_op = {n: [] for n in OPS}
    loops = {"fwd": [], "fwd_first_extra": [], "bwd": [], "bwd_first_extra": []}
    syncs, idles, afters, first, round_host = [], [], [], [], []
    gc0 = sum(g["collections"] for g in gc.get_stats())
    for it in range(warm + rounds):
        order = list(OPS) * OPS_REPEAT
        random.Random(seed0 + it).shuffle(order)  # the same order on every rank
        dist.barrier()
        torch.cuda.synchronize()
        labels, cost = one_round(T, order)
        torch.cuda.synchronize()
        wake, idle, after = sync_reading(T)
        if it < warm:
            continue
        for n in OPS:
            v = [c for l, c in zip(labels, cost) if l == n]
            per_op[n].append(sum(v) / len(v))
        for pas, k in (("fwd", 4), ("bwd", 9)):
            mean_later, extra = loop_costs(labels, cost, pas, k)
            loops[pas].append(mean_later)
            loops[pas + "_first_extra"].append(extra)
        syncs.append(wake)
        idles.append(idle)
        afters.append(after)
        first.append(cost[0])
        round_host.append(sum(cost))
    med = lambda v: round(statistics.median(v), 3)  # noqa: E731
    return {"rounds": rounds, "op_us": {n: med(v) for n, v in per_op.items()},
            "op_us_spread": {n: [round(min(v), 2), round(max(v), 2)] for n, v in per_op.items()},
            "loop_us": {k: med(v) for k, v in loops.items()},
            "sync_us": med(syncs), "tolist_idle_us": med(idles),
            "a2a_splits_after_tolist_us": med(afters), "launch_after_sync_us": med(first),
            "round_host_us": med(round_host),
            "gc_collections": sum(g["collections"] for g in gc.get_stats()) - gc0}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--blocks", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--warm", type=int, default=3)
    ap.add_argument("--tag", default="", help="a name for this run in the file")
    ap.add_argument("--append", action="store_true", help="add this run to OUT's runs instead of replacing it")
    a = ap.parse_args()
    t0 = time.perf_counter()
    dist.init_process_group("nccl")
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local_rank)
    W, rank = dist.get_world_size(), dist.get_rank()
    tt.cycles_per_us()
    T = Tensors(W, rank)
    info = [None] * W
    aff = sorted(os.sched_getaffinity(0))
    dist.all_gather_object(info, {"rank": rank, "local_rank": local_rank, "pid": os.getpid(),
                                  "tid": threading.get_native_id(),
                                  "affinity": "%d CPUs %d..%d" % (len(aff), aff[0], aff[-1])})
    run = None
    if rank == 0:
        meta = tt.provenance("calibration/microbench/eager_host_bench.py", VERSION)
        meta["world_size"] = W
        meta["nccl"] = ".".join(str(v) for v in torch.cuda.nccl.version())
        meta["env"] = {k: v for k, v in os.environ.items() if k.startswith(("NCCL_", "TORCH_", "OMP_", "CUDA_"))}
        meta["nvidia_smi_before"] = tt.nvsmi("clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active")
        meta["ranks"] = info
        sha = {}
        for f in ("eager_host_bench.py", "torch_timing.py"):
            try:
                with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), f), "rb") as fh:
                    sha[f] = hashlib.sha256(fh.read()).hexdigest()
            except Exception as ex:  # noqa: BLE001
                sha[f] = "unreadable: %r" % ex
        meta["script_sha256"] = sha
        try:
            meta["cpu_model"] = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                                     if l.startswith("model name"))
            meta["cpus_online"] = os.cpu_count()
            meta["loadavg_before"] = open("/proc/loadavg").read().strip()
        except Exception as ex:  # noqa: BLE001
            meta["cpu_model"] = repr(ex)
        meta["setup"] = {"rows": ROWS, "hidden": HIDDEN, "ffn": FFN, "cols": COLS, "ops_repeat": OPS_REPEAT,
                         "loop_iters": LOOP_ITERS, "loop_rows": LOOP_ROWS, "backlog_us": BACKLOG_US,
                         "sync_sleep_us": SYNC_SLEEP_US, "blocks": a.blocks, "rounds": a.rounds,
                         "warm": a.warm, "ops": list(OPS)}
        run = {"tag": a.tag, "meta": meta, "blocks": []}
        docs = []
        if a.append and os.path.exists(a.out):
            try:
                with open(a.out) as f:
                    docs = json.load(f).get("runs", [])
            except Exception as ex:  # noqa: BLE001
                print("cannot read %s to append (%r): starting it anew" % (a.out, ex), flush=True)
        docs.append(run)

    def write():
        if rank == 0:
            run["elapsed_s"] = time.perf_counter() - t0
            text = json.dumps({"schema": "gcsim.eager_host_bench.v1", "runs": docs}, indent=1)
            with open(a.out, "w") as f:
                f.write(text)

    for b in range(a.blocks):
        try:
            mine = run_block(T, a.rounds, a.warm if b == 0 else 1, 1000 * (b + 1))
        except Exception as ex:  # noqa: BLE001
            mine = {"error": repr(ex)}
            print("rank %d block %d failed: %r" % (rank, b, ex), flush=True)
            try:
                torch.cuda.synchronize()
            except Exception:  # noqa: BLE001
                pass
        mine["rank"] = rank
        allr = [None] * W
        dist.all_gather_object(allr, mine)
        if rank == 0:
            run["blocks"].append({"per_rank": allr})
            ok = [p for p in allr if "error" not in p]
            if ok:
                print("block %d: per rank loop us/call fwd %s bwd %s; a2a_splits %s; sync %s; mm %s" % (
                    b, [p["loop_us"]["fwd"] for p in ok], [p["loop_us"]["bwd"] for p in ok],
                    [p["op_us"]["a2a_splits"] for p in ok], [p["sync_us"] for p in ok],
                    [p["op_us"]["mm"] for p in ok]), flush=True)
            write()
    if rank == 0:
        run["meta"]["nvidia_smi_after"] = tt.nvsmi("clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active")
        try:
            run["meta"]["loadavg_after"] = open("/proc/loadavg").read().strip()
        except Exception as ex:  # noqa: BLE001
            run["meta"]["loadavg_after"] = repr(ex)
        write()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
