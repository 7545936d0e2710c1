#!/usr/bin/env python3
"""Two NCCL all-reduces at once on one GPU: a TP group's and a DP group's, as TP2xDP2 runs them.

Launch with one process per GPU on 4 GPUs of one NVSwitch node:
    NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 \
    python3 -m torch.distributed.run --standalone --nproc_per_node=4 \
        calibration/microbench/concurrent_collectives.py -o FILE.json

Groups as a Megatron-style TP2xDP2 layout has them: TP {0,1} {2,3}, DP {0,2} {1,3}; every GPU is in
one of each, so its NVLink ports carry both at once when they overlap (DDP's bucket all-reduces
beside the backward's TP all-reduces). Per (TP size, DP size) pair, three phases, each released
at one GPU instant (a torch.cuda._sleep kernel holds the GPU while the host enqueues, then an
event t0 both streams wait on):
  tp:   back-to-back all_reduce(SUM, bf16) on the TP group, on stream "tp";
  dp:   back-to-back all_reduce(SUM, fp32) on the DP group, on stream "dp";
  both: the two loops at once, each on its own stream, issued interleaved.
Every all-reduce has its own CUDA event pair on its stream (PyTorch's NCCL stream waits on it
and it on NCCL's), so an interval is release -> peers -> NCCL kernel -> end. Reported per rank:
each op's interval (us, from t0), and per phase the medians; for "both" the median of the ops
wholly inside the other stream's busy window (the overlapped rate) and each loop's span.
busbw = S / t * 2(n-1)/n = S / t for n = 2 (nccl-tests' definition).
"""
import argparse
import datetime
import faulthandler
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_common  # noqa: E402

# 1.0-1.2 hung (2026-11-27 10:11, 10:24, 10:27): each rank sized its loops from its own probe,
# so the two ranks of a group issued different counts. 1.3 takes every rank's largest count.
VERSION = "1.3"
T0 = time.time()
log = bench_common.make_log(T0)
MIB = 1 << 20
# (TP bytes, DP bytes): a layer's forward/backward TP all-reduce of 2-4 sequences of 4096 tokens x
# hidden 4096 in bf16 is 64-128 MiB; DDP's buckets are 25 MiB of fp32 gradients (bigger where one
# parameter is: the vocabulary-parallel embedding, 250 MiB).
PAIRS = [(64 * MIB, 25 * MIB), (128 * MIB, 25 * MIB), (256 * MIB, 25 * MIB),
         (64 * MIB, 256 * MIB), (256 * MIB, 256 * MIB), (16 * MIB, 25 * MIB), (4 * MIB, 25 * MIB)]
TARGET_US = 20_000.0  # each loop's length in a phase: long enough that most ops overlap


def sleep_gate(us):
    """Hold the current stream ~us so the host enqueues ahead of the GPU."""
    torch.cuda._sleep(int(us * bench_common.tt.cycles_per_us()))


def phase(loops):
    """loops: [(name, stream, tensor, group, n)]; returns {name: [(start_us, end_us), ...]}.
    The gate covers the host's enqueue (~50 us a call with its two events), so the GPU runs the
    loops back to back, not at the host's pace."""
    torch.cuda.synchronize()
    dist.barrier(device_ids=[torch.cuda.current_device()])
    sleep_gate(2000.0 + 50.0 * sum(n for *_, n in loops))
    t0 = torch.cuda.Event(enable_timing=True)
    t0.record()
    evs = {}
    for name, s, *_ in loops:
        s.wait_event(t0)
        evs[name] = []
    most = max(n for *_, n in loops)
    for i in range(most):
        for name, s, x, g, n in loops:
            if i >= n:
                continue
            with torch.cuda.stream(s):
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                dist.all_reduce(x, group=g)
                b.record()
                evs[name].append((a, b))
    torch.cuda.synchronize()
    return {name: [(t0.elapsed_time(a) * 1e3, t0.elapsed_time(b) * 1e3) for a, b in pairs]
            for name, pairs in evs.items()}


def inside(ops, window):
    lo, hi = window
    return [e - s for s, e in ops if s >= lo and e <= hi]


