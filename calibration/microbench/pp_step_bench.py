#!/usr/bin/env python3
"""A two-stage 1F1B pipeline of GPT layers timed on real GPUs: the measurement a gcsim `training`
run with PP 2 is checked against (tests/scenario/test_training_measured.cpp).

    torchrun --nproc_per_node 2 calibration/microbench/pp_step_bench.py -o OUT.json [--steps 6]

Each rank holds `layers` GPT layers (tp_step_bench.TpLayer with TP 1: LayerNorm, QKV, flash causal
attention, output projection, GELU MLP 4h; bf16, no biases, no dropout). One step runs m micro-
batches through Megatron-LM's 1F1B schedule (Narayanan et al. 2021): stage 0 runs one warm-up
forward, then forward/backward pairs, then the last backward; stage 1 alternates forward and
backward. Activations go forward and their gradients back with NCCL send/recv (batched isend/irecv,
waited on before the consumer runs, as Megatron's p2p_communication does). Timed with CUDA events
around whole steps (the ranks barrier between steps), after one warm-up step; the slowest rank's
median step. Also timed: the stage's forward + backward of one micro-batch alone, back to back,
which gives the ideal 1F1B step (m + p - 1)(F + B) to compare the pipeline's overhead with.
"""
import argparse
import os
import statistics
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tp_step_bench import TpLayer, finish, start  # noqa: E402

VERSION = "pp_step_bench 1.0"


def p2p(send=None, send_to=None, recv_shape=None, recv_from=None):
    ops, buf = [], None
    if send is not None:
        ops.append(dist.P2POp(dist.isend, send.contiguous(), send_to))
    if recv_shape is not None:
        buf = torch.empty(recv_shape, device="cuda", dtype=torch.bfloat16)
        ops.append(dist.P2POp(dist.irecv, buf, recv_from))
    if ops:
        for req in dist.batch_isend_irecv(ops):
            req.wait()
    return buf


def run_case(name, layers, micro_batches, batch, seq, hidden, heads, steps):
    rank, world = dist.get_rank(), dist.get_world_size()
    assert world == 2
    torch.manual_seed(1 + rank)
    stack = [TpLayer(hidden, heads, 4 * hidden, 1) for _ in range(layers)]
    params = [p for layer in stack for p in layer.params()]
    shape = (batch, seq, hidden)
    x0 = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
    g_last = torch.randn(shape, device="cuda", dtype=torch.bfloat16)

    def forward(x):
        y = x
        for layer in stack:
            y = layer.forward(y)
        return y

    def step():
        for p in params:
            p.grad = None
        m = micro_batches
        if rank == 0:
            # warm-up forward of micro-batch 0; then forward i+1 with its activation sent and
            # the gradient of i received in one exchange, backward i; then backward m-1
            ys = [None] * m
            ys[0] = forward(x0)
            p2p(send=ys[0].detach(), send_to=1)
            for i in range(m - 1):
                ys[i + 1] = forward(x0)
                grad = p2p(send=ys[i + 1].detach(), send_to=1, recv_shape=shape, recv_from=1)
                ys[i].backward(grad)
                ys[i] = None
            ys[m - 1].backward(p2p(recv_shape=shape, recv_from=1))
        else:
            # forward i, backward i, then the gradient of i sent and activation i+1 received
            x = p2p(recv_shape=shape, recv_from=0)
            for i in range(m):
                x.requires_grad_()
                forward(x).backward(g_last)
                if i + 1 < m:
                    x = p2p(send=x.grad, send_to=0, recv_shape=shape, recv_from=0)
                else:
                    p2p(send=x.grad, send_to=0)

    def stage_alone():
        for p in params:
            p.grad = None
        x = x0.clone().requires_grad_()
        forward(x).backward(g_last)

    for _ in range(2):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(steps):
        dist.barrier()
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        step()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e) * 1000.0)
    # the stage alone, back to back (sustained clocks like the pipeline)
    alone = []
    for _ in range(3):
        stage_alone()
    torch.cuda.synchronize()
    for _ in range(2 * micro_batches):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        stage_alone()
        e.record()
        alone.append((s, e))
    torch.cuda.synchronize()
    alone = [a.elapsed_time(b) * 1000.0 for a, b in alone]
    mine = torch.tensor([statistics.median(times), statistics.median(alone)], device="cuda",
                        dtype=torch.float64)
    dist.all_reduce(mine, op=dist.ReduceOp.MAX)
    rec = {"name": name, "pp": world, "schedule": "1f1b", "layers_per_stage": layers,
           "micro_batches": micro_batches, "batch": batch, "seq": seq, "hidden": hidden, "heads": heads,
           "ffn": 4 * hidden, "dtype": "bf16", "attention": "flash causal", "steps": steps,
           "step_us": mine[0].item(), "stage_fwd_bwd_us": mine[1].item(),
           "ideal_1f1b_us": (micro_batches + world - 1) * mine[1].item(),
           "rank0_steps_us": times if rank == 0 else None}
    if rank == 0:
        print("%s: step %.1f us; stage fwd+bwd %.1f us; ideal (m+p-1)(F+B) %.1f us" % (
            name, rec["step_us"], rec["stage_fwd_bwd_us"], rec["ideal_1f1b_us"]), flush=True)
    del stack, params
    torch.cuda.empty_cache()
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--steps", type=int, default=6)
    a = ap.parse_args()
    start()
    cases = [("gpt_h4096_s4096_b1_l4_m8", 4, 8, 1, 4096, 4096, 32),
             ("gpt_h4096_s4096_b1_l4_m4", 4, 4, 1, 4096, 4096, 32)]
    results = [run_case(*c, a.steps) for c in cases]
    finish(a.out, "calibration/microbench/pp_step_bench.py", VERSION, results)

if __name__ == "__main__":
    main()
