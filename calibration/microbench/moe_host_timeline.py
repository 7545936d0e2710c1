#!/usr/bin/env python3
"""Where the eager EP MoE layer's time goes on each rank: the host's own timeline of every Python
call (time.perf_counter_ns after each call that launches GPU work or waits for it) in the
un-instrumented pass that gcsim is compared with, beside CUDA events after the same calls (gcsim
issue 22, the 4-H100 host-bound points).

    torchrun --nproc_per_node 4 calibration/microbench/moe_host_timeline.py -o OUT.json [--budget-s 125]

The layer is calibration/microbench/moe_ep_bench.py's (Megatron's alltoall dispatcher with
SequentialMLP SwiGLU experts, bf16, prescribed Zipf routing, rank 0 hot), its phases written out
call by call here so that each launch and the counts' `.tolist()` get a stamp. One round is what
moe_ep_bench.py's plain passes time: barrier, synchronize, start event, forward (its `.tolist()`
waits for the router, permute and counts exchange), end event, start event, backward (the host
ahead of the GPU by whatever the forward left it), end event, synchronize.

Blocks of rounds per point, each after two warm-up rounds:
  plain    host stamps only (a stamp is one perf_counter_ns and a list append, ~0.2 us)
  events   the same plus a CUDA event recorded after each call: the GPU's timeline (when each
           call's work ended, from the pass's start event), to set beside the host's
  backlog  moe_ep_bench.py --host-timing's method (torch.cuda._sleep after the counts' .tolist()
           and before the backward, so no launch waits for the GPU): the host's issue cost per
           call when the GPU is back-logged, the reading cluster.host: h100 was taken from
each with the rank's main thread free to run on any CPU (`U`, as torchrun starts it) and pinned
to one physical core of its GPU's NUMA node, a different one per rank (`P`); a last `plain U`
block repeats the first to show drift within the point. Every block records per rank the CPUs
the main thread ran on (from /proc/thread-self/stat), their clock where the kernel reports it,
and how many times Python's garbage collector ran.

Per block and rank: every round's forward and backward time (CUDA events, us), the host's end of
issue of each pass, and per call (labels in order) the median over rounds of the host stamp and
of the host time since the previous stamp; in `events` blocks also the median GPU time of each
stamp's event since the pass's start event.
"""
import argparse
import gc
import hashlib
import json
import os
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
from moe_ep_bench import BF, Layer, start, zipf_counts  # noqa: E402

VERSION = "moe_host_timeline 1.0"
BACKLOG_US = 8000.0  # > the host's issue of one pass (at most ~3.7 ms in moe_ep_bench's h100-x4 host timings)
EVENT_POOL = 400     # events per round at most (32 experts top-4: ~130 stamps)


class Stamps:
    """perf_counter_ns after each call; in `events` mode also a CUDA event recorded there."""

    def __init__(self, pool=None):
        self.pool = pool
        self.labels, self.ns = [], []

    def __call__(self, label):
        self.ns.append(time.perf_counter_ns())
        if self.pool is not None:
            self.pool[len(self.labels)].record()
        self.labels.append(label)


