#!/usr/bin/env python3
"""An expert-parallel (EP) MoE layer on real GPUs with NCCL, phase by phase: the measurement gcsim's
`moe` graph op is checked against (tests/scenario/test_moe_measured.cpp).

    torchrun --nproc_per_node 2 calibration/microbench/moe_ep_bench.py -o OUT.json [--budget-s 120]

The layer (Megatron-LM's "alltoall" token dispatcher with SequentialMLP experts, bf16):
  forward   router   logits = x W_r^T (W_r: E x H), softmax, top-k
            permute  the k copies of each token gathered into expert order (index_select)
            counts   per-expert token counts exchanged (all_to_all_single of int64), read on the host
            dispatch all_to_all_single of the permuted tokens, uneven splits from the counts
            sort     received chunks regrouped from (source, expert) to (expert, source) order
            experts  per local expert e with n_e tokens: a = x_e W1_e (H -> 2F), h = silu(a1)*a2,
                     y_e = h W2_e (F -> H)  (SwiGLU, one cuBLAS GEMM pair per expert)
            unsort   back to (source, expert) order
            combine  all_to_all_single back, splits transposed
            unpermute  weighted sum of the k copies into each token (mul + index_add_)
  backward  the same phases in reverse: gather of the output gradient (permute_bwd), combine_bwd
            (dispatch splits), sort, expert backward per expert (dgrad and wgrad of both GEMMs and
            the SwiGLU backward), unsort, dispatch_bwd (combine splits), index_add_ (unpermute_bwd),
            router backward (two small GEMMs).
Routing is prescribed, not learned, so gcsim can be given the same counts: every source rank sends
expert e exactly n_e = zipf_counts(T, k, E, skew)[e] token copies (hot experts by index, expert 0
hottest, experts [r*E/W, (r+1)*E/W) on rank r, so rank 0 is the hot receiver). Token copy j of the
expert-sorted list comes from token perm[j mod T] (perm a seeded permutation): each token gets k
distinct experts because no expert takes more than T copies.

Timing: CUDA events between phases on each rank; before each all-to-all a 1-element all_reduce
("sync_*", its own phase) aligns the two GPUs so dispatch/combine time the transfer itself, and the
cold rank's sync_combine is the time it waits for the hot rank's experts. After the host reads
the counts a torch.cuda._sleep backlog (outside every phase) keeps the GPU from waiting on Python.
Reported per phase: the median over iterations, per rank. Also `plain_us`: the whole pass without
syncs or phase events (one event pair per iteration), the median, per rank.
Capacity (--capacity, version 1.2): per point and mode, the copies each source sends expert e
become min(n_e, C) (dropping, GShard/Switch) or C (Megatron's padding to capacity), C =
ceil(CF * T * k / E); `expert_tokens_per_source` keeps the routed counts, `sent_tokens_per_source`
what was sent and computed.
A torch.profiler per-kernel summary is taken for the --profile points (dropless only).
Host side (--host-timing, version 1.1; `host_pass_us_per_rank`, every rank's pass, and
`host_us_rank0`, rank 0's phases): the host's own time per phase (time.perf_counter
around each phase's Python call, no syncs, no events), with the GPU back-logged (torch.cuda._sleep
before the backward and after the counts' .tolist()) so that no launch waits for the GPU: what
each phase costs the host to issue. The forward's `counts` phase also holds the .tolist() wait for
the router, permute and counts exchange queued before it on an idle GPU.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_timing as tt  # noqa: E402

VERSION = "moe_ep_bench 1.2"
HOST_BACKLOG_US = 20000.0  # covers the host issuing a whole pass (~100 launches at <= 100 us)
BF = torch.bfloat16


def zipf_counts(tokens, top_k, experts, skew):
    """Token copies per expert (one source rank): share_e ∝ 1/(e+1)^skew of tokens*top_k, no
    expert above `tokens` (the excess water-filled over the others in proportion to their shares),
    rounded by largest remainder (ties to the lower index) so they sum to tokens*top_k exactly.
    gcsim's workloads/moe/moe_routing.cpp computes the same."""
    total = tokens * top_k
    w = [1.0 / (e + 1.0) ** skew for e in range(experts)]
    ideal = [0.0] * experts
    capped = [False] * experts
    left = float(total)
    while True:
        free = sum(w[e] for e in range(experts) if not capped[e])
        changed = False
        for e in range(experts):
            if not capped[e]:
                ideal[e] = left * w[e] / free
        for e in range(experts):
            if not capped[e] and ideal[e] > tokens:
                capped[e] = True
                ideal[e] = float(tokens)
                left -= tokens
                changed = True
        if not changed:
            break
    base = [int(v) for v in ideal]
    rest = total - sum(base)
    order = sorted(range(experts), key=lambda e: (-(ideal[e] - base[e]), e))
    for e in order[:rest]:
        base[e] += 1
    return base


