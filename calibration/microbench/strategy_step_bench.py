#!/usr/bin/env python3
"""One Llama-style training step (forward, backward, clip, AdamW) on 4 GPUs under several
TP / PP / DP strategies, in eager PyTorch and torch.compile'd: the measurement gcsim's
`workload.framework` profiles are checked against on more than one GPU (issue 16;
tests/scenario/test_strategy_measured.cpp, configs calibration/validation/strategy_step/).

    torchrun --standalone --nproc_per_node 4 strategy_step_bench.py -o OUT.json [--budget-s 300]

The model is framework_step.py's (Hugging Face Llama's eager code paths): 8 layers, hidden 4096,
32 heads (MHA, head dim 128: the default SDPA backend is the same for every strategy), SwiGLU
ffn 11008, RMSNorm (fp32 upcast), rotary by rotate-half, vocabulary 32000, untied head, no
biases, no dropout; sequence 4096; torch.autocast(bf16) over fp32 parameters (fp32 residual
stream, fp32 gradients), clip_grad_norm_(1.0) and foreach AdamW, zero_grad(set_to_none).
Global batch: 8 sequences of 4096 tokens in every strategy.

Strategies (rank = tp_rank + tp * (dp_rank + dp * pp_rank): TP innermost, then DP, then PP, as
gcsim's default order tp-cp-ep-dp-pp):
  DP4       DistributedDataParallel (default 25 MiB buckets, all-reduce overlapping the backward),
            one micro-batch of 2 sequences per rank;
  TP4       Megatron-LM tensor parallelism without sequence parallelism: QKV and gate+up column-
            parallel, output and down projections row-parallel with an all-reduce of their output
            forward (and of the column inputs' gradients backward); vocabulary-parallel
            embedding (all-reduce), head and cross entropy (Megatron's: max, target-logit and
            sum-exp all-reduces); one micro-batch of 8 sequences;
  TP2xDP2   both (DDP over the DP group), one micro-batch of 4 sequences per DP rank;
  PP2xDP2, PP4, TP2xPP2
            Megatron-LM's 1F1B schedule (forward_backward_pipelining_without_interleaving) with
            batched NCCL isend/irecv of the fp32 activations and their gradients (each TP rank
            sends the whole activation), micro-batches of 1 sequence (PP2xDP2: 4 per DP rank;
            PP4 and TP2xPP2: 8), gradients accumulated in .grad (fp32), the loss divided by the
            micro-batches; with DP, the stage is wrapped in DDP as torch.distributed.pipelining
            does it: forwards and all but the last micro-batch's backward under no_sync(), the
            reducer armed (prepare_for_backward) for the last backward, whose bucket all-reduces
            overlap it;
  DP4flush  data parallelism without overlap (the issue's "after-flush"): no DDP; after the
            backward the gradients are copied into one flat fp32 buffer (torch._foreach_copy_), all-
            reduced once (NCCL's average) and copied back, as Megatron-LM's DDP with
            overlap_grad_reduce=False reduces its contiguous buffer after the flush;
  the clip's squared norm is all-reduced over the model-parallel (TP x PP) group.
Builds: eager; compile = each decoder layer torch.compile'd (TP 1: the whole layer, torchtitan's
per-block compile; TP > 1: the four pieces between the TP collectives, which stay eager), the
final norm + head + loss compiled (TP 1) or the final norm (TP > 1); inductor's default mode,
dynamo's DDP optimizer off (no graph splits at buckets), the optimizer eager.

Per (strategy, build), on every rank:
  step_us            median of back-to-back step times (CUDA events at every step boundary, the host
                     at most 2 steps ahead) after 3 warm-up steps; reported: each rank's and the max;
  peak memory        torch.cuda.max_memory_allocated over the timed steps; memory_allocated between
                     steps (parameters, optimizer states, DDP buckets);
  kernel classes     torch.profiler (CUDA activity) over 2 steps: kernel durations per step summed by
                     class (gemm, attention, elementwise, norm, optimizer, communication, other;
                     class_of below), every rank; rank 0's per-kernel table.
Options for a narrower run (issue 16's per-rank look; the defaults run and write as before):
  --points NAME:BUILD,...  only these points, in this order (a bad one: exit 2);
  --all-rank-kernels       each rank's kernel table in its rank record ("kernels", as rank0_kernels);
  --timeline               each rank's kernels of one profiled step in its rank record ("timeline":
                           a names table [name cut to 160 characters, class], rows [name index,
                           CUDA stream, start us from the step's start, duration us], and the
                           stream a blocking 1-element all-reduce on each of the rank's TP, DP and
                           model-parallel groups ran on before the steps: in PyTorch 2.11 the
                           caller's (compute) stream for every group, as for the step's TP
                           all-reduces; DDP's asynchronous bucket all-reduces run on the DP
                           group's own NCCL stream); the JSON is then written without indentation.
Each point is guarded (a Python failure on every rank is recorded and the rest still runs); rank 0
rewrites the JSON after every point; rank 0 decides from `--budget-s` whether a point still fits
and tells the others. NCCL's timeout is 240 s so a rank left waiting ends the run, not the budget.
"""
import argparse
import contextlib
import datetime
import gc
import json
import os
import statistics
import sys
import time
import traceback

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_timing as tt  # noqa: E402
from bench_common import class_of, gather, make_log, profile_steps, timed_steps  # noqa: E402,F401
from framework_step import RMSNorm, rotate_half  # noqa: E402  (Hugging Face Llama's eager code paths)
import bench_common  # noqa: E402