def fwd(L, S, backlog):
    """The bench's forward (Layer.fwd_phases without syncs or phase events), one stamp per call."""
    logits = L.x @ L.wr.t()
    S("router_mm")
    lf = logits.float()
    S("router_float")
    p = torch.softmax(lf, dim=-1)
    S("router_softmax")
    L.topv, L.topi = torch.topk(p, L.k, dim=-1)
    S("router_topk")
    sendbuf = L.x.index_select(0, L.idx)
    S("permute")
    dist.all_to_all_single(L.counts_recv, L.counts_dev)
    S("counts_a2a")
    c = L.counts_recv.tolist()  # the host waits for the GPU here
    S("counts_tolist")
    recv_counts = [c[s * L.L:(s + 1) * L.L] for s in range(L.W)]
    recv_split = [sum(v) for v in recv_counts]
    if backlog:
        tt.backlog(BACKLOG_US)
        S("backlog")
    recv = torch.empty(sum(recv_split), L.H, device="cuda", dtype=BF)
    dist.all_to_all_single(recv, sendbuf, output_split_sizes=recv_split, input_split_sizes=L.send_split)
    S("dispatch")
    xs = recv.index_select(0, L.sort_idx)
    S("sort")
    y = torch.empty_like(xs)
    S("experts_alloc")
    saved = []
    o = 0
    for e in range(L.L):
        n = L.per_expert[e]
        if n == 0:
            saved.append(None)
            continue
        xe = xs[o:o + n]
        a = xe @ L.w1[e]
        S("fc1")
        s1 = F.silu(a[:, :L.F])
        S("silu")
        h = s1 * a[:, L.F:]
        S("mul")
        torch.mm(h, L.w2[e], out=y[o:o + n])
        S("fc2")
        saved.append((xe, a, h))
        o += n
    yu = y.index_select(0, L.unsort_idx)
    S("unsort")
    comb = torch.empty(sum(L.send_split), L.H, device="cuda", dtype=BF)
    dist.all_to_all_single(comb, yu, output_split_sizes=L.send_split, input_split_sizes=recv_split)
    S("combine")
    L.out.zero_()
    S("unpermute_zero")
    w = comb * L.probs.unsqueeze(1)
    S("unpermute_mul")
    L.out.index_add_(0, L.idx, w)
    S("unpermute_index_add")
    return saved, recv_split


def bwd(L, saved, recv_split, S):
    """The bench's backward (Layer.bwd_phases without syncs), one stamp per call."""
    g0 = L.gy.index_select(0, L.idx)
    S("permute_bwd_gather")
    g = g0 * L.probs.unsqueeze(1)
    S("permute_bwd_scale")
    grecv = torch.empty(sum(recv_split), L.H, device="cuda", dtype=BF)
    dist.all_to_all_single(grecv, g, output_split_sizes=recv_split, input_split_sizes=L.send_split)
    S("combine_bwd")
    gs = grecv.index_select(0, L.sort_idx)
    S("sort_bwd")
    gx = torch.empty_like(gs)
    S("experts_bwd_alloc")
    o = 0
    for e in range(L.L):
        n = L.per_expert[e]
        if n == 0:
            continue
        xe, a, h = saved[e]
        ge = gs[o:o + n]
        dw2 = h.t() @ ge
        S("wgrad_fc2")
        dh = ge @ L.w2[e].t()
        S("dgrad_fc2")
        a1, a2 = a[:, :L.F], a[:, L.F:]
        t = dh * a2
        S("bwd_mul")
        d1 = torch.ops.aten.silu_backward(t, a1)
        S("silu_backward")
        sa = F.silu(a1)
        S("bwd_silu")
        m = dh * sa
        S("bwd_mul2")
        da = torch.cat([d1, m], dim=1)
        S("cat")
        dw1 = xe.t() @ da
        S("wgrad_fc1")
        torch.mm(da, L.w1[e].t(), out=gx[o:o + n])
        S("dgrad_fc1")
        del dw1, dw2
        o += n
    gu = gx.index_select(0, L.unsort_idx)
    S("unsort_bwd")
    gc_ = torch.empty(sum(L.send_split), L.H, device="cuda", dtype=BF)
    dist.all_to_all_single(gc_, gu, output_split_sizes=L.send_split, input_split_sizes=recv_split)
    S("dispatch_bwd")
    L.out.zero_()
    S("unpermute_bwd_zero")
    L.out.index_add_(0, L.idx, gc_)
    S("unpermute_bwd_index_add")
    L.dx_r = L.dlogits @ L.wr
    S("router_bwd_dgrad")
    L.dwr = L.dlogits.t() @ L.x
    S("router_bwd_wgrad")


def thread_cpu():
    """The CPU the calling thread last ran on (field 39 of /proc/thread-self/stat)."""
    try:
        st = open("/proc/thread-self/stat").read()
        return int(st[st.rfind(")") + 2:].split()[36])
    except Exception:  # noqa: BLE001
        return -1


