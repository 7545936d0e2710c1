#!/usr/bin/env python3
"""Where a CUDA-graph decode step's time goes, measured inside the graph: the serving bench's step
(serving_step_bench.py's shards, collectives and kernels) captured whole, captured without its
collectives, and its collectives captured alone, each replayed back to back; then one replay of the
whole step under torch.profiler (CUPTI traces a graph's kernels), per rank, kernel by kernel.

    torchrun --standalone --nproc_per_node 4 serving_graph_parts_bench.py -o OUT.json [--budget-s 200]

On 4 GPUs: TP4, then TP2 on {0,1} and {2,3}; on 2 GPUs (1.2): TP2 alone.

Why: gcsim's graph decode of the held-out serving model (serving_step_bench.py --model l3_8b) came
out 2.5-13% fast at every point, and the eager profile (host-bound, GPU idle between kernels) cannot
say whether the graph's kernels, its collectives or the gaps between them take the time.

Per point (model, tp, batch, kv_len), all in CUDA graphs, replays back to back (bench_common's
timed_steps: a CUDA event at every boundary, the host at most 2 replays ahead), median per rank:
  full_us        the whole step (embedding to argmax), as serving_step_bench.py's graph build;
  nocomm_us      the same step with every all-reduce removed and the logits' all-gather replaced by an
                 uninitialised buffer of its size (every other kernel identical);
  commonly_us    the step's collectives alone, in the step's order and sizes (embedding all-reduce,
                 two per layer, the logits' all-gather), back to back;
  profile        (second pass, after every point is timed) torch.profiler over 3 replays of each of
                 the three graphs (1.0: the whole step and the collectives alone): per rank, the middle replay's kernels in time order (class, us, gap before it),
                 sums by class, the NCCL kernels' durations and the span of the replay.
Every point's clocks (nvidia-smi) before and after its replays. Each point is guarded; rank 0
rewrites the JSON after every point.
"""
import time

T0 = time.time()

import argparse  # noqa: E402
import datetime  # noqa: E402
import gc  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import traceback  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_common  # noqa: E402
import serving_step_bench as ssb  # noqa: E402
from bench_common import class_of, gather, timed_steps  # noqa: E402

VERSION = "serving_graph_parts_bench 1.2"
log = bench_common.make_log(T0)
# (batch, kv_len): batches 1-64 at one KV length, where the held-out graph decode missed most
POINTS = [(1, 2048), (8, 2048), (32, 2048), (64, 2048)]
CACHE_TOKENS = 64 * 2048


class NoCommShard(ssb.Shard):
    """A shard's step with its collectives removed: identical kernels otherwise."""

    @classmethod
    def of(cls, sh):
        q = cls.__new__(cls)
        q.__dict__ = dict(sh.__dict__)
        return q

    def all_reduce(self, x):
        return x

    def sample(self, x, rows):
        h = ssb.rms_norm(x, self.norm_f, self.m["eps"])
        if rows < h.shape[0]:
            h = h[-rows:]
        logits = torch.nn.functional.linear(h, self.head)
        if self.tp > 1:
            out = torch.empty(self.tp * rows, self.vshard, device=h.device, dtype=h.dtype)  # no gather
            logits = out.view(self.tp, rows, self.vshard).permute(1, 0, 2).reshape(rows, self.tp * self.vshard)
        probs = torch.softmax(logits.float(), dim=-1)
        return torch.argmax(probs, dim=-1)


def comm_only_step(sh, tokens, rows):
    """The step's collectives, same order and sizes, nothing between them."""
    h = sh.m["hidden"]
    x = torch.zeros(tokens, h, device="cuda", dtype=torch.bfloat16)
    logits = torch.zeros(rows, sh.vshard, device="cuda", dtype=torch.bfloat16)
    out = torch.empty(sh.tp * rows, sh.vshard, device="cuda", dtype=torch.bfloat16)

    def step():
        sh.all_reduce(x)
        for _ in sh.layers:
            sh.all_reduce(x)
            sh.all_reduce(x)
        dist.all_gather_into_tensor(out, logits, group=sh.group)
    return step


def capture(fn):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, capture_error_mode="thread_local"):
        fn()
    torch.cuda.synchronize()
    g.replay()
    torch.cuda.synchronize()
    return g


def replay_us(g, n=100):
    timed_steps(g.replay, 5)
    return statistics.median(timed_steps(g.replay, n))


def step_fns(sh, batch, kv_len):
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev)
    gen.manual_seed(1234 + batch * 7 + kv_len)
    ids = torch.randint(0, sh.m["vocab"], (batch,), device=dev, generator=gen)
    pos = torch.full((batch,), kv_len - 1, device=dev, dtype=torch.long)
    nc = NoCommShard.of(sh)
    return {"full": lambda: sh.step(ids, pos, batch, 1, kv_len, True),
            "nocomm": lambda: nc.step(ids, pos, batch, 1, kv_len, True),
            "commonly": comm_only_step(sh, batch, batch)}


