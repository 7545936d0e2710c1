#!/usr/bin/env python3
"""A Llama-style training step in eager PyTorch and in a torch.compile'd build, timed and broken
down by kernel class: the measurement gcsim's `workload.framework` profiles are fitted on and
checked against (issue 16, "framework profiles").

    CUDA_VISIBLE_DEVICES=0 python3 framework_step.py -o OUT.json [--budget-s 250] [--quick]

The model (written as Hugging Face's Llama is, so eager issues the kernels a plain PyTorch user's
step issues): token embedding; per layer RMSNorm (fp32 upcast, pow, mean, rsqrt, mul, cast, weight
mul), one fused QKV linear, rotary embedding by rotate-half (neg, cat, mul, mul, add for q and k),
SDPA causal attention (PyTorch's default backend), output projection, residual add, RMSNorm, one
fused gate+up linear, SiLU and the gate product, down projection, residual add; final RMSNorm, LM
head, logits.float(), F.cross_entropy. No biases, no dropout, multi-head attention (kv_heads =
heads). Mixed precision is the torch.amp recipe: fp32 parameters, torch.autocast(bf16) around the
forward (weights cast to bf16 once per forward, fp32 residual stream, fp32 gradients), then
clip_grad_norm_(1.0) and torch.optim.AdamW (foreach, PyTorch's default on CUDA), then
zero_grad(set_to_none=True).

Builds:
  eager    the above as it is;
  compile  each decoder layer torch.compile'd on its own (torchtitan's per-block compile) and the
           final norm + head + loss compiled as one function; inductor's default mode (no CUDA
           graphs); the optimizer stays eager (the common setup).

Per (shape, build):
  step_us            median spacing of back-to-back steps (CUDA events at every step boundary,
                     the host never synchronises inside the run): the step time a user sees;
  phase_us           forward / backward / optimizer spans from events between the phases;
  host_us            host time to issue one step while the GPU is busy (stream back-logged with
                     torch.cuda._sleep, so the host never waits for the GPU); median of 5;
  kernels            torch.profiler (CUDA activity only) over 3 steps: per kernel name the count
                     and total time per step; classes (gemm, attention, elementwise, norm,
                     optimizer, other) summed by name rules (bench_common.class_of);
  peak memory        torch.cuda.max_memory_allocated over the timed steps.
Every point is guarded: a failure is recorded and the rest still runs; the JSON is rewritten after
every point. `--budget-s` skips points (compile ones first) that would not finish in time.
"""
import argparse
import json
import os
import statistics
import sys
import time
import traceback

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_common  # noqa: E402
from bench_common import class_of, profile_steps  # noqa: E402,F401

VERSION = "framework_step 1.0"
T0 = time.time()
log = bench_common.make_log(T0)

SHAPES = [
    # fit shape: per-kernel host cost and achievable elementwise bandwidth are fitted on it
    dict(name="llama_h2048_L4_s2048_b2", hidden=2048, heads=16, ffn=5632, layers=4, seq=2048, batch=2,
         vocab=32000, role="fit"),
    # launch-bound: a small model whose step the host issues slower than the GPU runs it
    dict(name="small_h512_L4_s256_b2", hidden=512, heads=8, ffn=1408, layers=4, seq=256, batch=2,
         vocab=8192, role="held-out, launch-bound"),
    dict(name="llama_h4096_L2_s4096_b1", hidden=4096, heads=32, ffn=11008, layers=2, seq=4096, batch=1,
         vocab=32000, role="held-out"),
    dict(name="llama_h2048_L4_s4096_b1_v128k", hidden=2048, heads=16, ffn=5632, layers=4, seq=4096,
         batch=1, vocab=128256, role="held-out, large vocabulary"),
]
QUICK = [dict(name="quick_h256_L2_s128_b2", hidden=256, heads=4, ffn=704, layers=2, seq=128, batch=2,
              vocab=1024, role="quick")]


# ----------------------------------------------------------------------------------------------
# the model (Hugging Face Llama's eager code paths)