def cpu_mhz(cpu):
    try:
        return int(open("/sys/devices/system/cpu/cpu%d/cpufreq/scaling_cur_freq" % cpu).read()) / 1000.0
    except Exception:  # noqa: BLE001
        pass
    try:
        cur = None
        for line in open("/proc/cpuinfo"):
            if line.startswith("processor"):
                cur = int(line.split(":")[1])
            elif line.startswith("cpu MHz") and cur == cpu:
                return float(line.split(":")[1])
    except Exception:  # noqa: BLE001
        pass
    return None


def parse_cpulist(txt):
    out = []
    for part in txt.strip().split(","):
        if "-" in part:
            a, b = part.split("-")
            out += list(range(int(a), int(b) + 1))
        elif part.strip():
            out.append(int(part))
    return out


def pick_core(local_rank):
    """One CPU per physical core of this GPU's NUMA node (first hyperthread), skipping CPU 0, the
    (1 + local_rank)-th: ranks that share a node get different cores. Returns (cpu, how)."""
    allowed = sorted(os.sched_getaffinity(0))
    how = "gpu local_cpulist"
    try:
        p = torch.cuda.get_device_properties(torch.cuda.current_device())
        bus = "%04x:%02x:%02x.0" % (p.pci_domain_id, p.pci_bus_id, p.pci_device_id)
        cpus = [c for c in parse_cpulist(open("/sys/bus/pci/devices/%s/local_cpulist" % bus).read()) if c in allowed]
        how += " " + bus
    except Exception as ex:  # noqa: BLE001
        cpus, how = allowed, "allowed CPUs (%r)" % ex
    cores, seen = [], set()
    for c in cpus:
        try:
            sib = open("/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list" % c).read().strip()
        except Exception:  # noqa: BLE001
            sib = str(c)
        if sib not in seen:
            seen.add(sib)
            cores.append(c)
    cores = [c for c in cores if c != 0] or cores or allowed
    return cores[(1 + local_rank) % len(cores)], how, len(cores)


def med(v):
    return round(statistics.median(v), 2) if v else None


