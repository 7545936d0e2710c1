#!/usr/bin/env python3
"""Data parallelism with the gradient all-reduce overlapping the backward, timed on real GPUs: the
measurement a gcsim `training` run with DP is checked against
(tests/scenario/test_training_measured.cpp).

    torchrun --nproc_per_node N calibration/microbench/dp_step_bench.py -o OUT.json [--seconds 8]

The model is tp_step_bench.TpLayer without TP (four GPT layers: LayerNorm, QKV, flash causal
attention, output projection, GELU MLP 4h; bf16, no biases, no dropout) wrapped in PyTorch's
DistributedDataParallel with 80 MB buckets (bucket_cap_mb=76.29, i.e. 80e6 bytes, Megatron's
40M-parameter bucket in bf16): each bucket's NCCL all-reduce starts as soon as its gradients are
ready, beside the rest of the backward. Timed per step (forward + backward, whose end waits for
the last all-reduce), back to back for `--seconds` after 3 warm-up steps, the slowest rank's
median over the second half; also the same model without DDP on each GPU (no communication).
"""
import argparse
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tp_step_bench import TpLayer, finish, start, timed_steps  # noqa: E402

VERSION = "dp_step_bench 1.0"
BUCKET_BYTES = 80_000_000


class Stack(torch.nn.Module):
    def __init__(self, layers, hidden, heads):
        super().__init__()
        self.layers = [TpLayer(hidden, heads, 4 * hidden, 1) for _ in range(layers)]
        # Registered in the order of use, so DDP's buckets follow the backward (last layer first).
        self.params = torch.nn.ParameterList()
        for layer in self.layers:
            for i, p in enumerate(layer.params()):
                q = torch.nn.Parameter(p.detach())
                self.params.append(q)
            layer.ln = [(self.params[-8], self.params[-7]), (self.params[-6], self.params[-5])]
            layer.w_qkv, layer.w_o, layer.w_up, layer.w_down = (self.params[-4], self.params[-3],
                                                                 self.params[-2], self.params[-1])

    def forward(self, x):
        for layer in self.layers:
            x = layer.forward(x)
        return x


def run_case(name, layers, batch, seq, hidden, heads, seconds):
    torch.manual_seed(1)
    model = Stack(layers, hidden, heads)
    x = torch.randn(batch, seq, hidden, device="cuda", dtype=torch.bfloat16)
    g = torch.randn(batch, seq, hidden, device="cuda", dtype=torch.bfloat16)

    def plain_step():
        for p in model.parameters():
            p.grad = None
        model(x).backward(g)

    _, alone = timed_steps(plain_step, seconds / 2)
    ddp = DDP(model, bucket_cap_mb=BUCKET_BYTES / 2**20)

    def ddp_step():
        for p in model.parameters():
            p.grad = None
        ddp(x).backward(g)

    times, dp = timed_steps(ddp_step, seconds)
    mine = torch.tensor([dp, alone], device="cuda", dtype=torch.float64)
    dist.all_reduce(mine, op=dist.ReduceOp.MAX)
    grad_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    rec = {"name": name, "dp": dist.get_world_size(), "layers": layers, "batch": batch, "seq": seq,
           "hidden": hidden, "heads": heads, "ffn": 4 * hidden, "dtype": "bf16",
           "attention": "flash causal", "bucket_bytes": BUCKET_BYTES, "gradient_bytes": grad_bytes,
           "steps": len(times), "step_us": mine[0].item(), "no_comm_us": mine[1].item(),
           "rank0_all_us": times if dist.get_rank() == 0 else None}
    if dist.get_rank() == 0:
        print("%s dp%d: %d steps, step %.1f us, without DDP %.1f us, %.2f GB of gradients" % (
            name, rec["dp"], len(times), rec["step_us"], rec["no_comm_us"], grad_bytes / 1e9), flush=True)
    del ddp, model
    torch.cuda.empty_cache()
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--seconds", type=float, default=8.0)
    a = ap.parse_args()
    start()
    cases = [("gpt_h4096_s4096_b2_l4", 4, 2, 4096, 4096, 32),
             ("gpt_h4096_s2048_b1_l4", 4, 1, 2048, 4096, 32)]
    results = [run_case(*c, a.seconds) for c in cases]
    finish(a.out, "calibration/microbench/dp_step_bench.py", VERSION, results)

if __name__ == "__main__":
    main()