def summary(times):
    out = {}
    for name, ops in times.items():
        d = [e - s for s, e in ops]
        out[name] = {"median_us": statistics.median(d), "span_us": ops[-1][1] - ops[0][0], "n": len(d)}
    if len(times) == 2:
        (na, a), (nb, b) = times.items()
        for me, mine, other in ((na, a, b), (nb, b, a)):
            d = inside(mine, (other[0][0], other[-1][1]))
            out[me]["overlapped_median_us"] = statistics.median(d) if d else None
            out[me]["overlapped_n"] = len(d)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--budget-s", type=float, default=90.0)
    a = ap.parse_args()
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    faulthandler.dump_traceback_later(75, exit=False)  # every rank's stack, should it hang
    dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=90))
    rank, world = dist.get_rank(), dist.get_world_size()

    def say(what):  # every rank, so a hang names the rank and the step
        print("[%6.1fs] rank %d: %s" % (time.time() - T0, rank, what), flush=True)
    out = bench_common.ResultsFile(a.out, "gcsim.concurrent_collectives.v1", __file__, VERSION, T0,
                                   method=__doc__, groups={"tp": [[0, 1], [2, 3]], "dp": [[0, 2], [1, 3]]})
    if world != 4:
        out.doc["errors"].append({"error": "needs 4 ranks, got %d" % world})
        out.finish(log)
        return
    tp_groups = [dist.new_group([0, 1]), dist.new_group([2, 3])]
    dp_groups = [dist.new_group([0, 2]), dist.new_group([1, 3])]
    tp, dp = tp_groups[rank // 2], dp_groups[rank % 2]
    s_tp, s_dp = torch.cuda.Stream(), torch.cuda.Stream()
    big = max(max(p) for p in PAIRS)
    x_tp_all = torch.randn(big // 2, dtype=torch.bfloat16, device="cuda")
    x_dp_all = torch.randn(big // 4, dtype=torch.float32, device="cuda")
    for name, g, x in (("tp", tp, x_tp_all), ("dp", dp, x_dp_all)):  # communicators up, one at a time
        say("warm-up %s" % name)
        for _ in range(3):
            dist.all_reduce(x[:MIB], group=g)
        torch.cuda.synchronize()
        dist.barrier(device_ids=[local])
    say("warm-up done")
    for tp_bytes, dp_bytes in PAIRS:
        if time.time() - T0 > a.budget_s:
            out.doc["skipped"].append({"tp_bytes": tp_bytes, "dp_bytes": dp_bytes, "reason": "budget"})
            continue
        x_tp, x_dp = x_tp_all[: tp_bytes // 2], x_dp_all[: dp_bytes // 4]
        say("pair %d / %d MiB" % (tp_bytes // MIB, dp_bytes // MIB))
        # Each alone first: its kernels loaded and warm, and the loop lengths sized.
        probe = {**summary(phase([("tp", s_tp, x_tp, tp, 3)])), **summary(phase([("dp", s_dp, x_dp, dp, 3)]))}
        n = torch.tensor([max(4, min(200, int(TARGET_US / probe[k]["median_us"]))) for k in ("tp", "dp")],
                         device="cuda")
        dist.all_reduce(n, op=dist.ReduceOp.MAX)  # one count for every rank of a group
        n_tp, n_dp = (int(v) for v in n.tolist())
        alone_tp = phase([("tp", s_tp, x_tp, tp, n_tp)])
        alone_dp = phase([("dp", s_dp, x_dp, dp, n_dp)])
        both = phase([("tp", s_tp, x_tp, tp, n_tp), ("dp", s_dp, x_dp, dp, n_dp)])
        mine = {"rank": rank, "alone": {**summary(alone_tp), **summary(alone_dp)}, "both": summary(both),
                "both_ops_us": both}
        ranks = bench_common.gather(mine)
        rec = {"tp_bytes": tp_bytes, "dp_bytes": dp_bytes, "n_tp": n_tp, "n_dp": n_dp, "ranks": ranks}
        out.doc["results"].append(rec)
        r0 = ranks[0]
        log("TP %4d MiB / DP %4d MiB: alone tp %.1f us (busbw %.0f GB/s), dp %.1f us (%.0f GB/s); "
            "together tp %s us, dp %s us; spans tp %.0f dp %.0f us (alone %.0f + %.0f)" % (
                tp_bytes // MIB, dp_bytes // MIB, r0["alone"]["tp"]["median_us"],
                tp_bytes / r0["alone"]["tp"]["median_us"] / 1e3, r0["alone"]["dp"]["median_us"],
                dp_bytes / r0["alone"]["dp"]["median_us"] / 1e3,
                "%.1f" % r0["both"]["tp"]["overlapped_median_us"] if r0["both"]["tp"]["overlapped_median_us"] else "-",
                "%.1f" % r0["both"]["dp"]["overlapped_median_us"] if r0["both"]["dp"]["overlapped_median_us"] else "-",
                r0["both"]["tp"]["span_us"], r0["both"]["dp"]["span_us"], r0["alone"]["tp"]["span_us"],
                r0["alone"]["dp"]["span_us"]))
        out.save()
    out.finish(log)


if __name__ == "__main__":
    main()
