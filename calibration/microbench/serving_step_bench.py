#!/usr/bin/env python3
"""A Llama-2-70B-shaped serving step (decode and prefill) under tensor parallelism on 4 GPUs, eager
and with the decode step captured in a CUDA graph: the measurement gcsim's inference iteration cost
and its `workload.framework` are checked against (issue 16; configs calibration/validation/serving/,
tests/scenario/test_serving_measured.cpp). vLLM is not installed on the GPU machines, so this is
vLLM's model runner written out in PyTorch: the same shards, collectives and step structure, but
PyTorch's unfused kernels (Hugging Face Llama's eager code paths) instead of vLLM's fused ones.

    torchrun --standalone --nproc_per_node 4 serving_step_bench.py -o OUT.json [--budget-s 150]

Model: Llama-2-70B's layer (hidden 8192, 64 query heads, 8 KV heads, head dim 128, SwiGLU ffn 28672,
vocabulary 32000, RMSNorm eps 1e-5, rotary theta 10000, no biases) with LAYERS = 8 decoder layers
instead of 80 (weights 8 x 1.71 GB + embedding and head 1.05 GB in bf16: fits and runs fast).
Everything bf16 (weights, activations, residual stream, KV cache); RMSNorm upcasts to fp32 as
Hugging Face's LlamaRMSNorm does.

Tensor parallelism as Megatron-LM / vLLM shard it: QKV and gate+up column-parallel (each rank has
64/tp query heads and 8/tp KV heads), output and down projections row-parallel, each followed by a
dist.all_reduce (NCCL, sum, bf16) of the [tokens, 8192] output; vocabulary-parallel embedding
(ids outside the rank's range masked to zero, then an all-reduce) and head (the rows that sample:
every decode token, the last prefill token), the logit shards all-gathered, then the sampler's
fp32 softmax and argmax. TP4 uses all 4 GPUs; TP2 runs two replicas side by side, GPUs {0,1} and
{2,3} (both time the same shapes; rank 0's replica is reported first, every rank's numbers kept).

Per step: the embedding, cos/sin gathered at each token's position (once, as Hugging Face's
LlamaRotaryEmbedding does), the layers, the sampler.
Per layer: RMSNorm; QKV GEMM; rotary (rotate-half with those cos/sin);
KV-cache write (slice copy into a contiguous cache [batch, kv_heads, kv_len, 128]); attention via
F.scaled_dot_product_attention with enable_gqa=True (decode: 1 query over the whole cache, no
mask; prefill: causal over the chunk's own K/V, batch 1); output GEMM; all-reduce; residual add;
RMSNorm; gate+up GEMM; SiLU * up; down GEMM; all-reduce; residual add.

Points (batch, kv_len) for decode: kv_len is the KV length after the step's token (the cache holds
kv_len tokens per sequence, the new token's K/V written at kv_len - 1); prefill: one sequence of
`tokens` tokens. Builds: decode eager and decode with the whole step (embedding to sampler) in one
CUDA graph (torch.cuda.graph, thread-local capture, NCCL all-reduces inside the graph), which is
what vLLM does by default; prefill eager only (vLLM runs prefill eager by default too).

Per point and build:
  step_us          median over back-to-back steps of the time between CUDA events recorded at every
                   step boundary (the host at most 2 steps ahead); max over the replica's ranks;
  host_us          eager only: host time to enqueue one step while the GPU is kept busy (a
                   torch.cuda._sleep backlog), mean over 5 steps;
  classes          eager only: torch.profiler (CUDA activity) over 3 steps: kernel time per step by
                   class (gemm, attention, elementwise, norm, communication, other) and count (the
                   graph build replays the same kernels; its replays are not profiled);
  kernels          rank 0's per-kernel table (name, class, per-step count and us);
  sdpa             which attention kernels ran (from the kernel names) and a probe of each SDPA
                   backend alone on a small decode and prefill shape (works or its error).
Each point is guarded (a Python failure on every rank is recorded and the rest still runs); rank 0
rewrites the JSON after every point and decides from --budget-s whether a point still fits.
"""
import time