VERSION = "strategy_step_bench 1.3"
T0 = time.time()
log = make_log(T0)

MODEL = dict(name="llama_h4096_L8_s4096", layers=8, hidden=4096, heads=32, ffn=11008, vocab=32000,
             seq=4096, global_batch=8)
# --model gqa: a second model, for held-out checks (shapes no fit has seen): Llama 3's vocabulary
# (128256: a head and cross entropy as large as four layers) and grouped-query attention (8 KV
# heads of 128, SDPA's enable_gqa as Hugging Face calls it on torch >= 2.5), hidden 3072 and
# SwiGLU 8192 (Llama 3.2 3B's widths), 8 layers, sequence 4096, the same global batch.
MODELS = {"mha": MODEL,
          "gqa": dict(name="llama3_h3072_L8_s4096_gqa8", layers=8, hidden=3072, heads=24, kv_heads=8,
                      ffn=8192, vocab=128256, seq=4096, global_batch=8)}

# (name, tp, pp, dp); micro-batch = global / dp without PP (one micro-batch), 1 sequence with PP.
STRATEGIES = [("DP4", 1, 1, 4), ("TP4", 4, 1, 1), ("TP2xDP2", 2, 1, 2), ("PP2xDP2", 1, 2, 2),
              ("PP4", 1, 4, 1), ("TP2xPP2", 2, 2, 1), ("DP4flush", 1, 1, 4)]
# Data parallelism after the flush (no overlap): no DDP; after the backward every gradient is copied
# into one flat fp32 buffer (one foreach copy), all-reduced once with NCCL's average and copied back,
# as Megatron-LM's DDP with overlap_grad_reduce=False reduces its contiguous buffer.
AFTER_FLUSH = {"DP4flush"}
# compiled: these three first (the swapped pair TP4 / TP2xPP2 among them), the rest if time
COMPILE_ORDER = ["DP4", "TP4", "TP2xPP2", "TP2xDP2", "PP2xDP2", "PP4", "DP4flush"]
COST_GUESS_S = {"eager": 20.0, "compile": 50.0}  # framework_step: compile warm-up 4-10 s


# ----------------------------------------------------------------------------------------------
# tensor-parallel regions (Megatron-LM's f and g)

class CopyToTp(torch.autograd.Function):
    """Identity forward; all-reduce of the gradient backward."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x

    @staticmethod
    def backward(ctx, g):
        g = g.contiguous()
        dist.all_reduce(g, group=ctx.group)
        return g, None


class ReduceFromTp(torch.autograd.Function):
    """All-reduce forward (in place); identity backward."""

    @staticmethod
    def forward(ctx, x, group):
        dist.all_reduce(x, group=group)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g, None


def copy_to_tp(x, group):
    return x if group is None else CopyToTp.apply(x, group)


def reduce_from_tp(x, group):
    return x if group is None else ReduceFromTp.apply(x, group)


class VocabParallelCrossEntropy(torch.autograd.Function):
    """Megatron-LM's cross entropy over vocabulary-split fp32 logits [N, V/t]; mean over N."""

    @staticmethod
    def forward(ctx, logits, target, group, vocab_start):
        m = logits.max(dim=-1)[0]
        dist.all_reduce(m, op=dist.ReduceOp.MAX, group=group)
        z = logits - m.unsqueeze(-1)
        vl = z.size(-1)
        outside = (target < vocab_start) | (target >= vocab_start + vl)
        local = (target - vocab_start).masked_fill(outside, 0)
        pred = z.gather(-1, local.unsqueeze(-1)).squeeze(-1).masked_fill(outside, 0.0)
        dist.all_reduce(pred, group=group)
        z.exp_()
        sum_exp = z.sum(dim=-1)
        dist.all_reduce(sum_exp, group=group)
        loss = torch.log(sum_exp) - pred
        z.div_(sum_exp.unsqueeze(-1))
        ctx.save_for_backward(z, outside, local)
        return loss.mean()

    @staticmethod
    def backward(ctx, g):
        softmax, outside, local = ctx.saved_tensors
        n = softmax.size(0)
        rows = torch.arange(n, device=softmax.device)
        softmax[rows, local] -= 1.0 - outside.float()
        softmax.mul_(g / n)
        return softmax, None, None, None


