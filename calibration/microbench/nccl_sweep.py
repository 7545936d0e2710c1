#!/usr/bin/env python3
"""NCCL collectives through PyTorch (one process per GPU), nccl-tests style: time per call of
all_reduce, all_gather, reduce_scatter, all_to_all, broadcast and send_recv from --min-bytes to
--max-bytes (x2 steps; default 8 B to 4 GiB, as nccl-tests' -b 8 -e 4G -f 2), with algbw = S / t and
busbw = algbw x factor (nccl-tests doc/PERFORMANCE.md): 2(n-1)/n all_reduce; (n-1)/n all_gather
(S = output), reduce_scatter (S = input), all_to_all; 1 broadcast and send_recv (S = what each rank
sends; send_recv is nccl-tests' sendrecv: every rank sends to rank+1 and receives from rank-1 in one
group call). A size is rounded up to a whole number of float32 elements per rank.

    NCCL_NVLS_ENABLE=0 torchrun --standalone --nproc_per_node=N calibration/microbench/nccl_sweep.py \
        -o OUT.json [--ops all_reduce,...] [--probe]

Timing: float32 data from torch.randn; per size 5 warm-up calls, then 5 timed loops of `iters`
back-to-back calls (iters chosen for ~2 ms a loop, 5..200) with one CUDA event pair around each
loop on the current stream (PyTorch's NCCL stream waits on it and it waits for the NCCL stream),
the stream back-logged with torch.cuda._sleep so the host never throttles the loop; a barrier
before each loop. time_us = median over loops of loop time / iters, and the reported value is
the largest over ranks (the collective ends when its slowest rank does). Placement as nccl-tests
runs both: all_gather and reduce_scatter out-of-place and in-place (NCCL's in-place layout: the
rank's input is its slice of the output, or its output the rank's slice of the input);
all_reduce and broadcast in-place only and all_to_all, send_recv out-of-place only, because
PyTorch's API has only that form. nvidia-smi clocks, power and throttle reasons are read
before and after each op's sweep. NCCL_ALGO / NCCL_PROTO, if set, are recorded as forced;
NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS / NCCL_BUFFSIZE, if set, in meta.forced and on every row
as "forced_env" (calibration-only runs: not NCCL's own choices).
--probe runs each op and size once (for NCCL_DEBUG_SUBSYS=TUNING logs of NCCL's choices).
--fence follows every timed call with an 8-byte all_reduce (rows carry "fence": "all_reduce_8B"):
a ring all-reduce ends on no rank before every rank has joined it, so back-to-back calls can no
longer overlap one another (a broadcast chain's root starting call k+1 while call k still travels
down the chain); time minus that of the 8-byte all_reduce alone is one call's end-to-end time.
--steps-per-octave m: sizes 2^(1/m) apart instead of 2x (m = 1).
device_copy (not in the default --ops) times dst.copy_(src) of S bytes on each GPU with no
communication: the device-to-device copy rate that all_to_all's self slice runs at.
Results are written (rank 0, atomically) after every op's sweep, so a run cut off keeps what ended;
a size whose buffers cannot be allocated on some rank is skipped by every rank and listed in
meta.skipped.
"""
import argparse
import hashlib
import json
import math
import os
import statistics
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_timing as tt  # noqa: E402

VERSION = "nccl_sweep 1.5"
# NVLink multicast stays off (device README: it can take the host's GPUs out of service).
for _k, _v in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"), ("NVSHMEM_DISABLE_NVLS", "1")):
    os.environ[_k] = _v

OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv")
# (op, in_place) pairs that PyTorch can issue.
PLACEMENTS = {"all_reduce": (True,), "all_gather": (False, True), "reduce_scatter": (False, True),
              "all_to_all": (False,), "broadcast": (True,), "send_recv": (False,), "device_copy": (False,)}


SMI_FIELDS = "clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active"


def bus_factor(op, n):
    if op == "all_reduce":
        return 2.0 * (n - 1) / n
    if op in ("all_gather", "reduce_scatter", "all_to_all"):
        return (n - 1) / n
    return 1.0


