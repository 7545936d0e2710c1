#!/usr/bin/env python3
"""Where torch.compile folds the RMSNorm backward's weight gradient into the input gradient's kernel.

    python3 calibration/microbench/compiled_norm_fold.py -o FILE.json

strategy_step_bench.py's compiled steps showed inductor computing the norm weight's gradient as
its own kernel (triton_red_fused_mul_sum, over the gradient and the input again) at 4096 tokens a
micro-batch, and as partial sums inside the input gradient's persistent kernel
(triton_per_fused_..._pow_sum plus an ATen reduce_kernel over the partials) at 8192 and more.
This probes the tokens in between: per token count, the compiled pieces the bench compiles under
TP (`attn_in`: the norm alone; `mlp_in`: the residual add and the norm), hidden 4096, fp32
residual stream, autocast bf16, one forward and backward profiled after warm-up; every CUDA
kernel of the backward with its duration (torch.profiler), and which form inductor chose.
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_common  # noqa: E402

VERSION = "1.0"
T0 = time.time()
log = bench_common.make_log(T0)
HIDDEN = 4096
TOKENS = [4096, 5120, 6144, 7168, 8192, 12288, 16384]


class RMSNorm(nn.Module):  # framework_step.py's
    def __init__(self, h):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(h))

    def forward(self, x):
        dt = x.dtype
        x = x.to(torch.float32)
        var = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(var + 1e-5)
        return self.weight * x.to(dt)


class Pieces(nn.Module):  # strategy_step_bench.py's Block.attn_in and mlp_in
    def __init__(self, h):
        super().__init__()
        self.norm1, self.norm2 = RMSNorm(h), RMSNorm(h)

    def attn_in(self, x):
        return self.norm1(x)

    def mlp_in(self, x, a):
        x1 = x + a
        return x1, self.norm2(x1)


def form(names):
    separate = any("triton_red_fused_mul_sum" in n for n in names)
    fused = any(n.startswith("triton_per_fused") and "pow_sum" in n for n in names)
    return "separate" if separate and not fused else "fused" if fused and not separate else "mixed/other"


def probe(piece_name, tokens):
    torch._dynamo.reset()
    m = Pieces(HIDDEN).cuda()
    fn = torch.compile(getattr(m, piece_name), dynamic=False)
    x = torch.randn(1, tokens, HIDDEN, device="cuda", requires_grad=True)
    a = torch.randn(1, tokens, HIDDEN, device="cuda", dtype=torch.bfloat16, requires_grad=True)

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = fn(x) if piece_name == "attn_in" else fn(x, a)
        outs = out if isinstance(out, tuple) else (out,)
        grads = [torch.ones_like(o) for o in outs]
        torch.autograd.backward(outs, grads)

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    kernels = []
    for ev in prof.events():
        dt = getattr(ev, "device_type", None)
        if dt is None or not str(dt).endswith("CUDA"):
            continue
        kernels.append({"name": ev.name, "us": ev.time_range.elapsed_us()})
    names = [k["name"] for k in kernels]
    return {"piece": piece_name, "tokens": tokens, "form": form(names), "kernels": kernels}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--budget-s", type=float, default=150.0)
    a = ap.parse_args()
    out = bench_common.ResultsFile(a.out, "gcsim.compiled_norm_fold.v1", __file__, VERSION, T0,
                                   method=__doc__, hidden=HIDDEN)
    for piece_name in ("attn_in", "mlp_in"):
        for tokens in TOKENS:
            if time.time() - T0 > a.budget_s:
                out.doc["skipped"].append({"piece": piece_name, "tokens": tokens, "reason": "budget"})
                continue
            try:
                r = probe(piece_name, tokens)
            except Exception as ex:  # noqa: BLE001
                out.doc["errors"].append({"piece": piece_name, "tokens": tokens, "error": repr(ex)[:2000]})
                out.save()
                continue
            out.doc["results"].append(r)
            log("%s %5d tokens: %s; %s" % (piece_name, tokens, r["form"], ", ".join(
                "%s %.1f" % (k["name"][:40], k["us"]) for k in r["kernels"] if "triton" in k["name"]
                or "reduce_kernel" in k["name"])))
            out.save()
    out.finish(log)


if __name__ == "__main__":
    main()