def capacity_counts(counts, tokens, top_k, experts, factor, pad):
    """GShard/Switch capacity per expert and source, C = ceil(factor * tokens * top_k / experts):
    copies above C are dropped (never sent or computed); with `pad` every expert gets exactly C rows
    from each source (the real copies and zero padding, sent and computed alike), as Megatron's
    --moe-pad-expert-input-to-capacity runs it. factor 0: dropless, the counts unchanged. gcsim's
    workloads/moe/moe_routing.cpp applies the same rule to the same counts."""
    if factor <= 0:
        return list(counts)
    cap = int(math.ceil(factor * tokens * top_k / experts))
    return [cap] * experts if pad else [min(c, cap) for c in counts]


def start():
    dist.init_process_group("nccl")
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))


class Layer:
    """Weights and buffers of one EP MoE layer on this rank for one point."""

    def __init__(self, tokens, hidden, ffn, experts, top_k, counts):
        self.W = dist.get_world_size()
        self.r = dist.get_rank()
        self.T, self.H, self.F, self.E, self.k = tokens, hidden, ffn, experts, top_k
        self.L = experts // self.W
        g = torch.Generator(device="cuda")
        g.manual_seed(1234 + self.r)
        rnd = lambda *s: torch.randn(*s, device="cuda", dtype=BF, generator=g) * s[-1] ** -0.5  # noqa: E731
        self.x = rnd(tokens, hidden)
        self.gy = rnd(tokens, hidden)
        self.dlogits = rnd(tokens, experts)
        self.wr = rnd(experts, hidden)
        self.w1 = [rnd(hidden, 2 * ffn) for _ in range(self.L)]
        self.w2 = [rnd(ffn, hidden) for _ in range(self.L)]
        self.counts = counts  # this rank's copies to every expert (same on every source rank)
        perm = torch.randperm(tokens, device="cuda", generator=g)
        self.idx = perm[torch.arange(sum(counts), device="cuda") % tokens]
        self.probs = torch.rand(len(self.idx), device="cuda", dtype=BF, generator=g)
        self.send_split = [sum(counts[j * self.L:(j + 1) * self.L]) for j in range(self.W)]
        self.counts_dev = torch.tensor(counts, device="cuda", dtype=torch.int64)
        self.counts_recv = torch.empty_like(self.counts_dev)
        self.recv_counts = None  # [source][local expert], host, after the counts exchange
        self.out = torch.empty(tokens, hidden, device="cuda", dtype=BF)
        self.one = torch.zeros(1, device="cuda")
        # Backward state (activations kept from forward).
        self.saved = None

    def sync(self):
        dist.all_reduce(self.one)

    def router(self):
        logits = self.x @ self.wr.t()
        p = torch.softmax(logits.float(), dim=-1)
        self.topv, self.topi = torch.topk(p, self.k, dim=-1)

    def permute(self):
        self.sendbuf = self.x.index_select(0, self.idx)

    def exchange_counts(self):
        dist.all_to_all_single(self.counts_recv, self.counts_dev)
        c = self.counts_recv.tolist()  # host sync, as Megatron's dispatcher does
        # all_to_all_single of a [E] tensor: rank j receives, from each source s, the s-th chunk of
        # E/W entries of s's tensor = s's counts to j's local experts.
        self.recv_counts = [c[s * self.L:(s + 1) * self.L] for s in range(self.W)]
        self.recv_split = [sum(v) for v in self.recv_counts]
        # sort: (source, expert) -> (expert, source); index built on the host once per point
        if not hasattr(self, "sort_idx"):
            off, src_off = [], 0
            for s in range(self.W):
                o = src_off
                row = []
                for e in range(self.L):
                    row.append(o)
                    o += self.recv_counts[s][e]
                off.append(row)
                src_off = o
            order = []
            for e in range(self.L):
                for s in range(self.W):
                    order.extend(range(off[s][e], off[s][e] + self.recv_counts[s][e]))
            self.sort_idx = torch.tensor(order, device="cuda", dtype=torch.int64)
            self.unsort_idx = torch.empty_like(self.sort_idx)
            self.unsort_idx[self.sort_idx] = torch.arange(len(order), device="cuda")
            self.per_expert = [sum(self.recv_counts[s][e] for s in range(self.W)) for e in range(self.L)]

    def dispatch(self, src, send_split, recv_split):
        out = torch.empty(sum(recv_split), self.H, device="cuda", dtype=BF)
        dist.all_to_all_single(out, src, output_split_sizes=recv_split, input_split_sizes=send_split)
        return out

    def experts_fwd(self, xs):
        y = torch.empty_like(xs)
        saved = []
        o = 0
        for e in range(self.L):
            n = self.per_expert[e]
            if n == 0:
                saved.append(None)
                continue
            xe = xs[o:o + n]
            a = xe @ self.w1[e]
            h = F.silu(a[:, :self.F]) * a[:, self.F:]
            torch.mm(h, self.w2[e], out=y[o:o + n])
            saved.append((xe, a, h))
            o += n
        return y, saved

    def experts_bwd(self, gy, saved):
        gx = torch.empty_like(gy)
        o = 0
        for e in range(self.L):
            n = self.per_expert[e]
            if n == 0:
                continue
            xe, a, h = saved[e]
            ge = gy[o:o + n]
            dw2 = h.t() @ ge  # wgrad fc2
            dh = ge @ self.w2[e].t()  # dgrad fc2
            a1, a2 = a[:, :self.F], a[:, self.F:]
            # SwiGLU backward, eager: 5 kernels moving 15 n*F elements (mul r2w1, silu_backward
            # r2w1, silu r1w1, mul r2w1, cat r2w2)
            d1 = torch.ops.aten.silu_backward(dh * a2, a1)
            da = torch.cat([d1, dh * F.silu(a1)], dim=1)
            dw1 = xe.t() @ da  # wgrad fc1
            torch.mm(da, self.w1[e].t(), out=gx[o:o + n])  # dgrad fc1
            del dw1, dw2
            o += n
        return gx

    def unpermute(self, comb):
        self.out.zero_()
        self.out.index_add_(0, self.idx, comb * self.probs.unsqueeze(1))

    def fwd_phases(self):
        """[(phase, callable)] of one forward pass; callables share state through self."""
        st = {}
        ph = [("router", self.router), ("permute", self.permute), ("counts", self.exchange_counts),
              ("BACKLOG", None), ("sync_dispatch", self.sync),
              ("dispatch", lambda: st.__setitem__("recv", self.dispatch(self.sendbuf, self.send_split, self.recv_split))),
              ("sort", lambda: st.__setitem__("xs", st["recv"].index_select(0, self.sort_idx))),
              ("experts", lambda: st.update(zip(("ys", "saved"), self.experts_fwd(st["xs"])))),
              ("unsort", lambda: st.__setitem__("yu", st["ys"].index_select(0, self.unsort_idx))),
              ("sync_combine", self.sync),
              ("combine", lambda: st.__setitem__("comb", self.dispatch(st["yu"], self.recv_split, self.send_split))),
              ("unpermute", lambda: self.unpermute(st["comb"]))]
        self.fwd_state = st
        return ph

    def bwd_phases(self):
        st = {}
        fs = self.fwd_state

        def router_bwd():  # the softmax/top-k backward is left out; the two GEMMs of W_r
            st["dx_r"] = self.dlogits @ self.wr
            st["dwr"] = self.dlogits.t() @ self.x

        ph = [("permute_bwd", lambda: st.__setitem__("g", (self.gy.index_select(0, self.idx) * self.probs.unsqueeze(1)))),
              ("sync_combine_bwd", self.sync),
              ("combine_bwd", lambda: st.__setitem__("grecv", self.dispatch(st["g"], self.send_split, self.recv_split))),
              ("sort_bwd", lambda: st.__setitem__("gs", st["grecv"].index_select(0, self.sort_idx))),
              ("experts_bwd", lambda: st.__setitem__("gx", self.experts_bwd(st["gs"], fs["saved"]))),
              ("unsort_bwd", lambda: st.__setitem__("gu", st["gx"].index_select(0, self.unsort_idx))),
              ("sync_dispatch_bwd", self.sync),
              ("dispatch_bwd", lambda: st.__setitem__("gc", self.dispatch(st["gu"], self.recv_split, self.send_split))),
              ("unpermute_bwd", lambda: self.out.zero_().index_add_(0, self.idx, st["gc"])),
              ("router_bwd", router_bwd)]
        return ph