# ----------------------------------------------------------------------------------------------
# the model (framework_step.py's, split over TP ranks and pipeline stages)

class Block(nn.Module):
    """A decoder layer; with TP its linears hold this rank's columns (QKV, gate+up) or rows
    (output, down) and the f/g regions sit between the four pieces."""

    def __init__(self, h, heads, ffn, t, group, kv_heads=None):
        super().__init__()
        self.h, self.heads, self.d, self.group = h, heads // t, h // heads, group
        self.kv = (kv_heads or heads) // t  # this rank's KV heads (GQA: fewer than its query heads)
        self.norm1, self.norm2 = RMSNorm(h), RMSNorm(h)
        self.qkv = nn.Linear(h, (self.heads + 2 * self.kv) * self.d, bias=False)
        self.proj = nn.Linear(h // t, h, bias=False)
        self.fc1 = nn.Linear(h, 2 * ffn // t, bias=False)
        self.fc2 = nn.Linear(ffn // t, h, bias=False)
        self.f_attn_in, self.f_attn_core = self.attn_in, self.attn_core
        self.f_mlp_in, self.f_mlp_core = self.mlp_in, self.mlp_core

    def attn_in(self, x):
        return self.norm1(x)

    def attn_core(self, y, cos, sin):
        b, s, _ = y.shape
        if self.kv == self.heads:  # MHA: the layout every earlier measurement ran
            q, k, v = self.qkv(y).view(b, s, 3, self.heads, self.d).transpose(1, 3).unbind(2)
        else:  # GQA: [q heads | k heads | v heads] columns, each [b, heads, s, d]
            q, k, v = (t.view(b, s, -1, self.d).transpose(1, 2) for t in self.qkv(y).split(
                [self.heads * self.d, self.kv * self.d, self.kv * self.d], dim=-1))
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=self.kv != self.heads)
        return self.proj(o.transpose(1, 2).reshape(b, s, self.heads * self.d))

    def mlp_in(self, x, a):
        x1 = x + a
        return x1, self.norm2(x1)

    def mlp_core(self, z):
        gate, up = self.fc1(z).chunk(2, dim=-1)
        return self.fc2(F.silu(gate) * up)

    def forward(self, x, cos, sin):
        y = copy_to_tp(self.f_attn_in(x), self.group)
        a = reduce_from_tp(self.f_attn_core(y, cos, sin), self.group)
        x1, z = self.f_mlp_in(x, a)
        z = copy_to_tp(z, self.group)
        return x1 + reduce_from_tp(self.f_mlp_core(z), self.group)


class Stage(nn.Module):
    """One pipeline stage of one TP rank: the embedding on the first, the final norm, head and loss
    on the last."""

    def __init__(self, m, layers, first, last, t, tp_rank, group):
        super().__init__()
        h, self.vocab, self.t, self.group = m["hidden"], m["vocab"], t, group
        self.first, self.last = first, last
        self.vocab_start = tp_rank * (m["vocab"] // t)
        if first:
            self.embed = nn.Embedding(m["vocab"] // t, h)
        self.blocks = nn.ModuleList(Block(h, m["heads"], m["ffn"], t, group, m.get("kv_heads")) for _ in range(layers))
        if last:
            self.norm = RMSNorm(h)
            self.head = nn.Linear(h, m["vocab"] // t, bias=False)
        d = h // m["heads"]
        inv = 1.0 / (10000.0 ** (torch.arange(0, d, 2, dtype=torch.float32, device="cuda") / d))
        f = torch.outer(torch.arange(m["seq"], dtype=torch.float32, device="cuda"), inv)
        emb = torch.cat((f, f), dim=-1)
        self.cos, self.sin = emb.cos().to(torch.bfloat16), emb.sin().to(torch.bfloat16)  # not buffers
        self.block_fns = list(self.blocks)
        self.head_loss_fn = self.head_loss if group is None else self.head_loss_tp
        self.norm_fn = self.final_norm  # a method, not the module: no second registration

    def final_norm(self, x):
        return self.norm(x)

    def embed_tokens(self, idx):
        if self.group is None:
            return self.embed(idx)
        outside = (idx < self.vocab_start) | (idx >= self.vocab_start + self.vocab // self.t)
        x = self.embed((idx - self.vocab_start).masked_fill(outside, 0))
        x = x.masked_fill(outside.unsqueeze(-1), 0.0)
        return reduce_from_tp(x, self.group)

    def head_loss(self, x, tgt):
        logits = self.head(self.norm(x))
        return F.cross_entropy(logits.float().view(-1, self.vocab), tgt.view(-1))

    def head_loss_tp(self, x, tgt):
        logits = self.head(copy_to_tp(self.norm_fn(x), self.group)).float()
        return VocabParallelCrossEntropy.apply(logits.view(-1, logits.size(-1)), tgt.view(-1), self.group,
                                               self.vocab_start)

    def forward(self, x, tgt=None):
        if self.first:
            x = self.embed_tokens(x)
        for fn in self.block_fns:
            x = fn(x, self.cos, self.sin)
        return self.head_loss_fn(x, tgt) if self.last else x


def compile_stage(st):
    if st.group is None:
        st.block_fns = [torch.compile(b, dynamic=False) for b in st.blocks]
        if st.last:
            st.head_loss_fn = torch.compile(st.head_loss, dynamic=False)
        return
    for b in st.blocks:
        b.f_attn_in = torch.compile(b.attn_in, dynamic=False)
        b.f_attn_core = torch.compile(b.attn_core, dynamic=False)
        b.f_mlp_in = torch.compile(b.mlp_in, dynamic=False)
        b.f_mlp_core = torch.compile(b.mlp_core, dynamic=False)
    if st.last:
        st.norm_fn = torch.compile(st.final_norm, dynamic=False)


# ----------------------------------------------------------------------------------------------
# process groups

_GROUPS = {}


def group_of(ranks):
    """The process group of `ranks` (None for one rank: no collective); every rank calls this for
    every group in the same order, as new_group requires."""
    key = tuple(sorted(ranks))
    if len(key) == 1:
        return None
    if len(key) == dist.get_world_size():
        return dist.group.WORLD
    if key not in _GROUPS:
        _GROUPS[key] = dist.new_group(list(key))
    return _GROUPS[key]


class Layout:
    def __init__(self, tp, pp, dp):
        self.tp, self.pp, self.dp = tp, pp, dp
        rank = dist.get_rank()
        self.t, self.d, self.p = rank % tp, (rank // tp) % dp, rank // (tp * dp)
        r = self.rank_of
        tp_sets = [[r(t, d, p) for t in range(tp)] for p in range(pp) for d in range(dp)]
        dp_sets = [[r(t, d, p) for d in range(dp)] for p in range(pp) for t in range(tp)]
        mp_sets = [[r(t, d, p) for p in range(pp) for t in range(tp)] for d in range(dp)]
        mine = lambda sets: next(s for s in sets if rank in s)  # noqa: E731
        groups = {}
        for name, sets in (("tp", tp_sets), ("dp", dp_sets), ("mp", mp_sets)):
            for s in sets:
                g = group_of(s)
                if s == mine(sets):
                    groups[name] = g
        self.tp_group, self.dp_group, self.mp_group = groups["tp"], groups["dp"], groups["mp"]
        for g in (self.tp_group, self.dp_group, self.mp_group):  # communicators up before timing
            if g is not None:
                dist.all_reduce(torch.zeros(1, device="cuda"), group=g)
        self.prev = r(self.t, self.d, self.p - 1) if self.p > 0 else None
        self.next = r(self.t, self.d, self.p + 1) if self.p + 1 < pp else None

    def rank_of(self, t, d, p):
        return t + self.tp * (d + self.dp * p)


# ----------------------------------------------------------------------------------------------
# the step

def p2p(ops):
    """Megatron's batched p2p: every (op, tensor, peer) issued in one NCCL group, then waited on."""
    if ops:
        for req in dist.batch_isend_irecv([dist.P2POp(op, t, peer) for op, t, peer in ops]):
            req.wait()


def clip_grads(params, mp_group):
    """clip_grad_norm_(1.0); with model parallelism the squared norm is summed over its ranks."""
    if mp_group is None:
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        return
    grads = [p.grad for p in params if p.grad is not None]
    norms = torch._foreach_norm(grads, 2.0)
    total_sq = torch.linalg.vector_norm(torch.stack(norms), 2.0) ** 2
    dist.all_reduce(total_sq, group=mp_group)
    coef = torch.clamp(1.0 / (total_sq.sqrt() + 1e-6), max=1.0)
    torch._foreach_mul_(grads, coef)


class Runner:
    """Builds one strategy's stage on this rank and runs its training step."""

    def __init__(self, m, lay, build, after_flush=False):
        from torch.nn.parallel import DistributedDataParallel as DDP
        self.m, self.lay = m, lay
        self.micro = m["global_batch"] // lay.dp if lay.pp == 1 else 1
        self.n_micro = m["global_batch"] // (lay.dp * self.micro)
        torch.manual_seed(1000 + lay.t + 10 * lay.p)  # different shards per TP rank and stage
        first, last = lay.p == 0, lay.p == lay.pp - 1
        with torch.device("cuda"):
            self.stage = Stage(m, m["layers"] // lay.pp, first, last, lay.tp, lay.t, lay.tp_group)
        if build == "compile":
            compile_stage(self.stage)
        self.params = list(self.stage.parameters())
        self.model = self.stage
        self.ddp = lay.dp > 1 and not after_flush
        self.flat = None
        if lay.dp > 1 and after_flush:  # the reduce after the flush: one persistent fp32 buffer
            self.flat = torch.empty(sum(p.numel() for p in self.params), device="cuda", dtype=torch.float32)
            self.views, o = [], 0
            for p in self.params:
                self.views.append(self.flat[o:o + p.numel()].view_as(p))
                o += p.numel()
        if self.ddp:
            self.model = DDP(self.stage, device_ids=[torch.cuda.current_device()], process_group=lay.dp_group,
                             broadcast_buffers=False)
        self.opt = torch.optim.AdamW(self.params, lr=1e-4, weight_decay=0.1)
        g = torch.Generator(device="cuda")
        g.manual_seed(7 + lay.d)  # same data within a DP replica (all its TP and PP ranks)
        shape = (self.micro, m["seq"])
        self.idx = [torch.randint(0, m["vocab"], shape, device="cuda", generator=g) for _ in range(self.n_micro)]
        self.tgt = [torch.randint(0, m["vocab"], shape, device="cuda", generator=g) for _ in range(self.n_micro)]
        self.act_shape = (self.micro, m["seq"], m["hidden"])

    def forward(self, x, i):
        # Under PP, DDP's forward never arms the reducer (torch.distributed.pipelining's recipe):
        # backward() arms it for the last micro-batch only.
        quiet = self.model.no_sync() if self.ddp and self.lay.pp > 1 else contextlib.nullcontext()
        with quiet, torch.autocast("cuda", dtype=torch.bfloat16):
            out = self.model(self.idx[i] if self.stage.first else x, self.tgt[i])
        return out / self.n_micro if self.stage.last and self.n_micro > 1 else out

    def backward(self, x, y, g, last=True):
        quiet = contextlib.nullcontext()
        if self.ddp and self.lay.pp > 1:
            if last:
                from torch.nn.parallel.distributed import _find_tensors
                self.model.reducer.prepare_for_backward(list(_find_tensors(y)))
            else:
                quiet = self.model.no_sync()
        with quiet:
            if self.stage.last:
                y.backward()
            else:
                torch.autograd.backward(y, grad_tensors=g)
        return None if x is None else x.grad

    def recv(self, peer):
        buf = torch.empty(self.act_shape, device="cuda", dtype=torch.float32)
        p2p([(dist.irecv, buf, peer)])
        return buf

    def pipeline(self):
        """forward_backward_pipelining_without_interleaving (Megatron-LM), this rank's part."""
        lay, m = self.lay, self.n_micro
        warm = min(lay.pp - lay.p - 1, m)
        rest = m - warm
        ins, outs = [], []

        def recv_forward():
            if lay.prev is None:
                return None
            x = self.recv(lay.prev)
            return x.requires_grad_()

        for i in range(warm):
            x = recv_forward()
            y = self.forward(x, i)
            if lay.next is not None:
                p2p([(dist.isend, y.detach(), lay.next)])
            ins.append(x)
            outs.append(y)
        x = recv_forward() if rest > 0 else None
        done = 0
        for i in range(rest):
            y = self.forward(x, warm + i)
            g = None
            if lay.next is not None:
                g = torch.empty(self.act_shape, device="cuda", dtype=torch.float32)
                p2p([(dist.isend, y.detach(), lay.next), (dist.irecv, g, lay.next)])
            ins.append(x)
            outs.append(y)
            dx = self.backward(ins.pop(0), outs.pop(0), g, last=done == m - 1)
            done += 1
            if i == rest - 1:
                x = None
                if lay.prev is not None:
                    p2p([(dist.isend, dx, lay.prev)])
            elif lay.prev is not None:
                x = torch.empty(self.act_shape, device="cuda", dtype=torch.float32)
                p2p([(dist.isend, dx, lay.prev), (dist.irecv, x, lay.prev)])
                x.requires_grad_()
        for i in range(warm):
            g = self.recv(lay.next)
            dx = self.backward(ins.pop(0), outs.pop(0), g, last=done == m - 1)
            done += 1
            if lay.prev is not None:
                p2p([(dist.isend, dx, lay.prev)])

    def step(self):
        if self.lay.pp == 1:
            self.backward(None, self.forward(None, 0), None)
        else:
            self.pipeline()
        if self.flat is not None:
            grads = [p.grad for p in self.params]
            torch._foreach_copy_(self.views, grads)
            dist.all_reduce(self.flat, op=dist.ReduceOp.AVG, group=self.lay.dp_group)
            torch._foreach_copy_(grads, self.views)
        clip_grads(self.params, self.lay.mp_group)
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)


# ----------------------------------------------------------------------------------------------
# kernel classes (framework_step.py's rules, with NCCL's kernels as communication)

def mark():
    """A marker kernel of a few cycles ("spin_kernel") on the current stream: a step boundary in the
    timeline (ddp_bucket_timeline.py's)."""
    torch.cuda._sleep(64)


TIMELINE_NAME_CHARS = 160  # kernel names in the timeline are cut here (the class is taken before)
TIMELINE_MAX_ROWS = 12000  # per rank and point: TP2xPP2 eager runs ~4800 kernels a step


def profile_timeline(step, lay, nsteps=2):
    """Every kernel of ONE step on this rank (the last of `nsteps` profiled steps: the host is ahead
    of the GPU from the second on), from torch.profiler's CUDA kernel events.

    Before the steps, one 1-element all-reduce on each of this rank's TP, DP and model-parallel
    groups (in that order, each synchronized), so that the stream each group's NCCL kernels run on
    is known (a process group's collectives use one NCCL stream per device; batched p2p uses others).
    A marker kernel before every step and after the last bounds the steps; the step is
    [marker nsteps-1, marker nsteps), start_us relative to its start.
    Returns {names: [[name, class]], fields, kernels: [[name index, stream, start_us, dur_us]], ...}."""
    from torch.profiler import ProfilerActivity, profile
    probes = [(k, g) for k, g in (("tp", lay.tp_group), ("dp", lay.dp_group), ("mp", lay.mp_group))
              if g is not None]
    torch.cuda.synchronize()
    dist.barrier(device_ids=[torch.cuda.current_device()])
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _, g in probes:
            dist.all_reduce(torch.ones(1, device="cuda"), group=g)
            torch.cuda.synchronize()
        for _ in range(nsteps):
            mark()
            step()
        mark()
        torch.cuda.synchronize()
    evs = []
    for ev in prof.events():
        dt = getattr(ev, "device_type", None)
        if dt is None or not str(dt).endswith("CUDA"):
            continue
        stream = getattr(ev, "device_resource_id", None)
        evs.append((ev.time_range.start, ev.time_range.end - ev.time_range.start, ev.name,
                    -1 if stream is None else int(stream)))
    evs.sort(key=lambda e: (e[0], e[2]))
    marks = [e[0] for e in evs if "spin_kernel" in e[2]]
    out = {"fields": ["name", "stream", "start_us", "dur_us"], "profiled_steps": nsteps,
           "step_index": nsteps - 1, "markers": len(marks), "group_streams": {}}
    try:
        out["trace_start_ns"] = int(prof.profiler.kineto_results.trace_start_ns())
    except Exception as ex:  # noqa: BLE001
        out["trace_start_ns"] = None
        out["trace_start_error"] = repr(ex)[:200]
    if len(marks) < nsteps + 1:
        out["error"] = "found %d marker kernels, expected %d" % (len(marks), nsteps + 1)
        return out
    first = marks[0]
    pre = [e for e in evs if e[0] < first and class_of(e[2]) == "communication"]
    for (key, _), e in zip(probes, pre):
        out["group_streams"][key] = e[3]
    out["probe_kernels"] = [[e[2][:TIMELINE_NAME_CHARS], e[3]] for e in pre]
    t0, t1 = marks[nsteps - 1], marks[nsteps]
    names, index, rows = [], {}, []
    for start, dur, name, stream in evs:
        if start < t0 or start >= t1 or "spin_kernel" in name:
            continue
        if name not in index:
            index[name] = len(names)
            names.append([name[:TIMELINE_NAME_CHARS], class_of(name)])
        rows.append([index[name], stream, round(start - t0, 1), round(dur, 1)])
    out["step_us"] = round(t1 - t0, 1)
    out["step_start_us_in_trace"] = round(t0, 1)
    out["kernel_count"] = len(rows)
    if len(rows) > TIMELINE_MAX_ROWS:
        out["truncated_from"] = len(rows)
        rows = rows[:TIMELINE_MAX_ROWS]
    out["names"], out["kernels"] = names, rows
    return out


def run_point(m, name, tp, pp, dp, build, steps, all_rank_kernels=False, timeline=False):
    lay = Layout(tp, pp, dp)
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    torch._dynamo.reset()
    r = Runner(m, lay, build, after_flush=name in AFTER_FLUSH)
    t = time.time()
    for _ in range(3):
        r.step()
    torch.cuda.synchronize()
    warm_s = time.time() - t
    log("  %s %s: warm-up (3 steps, compile included) %.1f s" % (name, build, warm_s))
    torch.cuda.reset_peak_memory_stats()
    times = timed_steps(r.step, steps)
    peak = torch.cuda.max_memory_allocated()
    between = torch.cuda.memory_allocated()
    reserved = torch.cuda.max_memory_reserved()
    kernels, classes = profile_steps(r.step, 2)
    mine = {"rank": dist.get_rank(), "tp_rank": lay.t, "dp_rank": lay.d, "pp_rank": lay.p,
            "step_us": statistics.median(times), "step_us_second_half": statistics.median(times[len(times) // 2:]),
            "step_all_us": times, "peak_memory_bytes": peak, "memory_between_steps_bytes": between,
            "max_reserved_bytes": reserved, "params": sum(p.numel() for p in r.params), "classes": classes,
            "kernels_per_step": sum(k["per_step_count"] for k in kernels),
            "kernel_sum_us": sum(k["per_step_us"] for k in kernels)}
    if all_rank_kernels:
        mine["kernels"] = kernels
    if timeline:
        mine["timeline"] = profile_timeline(r.step, lay)
    ranks = gather(mine)
    rec = {"strategy": name, "build": build, "tp": tp, "pp": pp, "dp": dp, "micro_batch": r.micro,
           "micro_batches_per_replica": r.n_micro, "global_batch": m["global_batch"], "seq": m["seq"],
           "warmup_s": warm_s, "steps": steps,
           "step_us": max(x["step_us"] for x in ranks),
           "peak_memory_bytes_max": max(x["peak_memory_bytes"] for x in ranks),
           "ranks": ranks, "rank0_kernels": kernels}
    log("  %s %s: step %.1f us (ranks %s); peak %s GiB; rank 0: %d kernels/step, kernel sum %.1f us" % (
        name, build, rec["step_us"], " ".join("%.0f" % x["step_us"] for x in ranks),
        " ".join("%.1f" % (x["peak_memory_bytes"] / 2**30) for x in ranks), mine["kernels_per_step"],
        mine["kernel_sum_us"]))
    for c, v in sorted(classes.items()):
        log("     %-14s %9.1f us  %7.1f kernels" % (c, v["us"], v["count"]))
    for k in kernels[:12]:
        log("     %8.1f us %6.1f x  %-13s %s" % (k["per_step_us"], k["per_step_count"], k["class"], k["name"][:90]))
    if timeline:
        for x in ranks:
            tl = x["timeline"]
            log("     timeline rank %d: %s kernels, step %s us, group streams %s%s" % (
                x["rank"], tl.get("kernel_count"), tl.get("step_us"), tl.get("group_streams"),
                " ERROR " + tl["error"] if "error" in tl else ""))
    del r
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--budget-s", type=float, default=300.0)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--quick", action="store_true", help="a tiny model, to try the script")
    ap.add_argument("--model", choices=sorted(MODELS), default="mha",
                    help="mha: the 8-layer hidden-4096 MHA model every fit used; gqa: the held-out one")
    ap.add_argument("--points", default=None,
                    help="run only these points, in this order: NAME:BUILD,... (e.g. TP2xDP2:eager,TP2xPP2:compile)")
    ap.add_argument("--all-rank-kernels", action="store_true",
                    help="every rank's kernel table in its rank record (as rank0_kernels)")
    ap.add_argument("--timeline", action="store_true",
                    help="every rank's kernels of one profiled step (name, class, stream, start, duration)")
    a = ap.parse_args()
    by_name = {s[0]: s for s in STRATEGIES}
    plan = [(s, "eager") for s in STRATEGIES] + [(by_name[n], "compile") for n in COMPILE_ORDER]
    if a.points is not None:
        plan = []
        for item in a.points.split(","):
            name, _, build = item.strip().partition(":")
            if name not in by_name or build not in COST_GUESS_S:
                print("--points: bad point %r (names %s, builds %s)" % (
                    item, ",".join(by_name), ",".join(COST_GUESS_S)), file=sys.stderr)
                sys.exit(2)
            plan.append((by_name[name], build))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=240))
    dist.barrier(device_ids=[local])
    torch.backends.cuda.matmul.allow_tf32 = True
    for key, value in (("cache_size_limit", 64), ("recompile_limit", 64), ("optimize_ddp", False)):
        try:  # eight layers of one class may each guard apart; no graph splits at DDP's buckets
            setattr(torch._dynamo.config, key, value)
        except Exception as ex:  # noqa: BLE001
            log("dynamo config %s not set: %r" % (key, ex))
    m = dict(MODELS[a.model])
    if a.quick:
        m.update(name="quick_h256_L4_s256", layers=4, hidden=256, heads=4, ffn=704, vocab=1024, seq=256)
        if "kv_heads" in m:
            m.update(heads=8, kv_heads=4)
    # with --timeline the JSON is written without indentation (tens of thousands of short rows)
    out = bench_common.ResultsFile(a.out, "gcsim.strategy_step.v1", __file__, VERSION, T0,
                                   indent=None if a.timeline else 1, method=__doc__, model=m,
                                   options={"points": a.points, "all_rank_kernels": a.all_rank_kernels,
                                            "timeline": a.timeline, "steps": a.steps, "budget_s": a.budget_s})
    doc, save = out.doc, out.save
    save()
    if dist.get_world_size() != 4:
        doc["errors"].append({"error": "needs 4 ranks, got %d" % dist.get_world_size()})
        save()
        dist.destroy_process_group()
        return
    for (name, tp, pp, dp), build in plan:
        go = torch.tensor([1.0 if a.budget_s - (time.time() - T0) >= COST_GUESS_S[build] else 0.0],
                          device="cuda")
        dist.broadcast(go, 0)  # rank 0's clock decides for everyone
        if go.item() == 0.0:
            doc["skipped"].append({"strategy": name, "build": build,
                                   "reason": "%.0f s left" % (a.budget_s - (time.time() - T0))})
            log("skip %s %s" % (name, build))
            save()
            continue
        err = None
        try:
            doc["results"].append(run_point(m, name, tp, pp, dp, build, a.steps, a.all_rank_kernels, a.timeline))
        except Exception as ex:  # noqa: BLE001
            err = {"strategy": name, "build": build, "rank": dist.get_rank(), "error": repr(ex)[:2000],
                   "traceback": traceback.format_exc()[-6000:]}
            print("rank %d FAILED %s %s: %r" % (dist.get_rank(), name, build, ex), flush=True)
        gc.collect()
        torch.cuda.empty_cache()
        out.gather_errors(err)
    out.finish(log)


if __name__ == "__main__":
    main()