T0 = time.time()  # before torch's import: the budget counts it

import argparse  # noqa: E402
import datetime  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import traceback  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_timing as tt  # noqa: E402
import bench_common  # noqa: E402
from bench_common import class_of, gather, profile_steps, timed_steps  # noqa: E402,F401

VERSION = "serving_step_bench 1.3"
log = bench_common.make_log(T0)
MODEL = dict(name="llama2_70b_shape_L8", layers=8, hidden=8192, heads=64, kv_heads=8, head_dim=128,
             ffn=28672, vocab=32000, rope_theta=10000.0, eps=1e-5, max_pos=8192)
# --model l3_8b: a second model for held-out checks (shapes no fit has seen): Llama 3 8B's layer
# (hidden 4096, 32 query and 8 KV heads of 128, SwiGLU 14336, vocabulary 128256, rope theta 500000)
# with 8 decoder layers.
MODELS = {"l70": MODEL,
          "l3_8b": dict(name="llama3_8b_shape_L8", layers=8, hidden=4096, heads=32, kv_heads=8, head_dim=128,
                        ffn=14336, vocab=128256, rope_theta=500000.0, eps=1e-5, max_pos=8192),
          # --model l70_full: Llama-2-70B itself, all 80 layers (weights 69 GB per GPU at TP2: with
          # its KV cache this needs an H200; run with --tp and --max-cache-tokens, --points full)
          "l70_full": dict(MODEL, name="llama2_70b_full", layers=80)}
# Decode points (batch, kv_len) and prefill token counts; "core" first for both TP sizes, the rest if
# the budget allows. The largest cache is 512 Ki tokens per layer (64 x 8192, 128 x 4096, 256 x 2048).
DECODE_CORE = [(1, 512), (1, 8192), (32, 2048), (64, 8192), (256, 512), (256, 2048)]
DECODE_MORE = [(8, 2048), (32, 8192), (128, 4096), (128, 512)]
PREFILL_CORE = [512, 2048, 8192]
PREFILL_MORE = [1024, 4096]
MAX_CACHE_TOKENS = 512 * 1024
COST_GUESS_S = {"decode": 3.0, "prefill": 3.0}
# --points full: the full-depth model's points (a step is 10x the 8-layer one's; batch x kv_len within
# a 256 Ki-token cache)
DECODE_FULL = [(1, 512), (8, 2048), (64, 4096), (1, 4096), (32, 2048), (128, 2048)]
PREFILL_FULL = [512, 2048]


# ----------------------------------------------------------------------------------------------
# the model: one replica's shard on this rank