def round_bytes(op, nbytes, n):
    """Bytes actually moved: whole float32 elements, and a whole number of them per rank where
    the op splits its buffer over ranks."""
    per = 4 * (n if op in ("all_gather", "reduce_scatter", "all_to_all") else 1)
    return max(per, (nbytes + per - 1) // per * per)


def make_call(op, nbytes, n, in_place):
    elems = nbytes // 4
    rank = dist.get_rank()
    if op == "all_reduce":
        t = torch.randn(elems, device="cuda")
        return lambda: dist.all_reduce(t)
    if op == "all_gather":
        out = torch.empty(elems, device="cuda")
        inp = out.narrow(0, rank * (elems // n), elems // n) if in_place else torch.randn(elems // n, device="cuda")
        if in_place:
            inp.normal_()
        return lambda: dist.all_gather_into_tensor(out, inp)
    if op == "reduce_scatter":
        inp = torch.randn(elems, device="cuda")
        out = inp.narrow(0, rank * (elems // n), elems // n) if in_place else torch.empty(elems // n, device="cuda")
        return lambda: dist.reduce_scatter_tensor(out, inp)
    if op == "all_to_all":
        inp = torch.randn(elems, device="cuda")
        out = torch.empty(elems, device="cuda")
        return lambda: dist.all_to_all_single(out, inp)
    if op == "send_recv":
        src = torch.randn(elems, device="cuda")
        dst = torch.empty(elems, device="cuda")
        ops = [dist.P2POp(dist.isend, src, (rank + 1) % n), dist.P2POp(dist.irecv, dst, (rank - 1) % n)]

        def call():
            for w in dist.batch_isend_irecv(ops):
                w.wait()
        return call
    if op == "device_copy":
        src = torch.randn(elems, device="cuda")
        dst = torch.empty(elems, device="cuda")
        return lambda: dst.copy_(src)
    t = torch.randn(elems, device="cuda")
    return lambda: dist.broadcast(t, src=0)


def fenced(call):
    """`call`, then an 8-byte all_reduce that every rank must join before any can leave it."""
    fence = torch.zeros(2, device="cuda")

    def both():
        call()
        dist.all_reduce(fence)
    return both


def time_loop(call, iters):
    dist.barrier()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    tt.backlog(min(200_000.0, 40.0 * iters + 300.0))
    s.record()
    for _ in range(iters):
        call()
    e.record()
    torch.cuda.synchronize()
    return s.elapsed_time(e) * 1000.0 / iters


def check_all_reduce(n, rank):
    t = torch.full((1 << 20,), float(rank + 1), device="cuda")
    dist.all_reduce(t)
    want = n * (n + 1) / 2
    return bool(torch.all(t == want).item())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--min-bytes", type=int, default=8)
    ap.add_argument("--max-bytes", type=int, default=4 << 30)
    ap.add_argument("--probe", action="store_true")
    ap.add_argument("--label", default="")
    ap.add_argument("--fence", action="store_true")
    ap.add_argument("--steps-per-octave", type=int, default=1)
    a = ap.parse_args()
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    dist.init_process_group("nccl", device_id=dev)
    rank, n = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(rank)
    ok = check_all_reduce(n, rank)
    gathered = [None] * n
    dist.all_gather_object(gathered, {"rank": rank, "check_ok": ok, "device": torch.cuda.get_device_name(dev)})
    forced = {k: os.environ[k] for k in ("NCCL_ALGO", "NCCL_PROTO", "NCCL_MIN_NCHANNELS",
                                           "NCCL_MAX_NCHANNELS", "NCCL_BUFFSIZE") if k in os.environ}
    # Settings besides the algorithm and protocol (channel counts, buffer size): calibration-only
    # runs, never NCCL's defaults; every row carries them.
    forced_env = {k: v for k, v in forced.items() if k not in ("NCCL_ALGO", "NCCL_PROTO")}
    meta = {}
    if rank == 0:
        meta = tt.provenance("calibration/microbench/nccl_sweep.py", VERSION)
        meta.update({"nccl_version": ".".join(str(x) for x in torch.cuda.nccl.version()), "ranks": n,
                     "label": a.label, "forced": forced, "fence": a.fence,
                     "steps_per_octave": a.steps_per_octave,
                     "script_sha256": hashlib.sha256(open(os.path.abspath(__file__), "rb").read()).hexdigest(), "dtype": "float32",
                     "devices": [g["device"] for g in gathered],
                     "env": {k: v for k, v in os.environ.items() if k.startswith(("NCCL_", "CUDA_VISIBLE", "TORCH_SYMM", "NVSHMEM"))},
                     "correctness_all_reduce_ok": all(g["check_ok"] for g in gathered),
                     "skipped": [], "complete": False})
    sizes = []
    k = 0
    while True:
        b = int(round(a.min_bytes * 2.0 ** (k / max(1, a.steps_per_octave))))
        if b > a.max_bytes:
            break
        if not sizes or b > sizes[-1]:
            sizes.append(b)
        k += 1
    results = []
    smi = []

    def write(complete):
        if rank != 0 or a.probe:
            return
        meta["nvidia_smi_by_op"] = smi
        meta["complete"] = complete
        tmp = a.out + ".part"
        with open(tmp, "w") as f:
            json.dump({"schema": "gcsim.nccl_sweep.v1", "meta": meta, "results": results}, f, indent=1)
        os.replace(tmp, a.out)

    for op in a.ops.split(","):
        if rank == 0:
            smi.append({"op": op, "when": "before", "state": tt.nvsmi(SMI_FIELDS)})
        for in_place in PLACEMENTS[op]:
            for size in sizes:
                nbytes = round_bytes(op, size, n)
                # Every rank must issue the same calls: skip a size some rank cannot allocate.
                try:
                    call = make_call(op, nbytes, n, in_place)
                    if a.fence:
                        call = fenced(call)
                    made = 1.0
                except RuntimeError as ex:  # CUDA out of memory
                    call, made = None, 0.0
                    print("rank %d: %s %d B not allocated: %r" % (rank, op, nbytes, ex), flush=True)
                agree = torch.tensor([made], device="cuda")
                dist.all_reduce(agree, op=dist.ReduceOp.MIN)
                if agree.item() < 1.0:
                    if rank == 0:
                        meta["skipped"].append({"op": op, "bytes": nbytes, "in_place": in_place})
                    call = None
                    torch.cuda.empty_cache()
                    continue
                if a.probe:
                    call()
                    torch.cuda.synchronize()
                    continue
                for _ in range(5):
                    call()
                torch.cuda.synchronize()
                est = time_loop(call, 5)
                # Every rank must issue the same number of calls: agree on the slowest rank's estimate.
                agreed = torch.tensor([est], device="cuda")
                dist.all_reduce(agreed, op=dist.ReduceOp.MAX)
                iters = int(min(200, max(5, math.ceil(2000.0 / max(agreed.item(), 1.0)))))
                loops = [time_loop(call, iters) for _ in range(5)]
                mine = statistics.median(loops)
                every = torch.zeros(n, device="cuda", dtype=torch.float64)
                dist.all_gather_into_tensor(every, torch.tensor([mine], device="cuda", dtype=torch.float64))
                per_rank = [float(x) for x in every.tolist()]
                # The collective ends when its slowest rank does.
                t = max(per_rank)
                algbw = nbytes / (t * 1e-6) / 1e9
                results.append({"op": op, "ranks": n, "bytes": nbytes, "time_us": t,
                                "algbw_GBps": algbw, "busbw_GBps": algbw * bus_factor(op, n),
                                "per_rank_time_us": per_rank, "iters": iters, "loop_us_rank0": loops,
                                "algorithm": forced.get("NCCL_ALGO", "default"),
                                "protocol": forced.get("NCCL_PROTO", "default"), "in_place": in_place})
                if a.fence:
                    results[-1]["fence"] = "all_reduce_8B"
                if forced_env:
                    results[-1]["forced_env"] = forced_env
                if rank == 0:
                    r = results[-1]
                    print("%-15s n=%d %11d B %10.2f us algbw %7.2f busbw %7.2f GB/s %s/%s" % (
                        op + ("*" if in_place else ""), n, nbytes, t, r["algbw_GBps"], r["busbw_GBps"],
                        r["algorithm"], r["protocol"]), flush=True)
                call = None
                torch.cuda.empty_cache()
        if rank == 0:
            smi.append({"op": op, "when": "after", "state": tt.nvsmi(SMI_FIELDS)})
        write(False)
    write(True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