def run_phases(phases):
    """Runs the phases with an event between each; returns the events and names (BACKLOG excluded)."""
    names, evs = [], []
    for name, fn in phases:
        if name == "BACKLOG":
            tt.backlog(300)
            continue
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        names.append(name)
        evs.append((s, e))
    return names, evs


def measure_point(layer, iters, warm):
    """Per-phase medians (us) of fwd and bwd over `iters` iterations, and plain (un-instrumented)
    pass times."""
    rec = {"fwd": {}, "bwd": {}}
    samples = {"fwd": {}, "bwd": {}}
    for it in range(warm + iters):
        for pas, mk in (("fwd", layer.fwd_phases), ("bwd", layer.bwd_phases)):
            names, evs = run_phases(mk())
            torch.cuda.synchronize()
            if it >= warm:
                for n, (s, e) in zip(names, evs):
                    samples[pas].setdefault(n, []).append(s.elapsed_time(e) * 1000.0)
    for pas in ("fwd", "bwd"):
        rec[pas] = {n: statistics.median(v) for n, v in samples[pas].items()}
    # Plain passes: no syncs, no phase events, no backlog (the GPU waits while the host reads the
    # counts and enqueues the rest, as in a real step).
    for pas in ("fwd", "bwd", "fwd_bwd"):
        times = []
        for it in range(warm + iters):
            dist.barrier()
            torch.cuda.synchronize()
            if pas == "bwd":  # the forward whose activations the backward uses, untimed
                for name, fn in layer.fwd_phases():
                    if fn is not None and not name.startswith("sync"):
                        fn()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            if pas in ("fwd", "fwd_bwd"):
                for name, fn in layer.fwd_phases():
                    if fn is not None and not name.startswith("sync"):
                        fn()
            if pas in ("bwd", "fwd_bwd"):
                for name, fn in layer.bwd_phases():
                    if not name.startswith("sync"):
                        fn()
            e.record()
            torch.cuda.synchronize()
            if it >= warm:
                times.append(s.elapsed_time(e) * 1000.0)
        rec["plain_" + pas + "_us"] = statistics.median(times)
    return rec