def rms_norm(x, w, eps):
    """Hugging Face LlamaRMSNorm: fp32 upcast, mean of squares, rsqrt, scale, back to bf16."""
    dt = x.dtype
    x = x.to(torch.float32)
    var = x.pow(2).mean(-1, keepdim=True)
    x = x * torch.rsqrt(var + eps)
    return w * x.to(dt)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class Shard:
    """Weights, KV cache and step function of one TP rank of one replica."""

    def __init__(self, m, tp, tp_rank, group, cache_tokens):
        dev = torch.device("cuda")
        bf = torch.bfloat16
        h, d = m["hidden"], m["head_dim"]
        self.m, self.tp, self.tp_rank, self.group = m, tp, tp_rank, group
        self.hq, self.hkv = m["heads"] // tp, m["kv_heads"] // tp
        self.ffn = m["ffn"] // tp
        self.vshard = m["vocab"] // tp
        self.vstart = tp_rank * self.vshard

        def w(*shape):
            return torch.randn(*shape, device=dev, dtype=bf) * 0.02

        self.layers = []
        for _ in range(m["layers"]):
            self.layers.append({
                "n1": torch.ones(h, device=dev, dtype=bf), "n2": torch.ones(h, device=dev, dtype=bf),
                "qkv": w((self.hq + 2 * self.hkv) * d, h), "o": w(h, self.hq * d),
                "gu": w(2 * self.ffn, h), "down": w(h, self.ffn),
                # flat caches: a point views the first batch * kv_heads * kv_len * 128 elements
                "kc": torch.randn(cache_tokens * self.hkv * d, device=dev, dtype=bf),
                "vc": torch.randn(cache_tokens * self.hkv * d, device=dev, dtype=bf)})
        self.emb = w(self.vshard, h)
        self.head = w(self.vshard, h)
        self.norm_f = torch.ones(h, device=dev, dtype=bf)
        inv = 1.0 / (m["rope_theta"] ** (torch.arange(0, d, 2, device=dev, dtype=torch.float32) / d))
        ang = torch.outer(torch.arange(m["max_pos"], device=dev, dtype=torch.float32), inv)
        ang = torch.cat((ang, ang), dim=-1)
        self.cos, self.sin = ang.cos().to(bf), ang.sin().to(bf)

    def all_reduce(self, x):
        if self.tp > 1:
            dist.all_reduce(x, group=self.group)
        return x

    def embed(self, ids):
        mask = (ids < self.vstart) | (ids >= self.vstart + self.vshard)
        local = (ids - self.vstart).masked_fill(mask, 0)
        e = F.embedding(local, self.emb)
        e.masked_fill_(mask.unsqueeze(-1), 0.0)
        return self.all_reduce(e)

    def layer(self, L, x, cos, sin, batch, q_len, kv_len, decode):
        d, eps = self.m["head_dim"], self.m["eps"]
        t = x.shape[0]
        y = rms_norm(x, L["n1"], eps)
        qkv = F.linear(y, L["qkv"])
        q, k, v = qkv.split([self.hq * d, self.hkv * d, self.hkv * d], dim=-1)
        q = q.view(batch, q_len, self.hq, d).transpose(1, 2)
        k = k.view(batch, q_len, self.hkv, d).transpose(1, 2)
        v = v.view(batch, q_len, self.hkv, d).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        kc = L["kc"][:batch * self.hkv * kv_len * d].view(batch, self.hkv, kv_len, d)
        vc = L["vc"][:batch * self.hkv * kv_len * d].view(batch, self.hkv, kv_len, d)
        if decode:
            kc[:, :, kv_len - 1:kv_len].copy_(k)
            vc[:, :, kv_len - 1:kv_len].copy_(v)
            o = F.scaled_dot_product_attention(q, kc, vc, enable_gqa=True)
        else:
            kc[:, :, :q_len].copy_(k)
            vc[:, :, :q_len].copy_(v)
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        o = o.transpose(1, 2).reshape(t, self.hq * d)
        x = x + self.all_reduce(F.linear(o, L["o"]))
        z = rms_norm(x, L["n2"], eps)
        gate, up = F.linear(z, L["gu"]).chunk(2, dim=-1)
        return x + self.all_reduce(F.linear(F.silu(gate) * up, L["down"]))

    def sample(self, x, rows):
        h = rms_norm(x, self.norm_f, self.m["eps"])
        if rows < h.shape[0]:
            h = h[-rows:]
        logits = F.linear(h, self.head)  # [rows, vocab / tp]
        if self.tp > 1:
            out = torch.empty(self.tp * rows, self.vshard, device=h.device, dtype=h.dtype)
            dist.all_gather_into_tensor(out, logits.contiguous(), group=self.group)
            logits = out.view(self.tp, rows, self.vshard).permute(1, 0, 2).reshape(rows, self.tp * self.vshard)
        probs = torch.softmax(logits.float(), dim=-1)
        return torch.argmax(probs, dim=-1)

    def step(self, ids, pos, batch, q_len, kv_len, decode):
        x = self.embed(ids)
        # cos/sin at each token's position, once per step (Hugging Face's LlamaRotaryEmbedding)
        d = self.m["head_dim"]
        cos = self.cos[pos].view(batch, 1, q_len, d)
        sin = self.sin[pos].view(batch, 1, q_len, d)
        for L in self.layers:
            x = self.layer(L, x, cos, sin, batch, q_len, kv_len, decode)
        return self.sample(x, batch if decode else 1)