def time_point(sh, tp, batch, kv_len):
    mine = {"rank": dist.get_rank(), "clocks_before": bench_common.clocks()}
    for name, fn in step_fns(sh, batch, kv_len).items():
        g = capture(fn)
        mine[name + "_us"] = replay_us(g)
        del g
        torch.cuda.synchronize()
    mine["clocks_after"] = bench_common.clocks()
    ranks = gather(mine)
    rec = {"tp": tp, "batch": batch, "kv_len": kv_len, "ranks": ranks}
    for k in ("full_us", "nocomm_us", "commonly_us"):
        rec[k] = max(r[k] for r in ranks[:tp])  # replica 0's slowest rank
    log("  TP%d b%d kv%d: full %.1f  nocomm %.1f  commonly %.1f us" % (
        tp, batch, kv_len, rec["full_us"], rec["nocomm_us"], rec["commonly_us"]))
    return rec


def profile_replay(g, nrep=3):
    """The middle replay's kernels in time order: (class, name, us, gap before it in us)."""
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    dist.barrier(device_ids=[torch.cuda.current_device()])
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(nrep):
            g.replay()
        torch.cuda.synchronize()
    evs = []
    for ev in prof.events():
        dt = getattr(ev, "device_type", None)
        if dt is None or not str(dt).endswith("CUDA"):
            continue
        evs.append((ev.time_range.start, ev.time_range.end, ev.name))
    evs.sort()
    per = len(evs) // nrep
    if per == 0:
        return {"error": "no kernels recorded (%d events)" % len(evs)}
    mid = evs[per:2 * per]
    out, classes, nccl = [], {}, []
    prev_end = mid[0][0]
    for s, e, name in mid:
        c = class_of(name)
        us = e - s
        out.append([c, name[:80], round(us, 3), round(s - prev_end, 3)])
        classes[c] = classes.get(c, 0.0) + us
        if c == "communication":
            nccl.append(round(us, 3))
        prev_end = max(prev_end, e)
    return {"events_total": len(evs), "kernels": len(mid), "span_us": mid[-1][1] - mid[0][0],
            "busy_us": sum(e - s for s, e, _ in mid), "classes_us": classes, "nccl_us": nccl,
            "sequence": out}


def profile_point(sh, tp, batch, kv_len):
    fns = step_fns(sh, batch, kv_len)
    res = {}
    for name in ("full", "nocomm", "commonly"):
        g = capture(fns[name])
        timed_steps(g.replay, 10)
        p = profile_replay(g)
        if dist.get_rank() != 0:
            p.pop("sequence", None)  # rank 0's sequence is enough; the others keep sums and NCCL times
        res[name] = p
        del g
        torch.cuda.synchronize()
    ranks = gather(res)
    log("  profiled TP%d b%d kv%d: rank0 full span %.1f us busy %.1f, nccl %s" % (
        tp, batch, kv_len, ranks[0]["full"].get("span_us", 0), ranks[0]["full"].get("busy_us", 0),
        ["%.1f" % x for x in ranks[0]["full"].get("nccl_us", [])[:6]]))
    return {"tp": tp, "batch": batch, "kv_len": kv_len, "ranks": ranks}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--budget-s", type=float, default=200.0)
    ap.add_argument("--models", default="l3_8b,l70")
    a = ap.parse_args()
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=120))
    dist.barrier(device_ids=[local])
    rank = dist.get_rank()
    out = bench_common.ResultsFile(a.out, "gcsim.serving_graph_parts.v1", __file__, VERSION, T0, indent=None,
                                   method=__doc__)
    doc, save = out.doc, out.save
    doc["profiled"] = []  # "results": the timed points
    save()
    world = dist.get_world_size()
    if world not in (2, 4):
        raise SystemExit("needs 2 or 4 ranks, got %d" % world)
    tps = (4, 2) if world == 4 else (2,)
    tp2_group = [dist.new_group([0, 1]), dist.new_group([2, 3])][rank // 2] if world == 4 else dist.group.WORLD
    bench_common.profile_steps(lambda: torch.cuda._sleep(1000), 1)  # CUPTI's slow first start
    for model in a.models.split(","):
        m = dict(ssb.MODELS[model])
        t = time.time()
        shards = {2: ssb.Shard(m, 2, rank % 2, tp2_group, CACHE_TOKENS)}
        if world == 4:
            shards[4] = ssb.Shard(m, 4, rank, dist.group.WORLD, CACHE_TOKENS)
        torch.cuda.synchronize()
        log("%s: weights and caches %.1f s" % (m["name"], time.time() - t))
        for phase, fn, key in (("time", time_point, "results"), ("profile", profile_point, "profiled")):
            for tp in tps:
                for batch, kv_len in POINTS:
                    go = torch.tensor([1.0 if a.budget_s - (time.time() - T0) >= 4.0 else 0.0], device="cuda")
                    dist.broadcast(go, 0)
                    if go.item() == 0.0:
                        doc["skipped"].append({"model": model, "phase": phase, "tp": tp, "batch": batch})
                        continue
                    err = None
                    try:
                        rec = fn(shards[tp], tp, batch, kv_len)
                        rec["model"] = m["name"]
                        doc[key].append(rec)
                    except Exception as ex:  # noqa: BLE001
                        err = {"model": model, "phase": phase, "tp": tp, "batch": batch, "rank": rank,
                               "error": repr(ex)[:2000], "traceback": traceback.format_exc()[-4000:]}
                        print("rank %d FAILED %s %s TP%d b%d: %r" % (rank, model, phase, tp, batch, ex), flush=True)
                    gc.collect()
                    out.gather_errors(err)
        del shards
        gc.collect()
        torch.cuda.empty_cache()
    out.finish(log)


if __name__ == "__main__":
    main()