def host_times(layer, iters, warm):
    """Host µs per phase (median over iterations) and per pass (median of the sums), the GPU
    back-logged so the host never waits for it except at the counts' .tolist()."""
    samples = {"fwd": {}, "bwd": {}}
    totals = {"fwd": [], "bwd": []}
    for it in range(warm + iters):
        for pas, mk in (("fwd", layer.fwd_phases), ("bwd", layer.bwd_phases)):
            dist.barrier()
            torch.cuda.synchronize()
            if pas == "bwd":
                tt.backlog(HOST_BACKLOG_US)
            total = 0.0
            for name, fn in mk():
                if name.startswith("sync"):
                    continue
                if name == "BACKLOG":
                    tt.backlog(HOST_BACKLOG_US)
                    continue
                t0 = time.perf_counter()
                fn()
                dt = (time.perf_counter() - t0) * 1e6
                total += dt
                if it >= warm:
                    samples[pas].setdefault(name, []).append(dt)
            if it >= warm:
                totals[pas].append(total)
            torch.cuda.synchronize()
    out = {pas: {n: statistics.median(v) for n, v in samples[pas].items()} for pas in samples}
    for pas in totals:
        out[pas + "_total"] = statistics.median(totals[pas])
    return out


def kernel_summary(layer):
    from torch.profiler import ProfilerActivity, profile
    for _ in range(2):
        for pas in (layer.fwd_phases, layer.bwd_phases):
            run_phases(pas())
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            for pas in (layer.fwd_phases, layer.bwd_phases):
                run_phases(pas())
        torch.cuda.synchronize()
    rows = []
    for ev in prof.key_averages():
        dev = getattr(ev, "device_time_total", None)
        if dev is None:
            dev = getattr(ev, "cuda_time_total", 0)
        if dev and ev.count:
            rows.append({"name": ev.key[:160], "count": ev.count, "total_us": dev / 3.0,
                         "avg_us": dev / ev.count})
    rows.sort(key=lambda r: -r["total_us"])
    return rows[:60]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--budget-s", type=float, default=120.0, help="stop starting new points after this")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="two small points only (a smoke test)")
    ap.add_argument("--shapes", default="2048:1408:8:2,4096:2048:16:2",
                    help="hidden:expert_ffn:experts:top_k, comma-separated")
    ap.add_argument("--tokens", default="4096,16384,32768", help="tokens per rank, comma-separated")
    ap.add_argument("--skews", default="0,0.8,1.5", help="Zipf skews, comma-separated")
    ap.add_argument("--profile", default="4096:2048:16:2/16384/1.5",
                    help="points (shape/tokens/skew, comma-separated) whose kernels torch.profiler lists")
    ap.add_argument("--capacity", default="0",
                    help="capacity modes per point, comma-separated: 0 (dropless), CF (drop above "
                         "capacity factor CF) or CF:pad (pad every expert to it)")
    ap.add_argument("--host-timing", action="store_true",
                    help="also time the host's issue of each phase (host_us_per_rank)")
    a = ap.parse_args()
    t0 = time.perf_counter()
    start()
    W = dist.get_world_size()
    rank = dist.get_rank()
    # (hidden, expert ffn, experts, top_k): two layer shapes, 4 and 8 experts per rank on 2 GPUs.
    parse_shape = lambda txt: tuple(int(v) for v in txt.split(":"))  # noqa: E731
    shapes = [parse_shape(x) for x in a.shapes.split(",")]
    tokens = [int(x) for x in a.tokens.split(",")]
    skews = [float(x) for x in a.skews.split(",")]
    caps = [(float(x.split(":")[0]), x.endswith(":pad")) for x in a.capacity.split(",")]
    points = [(s, t, z, c) for s in shapes for t in tokens for z in skews for c in caps]
    if a.quick:
        points = [(shapes[0], 4096, 0.0, caps[0]), (shapes[0], 4096, 1.5, caps[0])]
    profile_points = set()
    for x in filter(None, a.profile.split(",")):
        sh, t, z = x.split("/")
        profile_points.add((parse_shape(sh), int(t), float(z)))
    meta = None
    if rank == 0:
        meta = tt.provenance("calibration/microbench/moe_ep_bench.py", VERSION)
        meta["world_size"] = W
        meta["nccl"] = ".".join(str(v) for v in torch.cuda.nccl.version())
        meta["env"] = {k: v for k, v in os.environ.items() if k.startswith("NCCL_") or k.startswith("TORCH_")}
        meta["nvidia_smi_before"] = tt.nvsmi("clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active")
        try:
            import hashlib
            with open(os.path.abspath(__file__), "rb") as f:
                meta["script_sha256"] = hashlib.sha256(f.read()).hexdigest()
        except Exception as ex:  # noqa: BLE001
            meta["script_sha256"] = "unreadable: %r" % ex
        meta["layer"] = ("Megatron alltoall dispatcher, SequentialMLP SwiGLU experts (2 cuBLAS GEMMs per "
                         "expert fwd, 4 bwd), bf16, experts [r*E/W,(r+1)*E/W) on rank r, hot experts by index")
    results = []
    profile_rows = []

    def write():
        if rank == 0:
            doc = {"schema": "gcsim.microbench.v1", "meta": meta, "results": results,
                   "kernel_profile": profile_rows, "elapsed_s": time.perf_counter() - t0}
            text = json.dumps(doc, indent=1)  # serialised first: the file is open only briefly
            with open(a.out, "w") as f:
                f.write(text)

    for (H, Fh, E, k), T, skew, (cf, pad) in points:
        go = torch.tensor([1.0 if time.perf_counter() - t0 < a.budget_s else 0.0], device="cuda")
        dist.all_reduce(go, op=dist.ReduceOp.MIN)
        if go.item() == 0.0:
            if rank == 0:
                print("budget reached: skipping the remaining points", flush=True)
            break
        name = "h%d_f%d_e%d_k%d_t%d_s%.1f" % (H, Fh, E, k, T, skew)
        if cf > 0:
            name += "_cf%g%s" % (cf, "pad" if pad else "")
        routed = zipf_counts(T, k, E, skew)
        counts = capacity_counts(routed, T, k, E, cf, pad)
        rec = {"name": name, "hidden": H, "expert_ffn": Fh, "experts": E, "top_k": k, "tokens_per_rank": T,
               "skew": skew, "ranks": W, "expert_tokens_per_source": routed}
        if cf > 0:
            rec.update(capacity_factor=cf, pad_to_capacity=pad, sent_tokens_per_source=counts)
        try:
            layer = Layer(T, H, Fh, E, k, counts)
            t1 = time.perf_counter()
            m = measure_point(layer, a.iters, 2)
            mine = torch.tensor([m["plain_fwd_us"], m["plain_bwd_us"], m["plain_fwd_bwd_us"]],
                                device="cuda", dtype=torch.float64)
            allp = [torch.zeros_like(mine) for _ in range(W)]
            dist.all_gather(allp, mine)
            ph = {}
            for pas in ("fwd", "bwd"):
                names = sorted(m[pas])
                v = torch.tensor([m[pas][n] for n in names], device="cuda", dtype=torch.float64)
                gathered = [torch.zeros_like(v) for _ in range(W)]
                dist.all_gather(gathered, v)
                ph[pas] = [{n: gathered[r][i].item() for i, n in enumerate(names)} for r in range(W)]
            rec["phases_us_per_rank"] = ph
            rec["plain_us_per_rank"] = [{"fwd": p[0].item(), "bwd": p[1].item(), "fwd_bwd": p[2].item()} for p in allp]
            rec["received_per_local_expert"] = layer.per_expert
            rec["iters"] = a.iters
            if a.host_timing:
                try:
                    ht = host_times(layer, max(5, a.iters // 2), 2)
                    hv = torch.tensor([ht["fwd_total"], ht["bwd_total"]], device="cuda", dtype=torch.float64)
                    hall = [torch.zeros_like(hv) for _ in range(W)]
                    dist.all_gather(hall, hv)
                    rec["host_pass_us_per_rank"] = [{"fwd": h[0].item(), "bwd": h[1].item()} for h in hall]
                    if rank == 0:  # rank 0's phases (every rank issues the same ops)
                        rec["host_us_rank0"] = {"fwd": ht["fwd"], "bwd": ht["bwd"]}
                except Exception as ex:  # noqa: BLE001
                    rec["host_error"] = repr(ex)
                    print("rank %d %s host timing failed: %r" % (rank, name, ex), flush=True)
            rec["point_s"] = time.perf_counter() - t1
            if rank == 0:
                f0, f1 = ph["fwd"][0], ph["fwd"][1]
                print("%s: fwd plain %.0f/%.0f us, bwd plain %.0f/%.0f us; r0 dispatch %.0f experts %.0f combine %.0f; "
                      "r1 experts %.0f sync_combine %.0f (%.1fs)" % (
                          name, allp[0][0].item(), allp[1][0].item(), allp[0][1].item(), allp[1][1].item(),
                          f0["dispatch"], f0["experts"], f0["combine"], f1["experts"], f1["sync_combine"],
                          rec["point_s"]), flush=True)
            if ((H, Fh, E, k), T, skew) in profile_points and cf == 0:
                try:
                    rows = kernel_summary(layer)
                    if rank == 0:
                        profile_rows.append({"point": name, "per": "one instrumented fwd+bwd pass (3 profiled, "
                                             "divided by 3), rank 0", "kernels": rows})
                except Exception as ex:  # noqa: BLE001
                    profile_rows.append({"point": name, "error": repr(ex)})
            del layer
            torch.cuda.empty_cache()
        except Exception as ex:  # noqa: BLE001
            rec["error"] = repr(ex)
            print("rank %d %s failed: %r" % (rank, name, ex), flush=True)
            torch.cuda.empty_cache()
        results.append(rec)
        write()
    if rank == 0:
        meta["nvidia_smi_after"] = tt.nvsmi("clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active")
    write()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