# ----------------------------------------------------------------------------------------------
# kernel classes (strategy_step_bench.py's rules)

def host_enqueue_us(step, n=5, gpu_busy_us=60_000.0):
    """Host time to enqueue one step while the GPU is still busy with a sleep (nothing waits on it)."""
    torch.cuda.synchronize()
    dist.barrier(device_ids=[torch.cuda.current_device()])
    tt.backlog(gpu_busy_us)
    t = time.perf_counter()
    for _ in range(n):
        step()
    us = (time.perf_counter() - t) * 1e6 / n
    torch.cuda.synchronize()
    return us


def steps_for(est_us, lo, hi, target_us=400_000.0):
    """Steps to time, from rank 0's estimate: every rank must run the same number of steps (each
    step's collectives pair up across ranks)."""
    n = torch.tensor([int(max(lo, min(hi, target_us / max(est_us, 1.0))))], device="cuda")
    dist.broadcast(n, 0)
    return int(n.item())


def all_ok(ok):
    """True on every rank when it is true on every rank."""
    t = torch.tensor([1 if ok else 0], device="cuda")
    dist.all_reduce(t, op=dist.ReduceOp.MIN)
    return bool(t.item())


def run_point(sh, tp, kind, batch, kv_len, builds):
    """kind 'decode': batch sequences, 1 token each, kv_len after it; 'prefill': 1 sequence of kv_len."""
    decode = kind == "decode"
    q_len = 1 if decode else kv_len
    tokens = batch * q_len
    dev = torch.device("cuda")
    g = torch.Generator(device=dev)
    g.manual_seed(1234 + batch * 7 + kv_len)
    ids = torch.randint(0, sh.m["vocab"], (tokens,), device=dev, generator=g)
    if decode:
        pos = torch.full((batch,), kv_len - 1, device=dev, dtype=torch.long)
    else:
        pos = torch.arange(kv_len, device=dev, dtype=torch.long)

    def eager():
        return sh.step(ids, pos, batch, q_len, kv_len, decode)

    rec = {"kind": kind, "tp": tp, "batch": batch, "kv_len": kv_len, "tokens": tokens, "builds": {}}
    mine = {"rank": dist.get_rank(), "tp_rank": sh.tp_rank}
    # eager: warm-up, time, host cost, profile
    t = time.time()
    for _ in range(3):
        eager()
    torch.cuda.synchronize()
    warm_s = time.time() - t
    probe = timed_steps(eager, 3)
    n = steps_for(statistics.median(probe), 8, 60)
    times = timed_steps(eager, n)
    host = host_enqueue_us(eager) if decode else None
    kernels, classes = profile_steps(eager, 3)
    mine["eager"] = {"step_us": statistics.median(times), "step_all_us": times, "host_us": host,
                     "warmup_s": warm_s, "classes": classes,
                     "kernels_per_step": sum(k["per_step_count"] for k in kernels),
                     "kernel_sum_us": sum(k["per_step_us"] for k in kernels)}
    rank0_kernels = {"eager": kernels}
    if decode and "graph" in builds:
        err = None
        graph = None
        try:
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(2):
                    eager()
            torch.cuda.current_stream().wait_stream(s)
            torch.cuda.synchronize()
            graph = torch.cuda.CUDAGraph()
            t = time.time()
            with torch.cuda.graph(graph, capture_error_mode="thread_local"):
                eager()
            torch.cuda.synchronize()
            cap_s = time.time() - t
            graph.replay()
            torch.cuda.synchronize()
            ok = True
        except Exception as ex:  # noqa: BLE001
            err = {"error": repr(ex)[:2000], "traceback": traceback.format_exc()[-4000:]}
            mine["graph_error"] = err
            print("rank %d graph capture FAILED %s b%d kv%d: %r" % (dist.get_rank(), kind, batch, kv_len, ex),
                  flush=True)
            ok = False
        # replay only where every rank captured (a replay's collectives pair up across ranks)
        if all_ok(ok):
            probe = timed_steps(graph.replay, 3)
            times = timed_steps(graph.replay, steps_for(statistics.median(probe), 20, 100))
            # not profiled: a graph replays the eager kernels (profiling replays risks CUPTI trouble)
            mine["graph"] = {"step_us": statistics.median(times), "step_all_us": times, "capture_s": cap_s,
                             "classes": mine["eager"]["classes"],
                             "kernels_per_step": mine["eager"]["kernels_per_step"],
                             "kernel_sum_us": mine["eager"]["kernel_sum_us"]}
        del graph
        torch.cuda.synchronize()
    ranks = gather(mine)
    rec["ranks"] = ranks
    rec["rank0_kernels"] = rank0_kernels
    rec["attention_kernels"] = sorted({k["name"] for k in kernels if k["class"] == "attention"})
    for b in ("eager", "graph"):
        have = [r[b] for r in ranks if b in r]
        if len(have) != len(ranks):
            continue
        # a replica's step ends when its slowest rank ends; replica 0 = ranks 0..tp-1
        rec["builds"][b] = {"step_us": max(r["step_us"] for r in have[:tp]),
                            "step_us_all_ranks": [r["step_us"] for r in have],
                            "host_us": max((r.get("host_us") or 0.0) for r in have[:tp]) or None,
                            "classes_rank0": have[0]["classes"],
                            "kernels_per_step": have[0]["kernels_per_step"],
                            "kernel_sum_us_rank0": have[0]["kernel_sum_us"]}
    msg = " ".join("%s %.1f us" % (b, v["step_us"]) for b, v in rec["builds"].items())
    log("  TP%d %s b%d kv%d: %s; host %s us; attention %s" % (
        tp, kind, batch, kv_len, msg, "%.0f" % host if host else "-", rec["attention_kernels"]))
    for c, v in sorted(classes.items()):
        log("     %-14s %9.1f us  %7.1f kernels" % (c, v["us"], v["count"]))
    return rec


