#!/usr/bin/env python3
"""A tensor-parallel GPT layer stack, forward and backward, timed on real GPUs with NCCL: the
measurement a gcsim `training` run with the same model and TP is checked against
(tests/scenario/test_training_measured.cpp).

    torchrun --nproc_per_node N calibration/microbench/tp_step_bench.py -o OUT.json [--seconds 8]

Megatron-LM's tensor parallelism (Shoeybi et al. 2019), no sequence parallelism: per layer
    y = LayerNorm(x); f(y): identity forward, all-reduce of the gradient backward
    qkv = y W_qkv^T (3h/t columns); o = SDPA(q, k, v, causal, flash) over heads/t
    x1 = x + g(o W_o^T)      g: all-reduce forward, identity backward
    z = LayerNorm(x1); x2 = x1 + g(GELU(f(z) W_up^T) W_down^T)       (W_up: 4h/t x h)
bf16, no linear biases, no dropout. x is [batch, seq, hidden]; the stack's output gets a fixed
random gradient. Timed with CUDA events on each rank, back to back (the GPUs at their sustained,
power-capped clocks, as a training step runs): each step's fwd+bwd, for `--seconds`, after 3
warm-up steps; reported per case: the median of the second half of the steps (sustained) and of
the first five (near rested), the slowest rank's. Parameter gradients are set to None between
steps (no accumulation kernels), no optimizer.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_timing as tt  # noqa: E402

VERSION = "tp_step_bench 1.0"

# Ranks in the tensor-parallel group: all of them here (main sets it); 1 when another script uses
# TpLayer without TP (pp_step_bench.py).
TP = {"size": 1}


class CopyToTp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        if TP["size"] > 1:
            g = g.contiguous()
            dist.all_reduce(g)
        return g


class ReduceFromTp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        if TP["size"] > 1:
            dist.all_reduce(x)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g


class TpLayer:
    def __init__(self, hidden, heads, ffn, t):
        bf = torch.bfloat16
        init = lambda *s: (torch.randn(*s, device="cuda", dtype=bf) * s[-1] ** -0.5).requires_grad_()  # noqa: E731
        self.h, self.heads, self.t = hidden, heads // t, t
        self.ln = [((1 + 0.1 * torch.randn(hidden, device="cuda", dtype=bf)).requires_grad_(),
                    (0.1 * torch.randn(hidden, device="cuda", dtype=bf)).requires_grad_()) for _ in range(2)]
        self.w_qkv = init(3 * hidden // t, hidden)
        self.w_o = init(hidden, hidden // t)
        self.w_up = init(ffn // t, hidden)
        self.w_down = init(hidden, ffn // t)

    def params(self):
        return [p for pair in self.ln for p in pair] + [self.w_qkv, self.w_o, self.w_up, self.w_down]

    def forward(self, x):
        b, s, h = x.shape
        d = h // (self.heads * self.t)
        y = CopyToTp.apply(F.layer_norm(x, (h,), *self.ln[0]))
        qkv = y @ self.w_qkv.t()
        q, k, v = qkv.view(b, s, 3, self.heads, d).permute(2, 0, 3, 1, 4).unbind(0)
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        o = o.transpose(1, 2).reshape(b, s, h // self.t)
        x1 = x + ReduceFromTp.apply(o @ self.w_o.t())
        z = CopyToTp.apply(F.layer_norm(x1, (h,), *self.ln[1]))
        return x1 + ReduceFromTp.apply(F.gelu(z @ self.w_up.t()) @ self.w_down.t())


def start():
    """Joins the NCCL process group torchrun set up, on this rank's GPU."""
    dist.init_process_group("nccl")
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))


def timed_steps(step, seconds):
    """Runs `step` back to back for `seconds` (at least 10 times) after 3 warm-ups, one CUDA event pair
    each, the host at most 4 steps ahead; returns every step's time (us) and the median of the
    second half (the GPUs at sustained clocks)."""
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    dist.barrier()
    events = []
    tt.backlog(2000)
    t_end = time.perf_counter() + seconds
    while time.perf_counter() < t_end or len(events) < 10:
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        step()
        e.record()
        events.append((s, e))
        if len(events) % 4 == 0:
            e.synchronize()
    torch.cuda.synchronize()
    times = [a.elapsed_time(b) * 1000.0 for a, b in events]
    return times, statistics.median(times[len(times) // 2:])


def finish(out_path, script, version, results):
    """Rank 0 writes the results with the machine's, NCCL's and the script's provenance; then every
    rank leaves the process group."""
    if dist.get_rank() == 0:
        meta = tt.provenance(script, version)
        meta["world_size"] = dist.get_world_size()
        meta["nccl"] = ".".join(str(v) for v in torch.cuda.nccl.version())
        meta["env"] = {k: v for k, v in os.environ.items() if k.startswith("NCCL_")}
        meta["nvidia_smi_end"] = tt.nvsmi("clocks.sm,clocks.mem,power.draw,clocks_event_reasons.active")
        with open(out_path, "w") as f:
            json.dump({"schema": "gcsim.microbench.v1", "meta": meta, "results": results}, f, indent=1)
    dist.barrier()
    dist.destroy_process_group()


def run_case(name, layers, batch, seq, hidden, heads, seconds):
    t = dist.get_world_size()
    torch.manual_seed(1)  # the same weights and inputs on every rank (replicated x)
    stack = [TpLayer(hidden, heads, 4 * hidden, t) for _ in range(layers)]
    x = torch.randn(batch, seq, hidden, device="cuda", dtype=torch.bfloat16)
    g = torch.randn(batch, seq, hidden, device="cuda", dtype=torch.bfloat16)
    params = [p for layer in stack for p in layer.params()]

    def step():
        for p in params:
            p.grad = None
        y = x
        for layer in stack:
            y = layer.forward(y)
        y.backward(g)

    times, sustained = timed_steps(step, seconds)
    mine = torch.tensor([sustained, statistics.median(times[:5])], device="cuda",
                        dtype=torch.float64)
    dist.all_reduce(mine, op=dist.ReduceOp.MAX)
    rec = {"name": name, "tp": t, "layers": layers, "batch": batch, "seq": seq, "hidden": hidden,
           "heads": heads, "ffn": 4 * hidden, "dtype": "bf16", "attention": "flash causal",
           "steps": len(times), "sustained_us": mine[0].item(), "first_steps_us": mine[1].item(),
           "rank0_all_us": times if dist.get_rank() == 0 else None}
    if dist.get_rank() == 0:
        print("%s tp%d: %d steps, sustained %.1f us, first five %.1f us" % (
            name, t, len(times), rec["sustained_us"], rec["first_steps_us"]), flush=True)
    del stack, x, g, params
    torch.cuda.empty_cache()
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--seconds", type=float, default=8.0)
    a = ap.parse_args()
    start()
    TP["size"] = dist.get_world_size()
    cases = [("gpt_h8192_s4096_b1_l4", 4, 1, 4096, 8192, 64),
             ("gpt_h4096_s4096_b2_l4", 4, 2, 4096, 4096, 32)]
    results = [run_case(*c, a.seconds) for c in cases]
    finish(a.out, "calibration/microbench/tp_step_bench.py", VERSION, results)

if __name__ == "__main__":
    main()
