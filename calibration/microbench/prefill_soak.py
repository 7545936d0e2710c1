#!/usr/bin/env python3
"""Does a serving step's clock fall the longer it runs at the power cap? The serving bench's eager
prefill step (serving_step_bench.py's shards: Llama-2-70B's layer x 8, TP4 on 4 GPUs) repeated back
to back for --seconds, every step timed by CUDA events and stamped with the wall clock, while the
caller's nvidia-smi samples clocks, power and temperature (run_prefill_soak.sh).

    torchrun --standalone --nproc_per_node 4 prefill_soak.py -o OUT.json [--tokens 8192] [--seconds 30]

Why: the 80-layer model's 8192-token TP4 prefill ran at ~1650 MHz for 17 s
(calibration/measurements/h100-x4/serving_step_full_2026-11-28), the 8-layer one's, the same
layers, at 1874-1920 MHz for ~1.6 s on other machines, and the GPUs ran hotter in the longer run.
Here one machine runs the same step long: if the clock falls as the GPU warms, the step's time
rises with it, and the samples give the clock against the temperature at a fixed mix.

Per step (rank 0 writes, every rank's durations kept): the wall time at its end (time.time() after
its end event synchronised, s since the epoch) and its duration (us). First --warmup-s of steps as
warm-up, also recorded.
"""
import time

T0 = time.time()

import argparse  # noqa: E402
import datetime  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_common  # noqa: E402
import serving_step_bench as ssb  # noqa: E402
from bench_common import gather  # noqa: E402

VERSION = "prefill_soak 1.0"
log = bench_common.make_log(T0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--tokens", type=int, default=8192)
    ap.add_argument("--seconds", type=float, default=30.0)
    a = ap.parse_args()
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=120))
    dist.barrier(device_ids=[local])
    m = dict(ssb.MODELS["l70"])
    rank, world = dist.get_rank(), dist.get_world_size()
    out = bench_common.ResultsFile(a.out, "gcsim.prefill_soak.v1", __file__, VERSION, T0, method=__doc__, model=m,
                                   tokens=a.tokens, seconds=a.seconds)
    doc, save = out.doc, out.save
    save()
    sh = ssb.Shard(m, world, rank, dist.group.WORLD, a.tokens)
    dev = torch.device("cuda")
    ids = torch.randint(0, m["vocab"], (a.tokens,), device=dev)
    pos = torch.arange(a.tokens, device=dev, dtype=torch.long)

    def step():
        return sh.step(ids, pos, 1, a.tokens, a.tokens, False)

    for _ in range(2):
        step()
    torch.cuda.synchronize()
    dist.barrier(device_ids=[local])
    log("soak: %d tokens, TP%d, %.0f s" % (a.tokens, world, a.seconds))
    ends, durations = [], []
    start = torch.cuda.Event(enable_timing=True)
    start.record()
    t_start = time.time()
    prev = start
    # Every rank runs the same number of steps (the collectives pair up): rank 0's clock decides, once
    # a step, whether to go on.
    go = torch.ones(1, device=dev)
    while True:
        step()
        ev = torch.cuda.Event(enable_timing=True)
        ev.record()
        ev.synchronize()
        ends.append(time.time())
        durations.append(prev.elapsed_time(ev) * 1000.0)
        prev = ev
        go.fill_(1.0 if time.time() - t_start < a.seconds else 0.0)
        dist.broadcast(go, 0)
        if go.item() == 0.0:
            break
    doc["steps"] = gather({"rank": rank, "end_epoch_s": ends, "step_us": durations})
    doc["t_start_epoch_s"] = t_start
    log("%d steps, first %.1f us, last %.1f us" % (len(durations), durations[0], durations[-1]))
    out.finish(log)


if __name__ == "__main__":
    main()