def sdpa_probe(hq, hkv, d):
    """Each SDPA backend alone on a small decode and prefill shape: works, or its error."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    out = {}
    dev, bf = torch.device("cuda"), torch.bfloat16
    shapes = {"decode": (torch.randn(4, hq, 1, d, device=dev, dtype=bf),
                         torch.randn(4, hkv, 1024, d, device=dev, dtype=bf), False),
              "prefill": (torch.randn(1, hq, 512, d, device=dev, dtype=bf),
                          torch.randn(1, hkv, 512, d, device=dev, dtype=bf), True)}
    for be in ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION", "MATH"):
        for name, (q, kv, causal) in shapes.items():
            try:
                with sdpa_kernel([getattr(SDPBackend, be)]):
                    F.scaled_dot_product_attention(q, kv, kv, is_causal=causal, enable_gqa=True)
                torch.cuda.synchronize()
                out["%s/%s" % (be, name)] = "ok"
            except Exception as ex:  # noqa: BLE001
                out["%s/%s" % (be, name)] = repr(ex)[:300]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--budget-s", type=float, default=150.0)
    ap.add_argument("--quick", action="store_true", help="a tiny model, to try the script")
    ap.add_argument("--model", choices=sorted(MODELS), default="l70",
                    help="l70: Llama-2-70B's layer (every fit used it); l3_8b: Llama 3 8B's, held out; "
                         "l70_full: Llama-2-70B's 80 layers")
    ap.add_argument("--tp", choices=["both", "4", "2"], default="both", help="the TP sizes to build and run")
    ap.add_argument("--max-cache-tokens", type=int, default=MAX_CACHE_TOKENS,
                    help="KV cache per layer (tokens); points past it are skipped")
    ap.add_argument("--points", choices=["default", "full"], default="default")
    ap.add_argument("--prefill", help="comma-separated prefill token counts, in place of the points' own")
    a = ap.parse_args()
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=120))
    dist.barrier(device_ids=[local])
    m = dict(MODELS[a.model])
    if a.quick:
        m.update(name="quick", layers=2, hidden=512, heads=8, kv_heads=4, head_dim=64, ffn=1024, vocab=1024)
    rank, world = dist.get_rank(), dist.get_world_size()
    out = bench_common.ResultsFile(a.out, "gcsim.serving_step.v1", __file__, VERSION, T0, method=__doc__, model=m)
    doc, save = out.doc, out.save
    save()
    if world != 4:
        doc["errors"].append({"error": "needs 4 ranks, got %d" % world})
        save()
        dist.destroy_process_group()
        return
    # groups: every rank calls new_group for every group (a collective call)
    tp2_groups = [dist.new_group([0, 1]), dist.new_group([2, 3])]
    shards = {}
    try:
        doc["sdpa_probe"] = sdpa_probe(m["heads"] // 4, m["kv_heads"] // 4, m["head_dim"])
    except Exception as ex:  # noqa: BLE001
        doc["sdpa_probe"] = {"error": repr(ex)[:500]}
    log("sdpa probe: %s" % doc["sdpa_probe"])
    # CUPTI's first start is slow and differs per rank: warm the profiler up once, before any point
    profile_steps(lambda: torch.cuda._sleep(1000), 1)
    t = time.time()
    tps = (4, 2) if a.tp == "both" else (int(a.tp),)
    if 4 in tps:
        shards[4] = Shard(m, 4, rank, dist.group.WORLD, a.max_cache_tokens)
    if 2 in tps:
        shards[2] = Shard(m, 2, rank % 2, tp2_groups[rank // 2], a.max_cache_tokens)
    torch.cuda.synchronize()
    doc["setup_s"] = time.time() - t
    doc["memory_after_setup_bytes"] = torch.cuda.memory_allocated()
    log("weights and caches: %.1f s, %.1f GiB per GPU" % (doc["setup_s"], torch.cuda.memory_allocated() / 2**30))
    save()
    plan = []
    prefill_full = [int(x) for x in a.prefill.split(",")] if a.prefill else PREFILL_FULL
    if a.points == "full":
        for tp in tps:
            plan += [(tp, "prefill", 1, s) for s in prefill_full] + [(tp, "decode", b, kv) for b, kv in DECODE_FULL]
    else:
        for tp in tps:
            plan += [(tp, "prefill", 1, s) for s in PREFILL_CORE] + [(tp, "decode", b, kv) for b, kv in DECODE_CORE]
        for tp in tps:
            plan += [(tp, "prefill", 1, s) for s in PREFILL_MORE] + [(tp, "decode", b, kv) for b, kv in DECODE_MORE]
    doc["skipped"] += [{"tp": tp, "kind": kind, "batch": b, "kv_len": kv, "reason": "past --max-cache-tokens"}
                       for tp, kind, b, kv in plan if b * kv > a.max_cache_tokens]
    plan = [p for p in plan if p[2] * p[3] <= a.max_cache_tokens]
    depth = max(1.0, m["layers"] / 8.0)  # a point's cost grows with the layers
    for tp, kind, batch, kv_len in plan:
        go = torch.tensor([1.0 if a.budget_s - (time.time() - T0) >= COST_GUESS_S[kind] * depth else 0.0],
                          device="cuda")
        dist.broadcast(go, 0)  # rank 0's clock decides for everyone
        if go.item() == 0.0:
            doc["skipped"].append({"tp": tp, "kind": kind, "batch": batch, "kv_len": kv_len,
                                   "reason": "%.0f s left" % (a.budget_s - (time.time() - T0))})
            continue
        err = None
        try:
            doc["results"].append(run_point(shards[tp], tp, kind, batch, kv_len, ("eager", "graph")))
        except Exception as ex:  # noqa: BLE001
            err = {"tp": tp, "kind": kind, "batch": batch, "kv_len": kv_len, "rank": rank,
                   "error": repr(ex)[:2000], "traceback": traceback.format_exc()[-4000:]}
            print("rank %d FAILED TP%d %s b%d kv%d: %r" % (rank, tp, kind, batch, kv_len, ex), flush=True)
        gc.collect()
        torch.cuda.empty_cache()
        out.gather_errors(err)
    out.finish(log)


if __name__ == "__main__":
    main()