class RMSNorm(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(h))

    def forward(self, x):
        dt = x.dtype
        x = x.to(torch.float32)
        var = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(var + 1e-5)
        return self.weight * x.to(dt)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class Block(nn.Module):
    def __init__(self, h, heads, ffn):
        super().__init__()
        self.heads, self.d = heads, h // heads
        self.norm1, self.norm2 = RMSNorm(h), RMSNorm(h)
        self.qkv = nn.Linear(h, 3 * h, bias=False)
        self.proj = nn.Linear(h, h, bias=False)
        self.fc1 = nn.Linear(h, 2 * ffn, bias=False)
        self.fc2 = nn.Linear(ffn, h, bias=False)

    def forward(self, x, cos, sin):
        b, s, h = x.shape
        y = self.norm1(x)
        q, k, v = self.qkv(y).view(b, s, 3, self.heads, self.d).transpose(1, 3).unbind(2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(o.transpose(1, 2).reshape(b, s, h))
        gate, up = self.fc1(self.norm2(x)).chunk(2, dim=-1)
        return x + self.fc2(F.silu(gate) * up)


class Llama(nn.Module):
    def __init__(self, sh):
        super().__init__()
        h, self.vocab = sh["hidden"], sh["vocab"]
        self.embed = nn.Embedding(sh["vocab"], h)
        self.blocks = nn.ModuleList(Block(h, sh["heads"], sh["ffn"]) for _ in range(sh["layers"]))
        self.norm = RMSNorm(h)
        self.head = nn.Linear(h, sh["vocab"], bias=False)
        d = h // sh["heads"]
        inv = 1.0 / (10000.0 ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
        f = torch.outer(torch.arange(sh["seq"], dtype=torch.float32), inv)
        emb = torch.cat((f, f), dim=-1)
        self.register_buffer("cos", emb.cos().to(torch.bfloat16), persistent=False)
        self.register_buffer("sin", emb.sin().to(torch.bfloat16), persistent=False)
        self.block_fns = [blk for blk in self.blocks]
        self.loss_fn = self.head_loss

    def head_loss(self, x, tgt):
        logits = self.head(self.norm(x))
        return F.cross_entropy(logits.float().view(-1, self.vocab), tgt.view(-1))

    def forward(self, idx, tgt):
        x = self.embed(idx)
        for fn in self.block_fns:
            x = fn(x, self.cos, self.sin)
        return self.loss_fn(x, tgt)


def compile_model(m):
    torch._dynamo.reset()  # every shape compiles from scratch, with static shapes
    m.block_fns = [torch.compile(blk, dynamic=False) for blk in m.blocks]
    m.loss_fn = torch.compile(m.head_loss, dynamic=False)


# ----------------------------------------------------------------------------------------------
# kernel classes

# ----------------------------------------------------------------------------------------------
# one (shape, build) point

def cycles_per_us():
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    torch.cuda._sleep(4_000_000)
    e.record()
    torch.cuda.synchronize()
    return 4_000_000 / (s.elapsed_time(e) * 1000.0)


def run_point(sh, build, steps):
    torch.manual_seed(1)
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    with torch.device("cuda"):  # initialised on the GPU: CPU init of 700M parameters takes seconds
        model = Llama(sh)
    if build == "compile":
        compile_model(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1)
    idx = torch.randint(0, sh["vocab"], (sh["batch"], sh["seq"]), device="cuda")
    tgt = torch.randint(0, sh["vocab"], (sh["batch"], sh["seq"]), device="cuda")
    marks = []
    marks_on = [False]

    def mark():
        if marks_on[0]:
            ev = torch.cuda.Event(enable_timing=True)
            ev.record()
            marks.append(ev)

    def step():
        mark()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(idx, tgt)
        mark()
        loss.backward()
        mark()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    t = time.time()
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    warm_s = time.time() - t
    log("  %s %s: warm-up (3 steps, compile included) %.1f s" % (sh["name"], build, warm_s))

    # back-to-back steps, events at every boundary
    cyc = cycles_per_us()
    torch.cuda.reset_peak_memory_stats()
    marks.clear()
    marks_on[0] = True
    torch.cuda._sleep(int(20_000 * cyc))  # 20 ms backlog so the first steps start queued
    for _ in range(steps):
        step()
    mark()
    torch.cuda.synchronize()
    marks_on[0] = False
    peak = torch.cuda.max_memory_allocated()
    el = lambda a, b: a.elapsed_time(b) * 1000.0  # noqa: E731
    starts = marks[0::3]
    step_us = [el(starts[i], starts[i + 1]) for i in range(len(starts) - 1)]
    fwd = [el(marks[3 * i], marks[3 * i + 1]) for i in range(steps)]
    bwd = [el(marks[3 * i + 1], marks[3 * i + 2]) for i in range(steps)]
    optm = [el(marks[3 * i + 2], marks[3 * i + 3]) for i in range(steps)]
    half = step_us[len(step_us) // 2:]

    # host issue time with the GPU busy
    host = []
    host_ok = True
    for _ in range(5):
        torch.cuda.synchronize()
        torch.cuda._sleep(int(min(200_000, 20 * statistics.median(step_us) + 20_000) * cyc))
        gate = torch.cuda.Event()
        gate.record()
        t = time.perf_counter()
        step()
        host.append((time.perf_counter() - t) * 1e6)
        host_ok = host_ok and not gate.query()  # still sleeping: the host never waited for the GPU
        torch.cuda.synchronize()
    kernels, classes = profile_steps(step, 3)
    rec = {"shape": sh, "build": build, "steps": steps, "warmup_s": warm_s,
           "step_us": statistics.median(step_us), "step_us_second_half": statistics.median(half),
           "step_us_min": min(step_us), "step_us_p90": sorted(step_us)[int(0.9 * (len(step_us) - 1))],
           "step_all_us": step_us,
           "phase_us": {"forward": statistics.median(fwd), "backward": statistics.median(bwd),
                        "optimizer": statistics.median(optm)},
           "host_us": statistics.median(host), "host_all_us": host, "host_backlog_ok": host_ok,
           "kernels_per_step": sum(k["per_step_count"] for k in kernels),
           "kernel_sum_us": sum(k["per_step_us"] for k in kernels),
           "classes": classes, "kernels": kernels, "peak_memory_bytes": peak,
           "params": sum(p.numel() for p in model.parameters()),
           "optimizer_defaults": {k: str(v) for k, v in opt.defaults.items()}}
    log("  %s %s: step %.1f us (fwd %.1f bwd %.1f opt %.1f), host %.1f us, %d kernels/step, kernel sum %.1f us" % (
        sh["name"], build, rec["step_us"], rec["phase_us"]["forward"], rec["phase_us"]["backward"],
        rec["phase_us"]["optimizer"], rec["host_us"], rec["kernels_per_step"], rec["kernel_sum_us"]))
    for c, v in sorted(classes.items()):
        log("     %-12s %9.1f us  %6.1f kernels" % (c, v["us"], v["count"]))
    for k in kernels[:25]:
        log("     %8.1f us %6.1f x  %-11s %s" % (k["per_step_us"], k["per_step_count"], k["class"], k["name"][:100]))
    del model, opt
    torch.cuda.empty_cache()
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--budget-s", type=float, default=250.0)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = True
    out = bench_common.ResultsFile(a.out, "gcsim.framework_step.v1", __file__, VERSION, T0, method=__doc__)
    doc, save = out.doc, out.save
    save()
    shapes = QUICK if a.quick else SHAPES
    # eager everywhere first (cheap), then compile: fit shape, small, the rest, while time is left.
    plan = [(s, "eager") for s in shapes] + [(s, "compile") for s in shapes]
    cost_guess_s = {"eager": 12.0, "compile": 60.0}
    for sh, build in plan:
        left = a.budget_s - (time.time() - T0)
        if left < cost_guess_s[build]:
            doc["skipped"].append({"shape": sh["name"], "build": build, "reason": "%.0f s left" % left})
            log("skip %s %s: %.0f s left" % (sh["name"], build, left))
            continue
        try:
            doc["results"].append(run_point(sh, build, a.steps))
        except Exception as ex:  # noqa: BLE001
            doc["errors"].append({"shape": sh["name"], "build": build, "error": repr(ex),
                                  "traceback": traceback.format_exc()})
            log("FAILED %s %s: %r" % (sh["name"], build, ex))
            torch.cuda.empty_cache()
        save()
    out.finish(log)


if __name__ == "__main__":
    main()