def run_block(L, mode, rounds, warm, pool):
    """`rounds` rounds of one mode on this rank; returns its per-rank record."""
    recs = []
    cpus = set()
    mhz = []
    gc0 = sum(g["collections"] for g in gc.get_stats())
    for it in range(warm + rounds):
        S = Stamps(pool if mode == "events" else None)
        s1, e1, s2, e2 = (torch.cuda.Event(enable_timing=True) for _ in range(4))
        dist.barrier()
        torch.cuda.synchronize()
        c0 = thread_cpu()
        t0 = time.perf_counter_ns()
        s1.record()
        saved, rs = fwd(L, S, mode == "backlog")
        e1.record()
        nf = len(S.ns)
        if mode == "backlog":
            tt.backlog(BACKLOG_US)
        tb = time.perf_counter_ns()
        s2.record()
        bwd(L, saved, rs, S)
        e2.record()
        torch.cuda.synchronize()
        c1 = thread_cpu()
        if it < warm:
            continue
        cpus.update((c0, c1))
        if it in (warm, warm + rounds - 1):  # /proc/cpuinfo is slow to read: first and last round only
            m = cpu_mhz(c1)
            if m is not None:
                mhz.append(m)
        r = {"fwd_us": s1.elapsed_time(e1) * 1000.0, "bwd_us": s2.elapsed_time(e2) * 1000.0,
             "host_fwd_end_us": (S.ns[nf - 1] - t0) / 1000.0, "host_bwd_start_us": (tb - t0) / 1000.0,
             "host_bwd_end_us": (S.ns[-1] - t0) / 1000.0,
             "host_us": [(x - t0) / 1000.0 for x in S.ns], "labels": S.labels, "nf": nf}
        if mode == "events":
            r["gpu_us"] = [s1.elapsed_time(pool[i]) * 1000.0 for i in range(len(S.ns))]
            r["gpu_bwd_start_us"] = s1.elapsed_time(s2) * 1000.0
        recs.append(r)
    labels = recs[0]["labels"]
    n = len(labels)
    out = {"rounds": len(recs), "cpus": sorted(cpus), "cpu_mhz": [min(mhz), max(mhz)] if mhz else None,
           "gc_collections": sum(g["collections"] for g in gc.get_stats()) - gc0,
           "fwd_us": [round(r["fwd_us"], 1) for r in recs], "bwd_us": [round(r["bwd_us"], 1) for r in recs],
           "fwd_us_median": med([r["fwd_us"] for r in recs]), "bwd_us_median": med([r["bwd_us"] for r in recs]),
           "host_fwd_end_us": med([r["host_fwd_end_us"] for r in recs]),
           "host_bwd_start_us": med([r["host_bwd_start_us"] for r in recs]),
           "host_bwd_end_us": med([r["host_bwd_end_us"] for r in recs]),
           "labels": labels, "n_fwd_calls": recs[0]["nf"],
           "host_at_us": [med([r["host_us"][i] for r in recs]) for i in range(n)],
           "host_call_us": [med([r["host_us"][i] - (r["host_us"][i - 1] if i else 0.0) for r in recs])
                            for i in range(n)]}
    if mode == "events":
        out["gpu_at_us"] = [med([r["gpu_us"][i] for r in recs]) for i in range(n)]
        out["gpu_bwd_start_us"] = med([r["gpu_bwd_start_us"] for r in recs])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--budget-s", type=float, default=125.0, help="no new point after this (from the start)")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--shapes", default="2048:1408:8:2,2048:1024:32:4,4096:2048:16:2",
                    help="hidden:expert_ffn:experts:top_k, comma-separated")
    ap.add_argument("--tokens", default="4096,8192,16384")
    ap.add_argument("--skews", default="0,0.8,1.5")
    ap.add_argument("--blocks", default="plain:U,plain:P,events:U,events:P,backlog:U,backlog:P,plain:U",
                    help="mode:affinity blocks per point, in order (U free, P pinned)")
    a = ap.parse_args()
    t0 = time.perf_counter()
    start()
    W, rank = dist.get_world_size(), dist.get_rank()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    free_cpus = sorted(os.sched_getaffinity(0))
    core, how, ncores = pick_core(local_rank)
    tt.cycles_per_us()
    parse_shape = lambda txt: tuple(int(v) for v in txt.split(":"))  # noqa: E731
    shapes = [parse_shape(x) for x in a.shapes.split(",")]
    tokens = [int(x) for x in a.tokens.split(",")]
    skews = [float(x) for x in a.skews.split(",")]
    points = [(s, t, z) for t in tokens for s in shapes for z in skews]  # 4K first: the host-bound ones
    points.append((shapes[0], tokens[0], skews[0]))  # the first point again: drift over the run
    blocks = [tuple(b.split(":")) for b in a.blocks.split(",")]
    ranks_info = [None] * W
    dist.all_gather_object(ranks_info, {"rank": rank, "local_rank": local_rank, "pid": os.getpid(),
                                        "tid": threading.get_native_id(), "pinned_cpu": core,
                                        "pinned_from": how, "cores_on_node": ncores,
                                        "free_affinity": "%d CPUs %d..%d" % (len(free_cpus), free_cpus[0], free_cpus[-1]),
                                        "cpu_at_start": thread_cpu(), "gc_threshold": gc.get_threshold()})
    meta = None
    if rank == 0:
        meta = tt.provenance("calibration/microbench/moe_host_timeline.py", VERSION)
        meta["world_size"] = W
        meta["nccl"] = ".".join(str(v) for v in torch.cuda.nccl.version())
        meta["env"] = {k: v for k, v in os.environ.items() if k.startswith(("NCCL_", "TORCH_", "OMP_", "CUDA_"))}
        meta["nvidia_smi_before"] = tt.nvsmi("clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active")
        meta["ranks"] = ranks_info
        meta["rounds"], meta["blocks"], meta["backlog_us"] = a.rounds, a.blocks, BACKLOG_US
        sha = {}
        for f in ("moe_host_timeline.py", "moe_ep_bench.py", "torch_timing.py"):
            try:
                with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), f), "rb") as fh:
                    sha[f] = hashlib.sha256(fh.read()).hexdigest()
            except Exception as ex:  # noqa: BLE001
                sha[f] = "unreadable: %r" % ex
        meta["script_sha256"] = sha
        try:
            meta["loadavg_before"] = open("/proc/loadavg").read().strip()
        except Exception as ex:  # noqa: BLE001
            meta["loadavg_before"] = repr(ex)
    results = []

    def write():
        if rank == 0:
            doc = {"schema": "gcsim.microbench.v1", "meta": meta, "results": results,
                   "elapsed_s": time.perf_counter() - t0}
            text = json.dumps(doc, separators=(",", ":"))
            with open(a.out, "w") as f:
                f.write(text)

    for pi, ((H, Fh, E, k), T, skew) in enumerate(points):
        go = torch.tensor([1.0 if time.perf_counter() - t0 < a.budget_s else 0.0], device="cuda")
        dist.all_reduce(go, op=dist.ReduceOp.MIN)
        if go.item() == 0.0:
            if rank == 0:
                print("budget reached: skipping the remaining %d points" % (len(points) - pi), flush=True)
            break
        name = "h%d_f%d_e%d_k%d_t%d_s%.1f" % (H, Fh, E, k, T, skew)
        if pi == len(points) - 1:
            name += "_again"
        counts = zipf_counts(T, k, E, skew)
        rec = {"name": name, "hidden": H, "expert_ffn": Fh, "experts": E, "top_k": k, "tokens_per_rank": T,
               "skew": skew, "ranks": W, "expert_tokens_per_source": counts, "blocks": []}
        t1 = time.perf_counter()
        layer = None
        try:
            layer = Layer(T, H, Fh, E, k, counts)
            for _ in range(2):  # the bench's own phases once: builds sort_idx and per_expert, warms cuBLAS
                for pas in (layer.fwd_phases, layer.bwd_phases):
                    for nm, fn in pas():
                        if fn is not None and not nm.startswith("sync"):
                            fn()
            torch.cuda.synchronize()
            rec["received_per_local_expert"] = layer.per_expert
            pool = [torch.cuda.Event(enable_timing=True) for _ in range(EVENT_POOL)]
        except Exception as ex:  # noqa: BLE001
            rec["error"] = repr(ex)
            print("rank %d %s setup failed: %r" % (rank, name, ex), flush=True)
        for mode, aff in ([] if "error" in rec else blocks):
            blk = {"mode": mode, "affinity": aff}
            try:
                os.sched_setaffinity(0, {core} if aff == "P" else free_cpus)
                mine = run_block(layer, mode, a.rounds, 2, pool)
            except Exception as ex:  # noqa: BLE001
                mine = {"error": repr(ex)}
                print("rank %d %s %s:%s failed: %r" % (rank, name, mode, aff, ex), flush=True)
                try:
                    torch.cuda.synchronize()
                except Exception:  # noqa: BLE001
                    pass
            mine["rank"] = rank
            allr = [None] * W
            dist.all_gather_object(allr, mine)  # every rank gets here, failed or not
            blk["per_rank"] = allr
            rec["blocks"].append(blk)
        os.sched_setaffinity(0, free_cpus)
        rec["point_s"] = time.perf_counter() - t1
        if rank == 0 and rec["blocks"]:
            line = []
            for b in rec["blocks"]:
                if all("error" not in p for p in b["per_rank"]):
                    pr = b["per_rank"]
                    line.append("%s:%s fwd %.0f bwd %.0f host %.0f/%.0f" % (
                        b["mode"], b["affinity"], max(p["fwd_us_median"] for p in pr),
                        max(p["bwd_us_median"] for p in pr), max(p["host_fwd_end_us"] for p in pr),
                        max(p["host_bwd_end_us"] - p["host_bwd_start_us"] for p in pr)))
            print("%s (%.1fs): %s" % (name, rec["point_s"], "; ".join(line)), flush=True)
        results.append(rec)
        write()
        del layer
        torch.cuda.empty_cache()
    if rank == 0:
        meta["nvidia_smi_after"] = tt.nvsmi("clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active")
        try:
            meta["loadavg_after"] = open("/proc/loadavg").read().strip()
        except Exception as ex:  # noqa: BLE001
            meta["loadavg_after"] = repr(ex)
    write()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
