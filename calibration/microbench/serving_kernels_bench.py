#!/usr/bin/env python3
"""Serving-step kernels on one GPU: how far apart kernels replayed in a CUDA graph start compared with
the same kernels launched on a stream, and what PyTorch's default SDPA backend runs (and how long it
takes) for causal GQA prefill at the shapes of the serving model's tensor-parallel ranks (issue 16;
the serving validation is calibration/measurements/h100-x4/serving_step_2026-11-26).

    python3 serving_kernels_bench.py -o OUT.json [--budget-s 120]

Sections (in this order; rank-free, one GPU; each point guarded, the JSON rewritten after each):
  tiny      x.add_(1) on a 1-element fp32 tensor, N times, captured in one CUDA graph (N = 1, 32, 128,
            512: replay time by CUDA events, back-to-back spacing of replays after a sleep backlog, so
            the GPU never waits for Python) and launched on a stream (N = 128, the same backlog).
            per-kernel period in the graph = slope over N; on the stream = time / N. torch.profiler
            (Kineto chrome trace, ns-resolution timestamps) over one replay and one stream burst gives
            every kernel's start/end: start-to-start and end-to-start gaps.
  decode    serving_step_bench.py's model shard of one TP rank (Llama-2-70B layer, 8 layers) with the
            collectives left out (one GPU; the 17 all-reduces and the all-gather are not there), decode
            batch 1/32/256 at KV 2048, TP4 and TP2 shards: eager step (stream, host kept ahead by a
            backlog) and whole-step CUDA-graph replay, each timed by events; one profiled eager step
            and one profiled replay: kernel count, sum of kernel durations, gaps. (graph - sum of
            durations) / kernels is the per-kernel dispatch gap inside a graph; the same on the stream.
  attention prefill attention alone: F.scaled_dot_product_attention(q, k, v, is_causal=True,
            enable_gqa=True), bf16, batch 1, head dim 128, per TP rank of the serving model (TP4: 16 query
            / 2 KV heads; TP2: 32 / 4; TP1: 64 / 8), 512 ... 8192 tokens; backends default, CUDNN_ATTENTION
            and FLASH_ATTENTION; layouts "serving" (q, k, v strided views of a [tokens, heads, 128] buffer as
            the serving step's q/k after rotary and v straight out of the QKV GEMM) and "contiguous"
            ([1, heads, tokens, 128]). Spacing by events (time_us) and torch.profiler kernel names and
            durations (per call: every GPU activity between two spin-kernel markers).
  (prefill, below, runs before ops)
  ops       single decode-step ops (rms_norm's kernels, rotary, residual add, SiLU*mul, the QKV GEMM) at
            batch 1/32/256, TP4 shapes: R = 16 repeats in one graph vs on the stream -> per-op period.
  prefill   the TP4 and TP2 shards' eager prefill step (512 ... 8192 tokens; no collectives): one
            profiled step -> the kernel sequence of layer 0 (names, durations, which kernel follows each
            memset) and per-step counts of memsets and kernels.
"""
import time

T0 = time.time()  # before torch's import: the budget counts it

import argparse  # noqa: E402
import datetime  # noqa: E402
import gc  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import traceback  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_timing as tt  # noqa: E402
from serving_step_bench import MODEL, Shard, class_of, rms_norm, rotate_half  # noqa: E402

VERSION = "serving_kernels_bench 1.0"
TINY_NODES = [1, 32, 128, 512]
TINY_STREAM_N = 128
DECODE_POINTS = [(4, 1), (4, 32), (4, 256), (2, 1), (2, 32), (2, 256)]  # (tp, batch)
DECODE_KV = 2048
ATT_TOKENS = [512, 1024, 2048, 4096, 8192]
ATT_TP = [4, 2, 1]
ATT_BACKENDS = ["default", "CUDNN_ATTENTION", "FLASH_ATTENTION"]
ATT_LAYOUTS = ["serving", "contiguous"]
OPS_BATCH = [1, 32, 256]
OPS_REPEATS = 16
PREFILL_TOKENS = [512, 1024, 2048, 4096, 8192]
SPIN_CYCLES = 20_000  # ~10 us marker kernel between profiled calls


def log(*a):
    print("[%6.1fs]" % (time.time() - T0), *a, flush=True)


def clocks():
    return {"nvidia_smi": tt.nvsmi("index,clocks.sm,clocks.mem,power.draw,temperature.gpu,"
                                   "clocks_throttle_reasons.active"),
            "utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}


def nccl_version():
    try:
        return ".".join(str(x) for x in torch.cuda.nccl.version())
    except Exception:  # noqa: BLE001
        return None


def provenance():
    p = torch.cuda.get_device_properties(0)
    here = os.path.dirname(os.path.abspath(__file__))
    sha = {}
    for f in ("serving_kernels_bench.py", "serving_step_bench.py", "torch_timing.py"):
        with open(os.path.join(here, f), "rb") as fh:
            sha[f] = hashlib.sha256(fh.read()).hexdigest()
    return {"script": "calibration/microbench/serving_kernels_bench.py", "script_version": VERSION,
            "sha256": sha,
            "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "hostname": platform.node(), "python": sys.version.split()[0], "torch": torch.__version__,
            "cuda_runtime": torch.version.cuda,
            "nccl": nccl_version(),
            "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
            "device_name": p.name, "sm_count": p.multi_processor_count, "total_memory_bytes": p.total_memory,
            "nvidia_smi": tt.nvsmi("index,name,driver_version,power.limit,clocks.max.sm,clocks.max.mem"),
            "env": {k: v for k, v in os.environ.items() if k.startswith(("NCCL_", "TORCH_", "CUDA_"))},
            "cpu": platform.processor(), "cpu_count": os.cpu_count()}


# ----------------------------------------------------------------------------------------------
# profiler: every GPU activity (kernels, memsets, memcpys) with start and duration in us

def gpu_activities(fn):
    """Run fn under torch.profiler (CUDA activity) and return its GPU activities sorted by start:
    [{name, cat, ts_us, dur_us}] with the chrome trace's sub-us timestamps."""
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
    finally:
        os.unlink(path)
    evs = trace["traceEvents"] if isinstance(trace, dict) else trace
    out = []
    for e in evs:
        cat = str(e.get("cat", "")).lower()
        if e.get("ph") != "X" or cat not in ("kernel", "gpu_memset", "gpu_memcpy"):
            continue
        out.append({"name": e.get("name", ""), "cat": cat, "ts_us": float(e["ts"]), "dur_us": float(e.get("dur", 0.0))})
    out.sort(key=lambda e: e["ts_us"])
    return out


def is_spin(e):
    return "spin" in e["name"].lower() or "sleep" in e["name"].lower()


def split_on_spins(acts):
    """Groups of activities between spin-kernel markers (markers dropped)."""
    groups, cur, seen = [], [], False
    for e in acts:
        if is_spin(e):
            if seen:
                groups.append(cur)
            cur, seen = [], True
        elif seen:
            cur.append(e)
    if seen and cur:
        groups.append(cur)
    return groups


def profile_calls(calls, repeats=3):
    """Profiles `calls` ((rec, fn) pairs) in one torch.profiler run, each call `repeats` times after a
    spin-kernel marker, and fills each rec's "kernels" (the last repeat's), "kernel_us" and
    "attention_kernel_us" (medians over the repeats). Returns None, or an error string when the
    markers do not split the trace into one group per call and repeat."""
    def run_all():
        for _, c in calls:
            for _ in range(repeats):
                torch.cuda._sleep(SPIN_CYCLES)
                c()
        torch.cuda._sleep(SPIN_CYCLES)
    groups = split_on_spins(gpu_activities(run_all))
    if len(groups) != repeats * len(calls):
        return "%d profile groups for %d calls" % (len(groups), len(calls))
    for i, (rec, _) in enumerate(calls):
        per = groups[repeats * i:repeats * i + repeats]
        rec["kernels"] = [{"name": e["name"], "cat": e["cat"], "dur_us": e["dur_us"]} for e in per[-1]]
        rec["kernel_us"] = statistics.median(sum(e["dur_us"] for e in g if e["cat"] == "kernel") for g in per)
        rec["attention_kernel_us"] = statistics.median(
            sum(e["dur_us"] for e in g if class_of(e["name"]) == "attention") for g in per)
    return None


def gap_stats(acts):
    """Kernel spacing of a back-to-back sequence: span, sum of durations, start-to-start and
    end-to-start gaps (medians, means)."""
    if len(acts) < 2:
        return {"n": len(acts)}
    s2s = [b["ts_us"] - a["ts_us"] for a, b in zip(acts, acts[1:])]
    e2s = [b["ts_us"] - (a["ts_us"] + a["dur_us"]) for a, b in zip(acts, acts[1:])]
    span = acts[-1]["ts_us"] + acts[-1]["dur_us"] - acts[0]["ts_us"]
    durs = [a["dur_us"] for a in acts]
    return {"n": len(acts), "span_us": span, "sum_dur_us": sum(durs),
            "mean_gap_us": (span - sum(durs)) / (len(acts) - 1),
            "median_start_to_start_us": statistics.median(s2s), "median_end_to_start_us": statistics.median(e2s),
            "p10_end_to_start_us": tt.percentile(e2s, 0.1), "p90_end_to_start_us": tt.percentile(e2s, 0.9),
            "median_dur_us": statistics.median(durs)}


def summarize_kernels(acts):
    agg = {}
    for e in acts:
        a = agg.setdefault(e["name"], {"name": e["name"], "cat": e["cat"], "class": class_of(e["name"]),
                                       "count": 0, "us": 0.0})
        a["count"] += 1
        a["us"] += e["dur_us"]
    return sorted(agg.values(), key=lambda a: -a["us"])


def capture(fn, warm=2):
    """fn captured in one CUDA graph (warmed on a side stream first, as torch.cuda.graph wants)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(warm):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, capture_error_mode="thread_local"):
        fn()
    torch.cuda.synchronize()
    g.replay()
    torch.cuda.synchronize()
    return g


def backlogged(fn, us):
    """fn's launches queued behind a GPU sleep of `us`, so the GPU never waits for the host."""
    def run():
        tt.backlog(us)
        fn()
    return run


def slope(xs, ys):
    mx, my = statistics.mean(xs), statistics.mean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return b, my - b * mx


# ----------------------------------------------------------------------------------------------
# sections

def section_tiny(doc, save):
    x = torch.zeros(1, device="cuda", dtype=torch.float32)
    out = {"op": "x.add_(1), x: 1 fp32 element", "graph": [], "stream": None}
    doc["tiny"] = out
    graphs = {}
    for n in TINY_NODES:
        try:
            g = capture(lambda n=n: [x.add_(1.0) for _ in range(n)])
            graphs[n] = g
            m = tt.measure(lambda r, g=g: g.replay())
            out["graph"].append({"nodes": n, **m})
            log("tiny graph %4d nodes: %.2f us per replay (%.3f us/node), backlog_ok %s" % (
                n, m["time_us"], m["time_us"] / n, m["backlog_ok"]))
        except Exception as ex:  # noqa: BLE001
            out["graph"].append({"nodes": n, "error": repr(ex)[:500]})
    ok = [p for p in out["graph"] if "time_us" in p]
    if len(ok) >= 2:
        b, a = slope([p["nodes"] for p in ok], [p["time_us"] for p in ok])
        out["graph_period_us"], out["graph_replay_fixed_us"] = b, a
    try:
        m = tt.measure(lambda r: [x.add_(1.0) for _ in range(TINY_STREAM_N)])
        out["stream"] = {"kernels": TINY_STREAM_N, **m, "period_us": m["time_us"] / TINY_STREAM_N}
        log("tiny stream %d kernels: %.3f us/kernel, backlog_ok %s, host %.1f us/burst" % (
            TINY_STREAM_N, m["time_us"] / TINY_STREAM_N, m["backlog_ok"], m["host_enqueue_us"]))
    except Exception as ex:  # noqa: BLE001
        out["stream"] = {"error": repr(ex)[:500]}
    save()
    try:
        g = graphs.get(128)
        acts = gpu_activities(backlogged(lambda: g.replay(), 2000))
        out["graph_profile"] = gap_stats([e for e in acts if not is_spin(e)])
        acts = gpu_activities(backlogged(lambda: [x.add_(1.0) for _ in range(TINY_STREAM_N)], 5000))
        out["stream_profile"] = gap_stats([e for e in acts if not is_spin(e)])
        log("tiny profiled: graph %s" % out["graph_profile"])
        log("tiny profiled: stream %s" % out["stream_profile"])
    except Exception as ex:  # noqa: BLE001
        out["profile_error"] = repr(ex)[:500]
    del graphs
    save()


class LocalShard(Shard):
    """One TP rank's shard on its own: the collectives are left out (identity all-reduce, local
    logits), so one GPU runs the rank's compute kernels in the serving step's order."""

    def all_reduce(self, x):
        return x

    def sample(self, x, rows):
        h = rms_norm(x, self.norm_f, self.m["eps"])
        if rows < h.shape[0]:
            h = h[-rows:]
        logits = F.linear(h, self.head)
        probs = torch.softmax(logits.float(), dim=-1)
        return torch.argmax(probs, dim=-1)


def step_fn(sh, batch, kv_len, decode):
    q_len = 1 if decode else kv_len
    dev = torch.device("cuda")
    ids = torch.randint(0, sh.m["vocab"], (batch * q_len,), device=dev)
    if decode:
        pos = torch.full((batch,), kv_len - 1, device=dev, dtype=torch.long)
    else:
        pos = torch.arange(kv_len, device=dev, dtype=torch.long)
    return lambda: sh.step(ids, pos, batch, q_len, kv_len, decode)


def section_decode(doc, save, shards, budget_s):
    doc["decode"] = []
    for tp, batch in DECODE_POINTS:
        if time.time() - T0 > budget_s * 0.45:
            doc.setdefault("skipped", []).append({"section": "decode", "tp": tp, "batch": batch})
            continue
        rec = {"tp": tp, "batch": batch, "kv_len": DECODE_KV}
        doc["decode"].append(rec)
        try:
            sh = shards[tp]
            eager = step_fn(sh, batch, DECODE_KV, True)
            for _ in range(2):
                eager()
            torch.cuda.synchronize()
            rec["eager"] = tt.measure(lambda r: eager(), max_reps=20, batches=5)
            g = capture(eager)
            rec["graph"] = tt.measure(lambda r: g.replay(), max_reps=40, batches=7)
            acts = [e for e in gpu_activities(backlogged(eager, 20000)) if not is_spin(e)]
            rec["eager_profile"] = gap_stats(acts)
            rec["eager_kernels"] = summarize_kernels(acts)
            acts_g = [e for e in gpu_activities(backlogged(lambda: g.replay(), 2000)) if not is_spin(e)]
            rec["graph_profile"] = gap_stats(acts_g)
            n = len(acts)
            if n:
                sd = sum(e["dur_us"] for e in acts)
                rec["graph_gap_per_kernel_us"] = (rec["graph"]["time_us"] - sd) / n
                rec["stream_gap_per_kernel_us"] = (rec["eager"]["time_us"] - sd) / n
            log("decode TP%d b%d: eager %.1f us (backlog_ok %s), graph %.1f us, %d kernels, sum dur %.1f us; "
                "gap/kernel graph %.3f stream %.3f; profiled graph %s" % (
                    tp, batch, rec["eager"]["time_us"], rec["eager"]["backlog_ok"], rec["graph"]["time_us"], n,
                    rec["eager_profile"].get("sum_dur_us", 0), rec.get("graph_gap_per_kernel_us", -1),
                    rec.get("stream_gap_per_kernel_us", -1), rec["graph_profile"]))
            del g
        except Exception as ex:  # noqa: BLE001
            rec["error"] = repr(ex)[:1000]
            rec["traceback"] = traceback.format_exc()[-3000:]
            log("decode TP%d b%d FAILED %r" % (tp, batch, ex))
        torch.cuda.synchronize()
        save()


def attention_inputs(tp, s, layout):
    hq, hkv, d = 64 // tp, 8 // tp, 128
    dev, bf = torch.device("cuda"), torch.bfloat16
    if layout == "contiguous":
        q = torch.randn(1, hq, s, d, device=dev, dtype=bf)
        k = torch.randn(1, hkv, s, d, device=dev, dtype=bf)
        v = torch.randn(1, hkv, s, d, device=dev, dtype=bf)
    else:
        # q, k: rotary's outputs keep the [batch, tokens, heads, d] strides of the QKV view;
        # v: a strided view into the QKV GEMM's [tokens, (hq + 2 hkv) d] output.
        qkv = torch.randn(s, (hq + 2 * hkv) * d, device=dev, dtype=bf)
        q = torch.randn(1, s, hq, d, device=dev, dtype=bf).transpose(1, 2)
        k = torch.randn(1, s, hkv, d, device=dev, dtype=bf).transpose(1, 2)
        v = qkv[:, (hq + hkv) * d:].view(1, s, hkv, d).transpose(1, 2)
    return q, k, v


def sdpa_call(backend, q, k, v):
    if backend == "default":
        return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    from torch.nn.attention import SDPBackend, sdpa_kernel
    be = getattr(SDPBackend, backend)

    def call():
        with sdpa_kernel([be]):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    return call


def section_attention(doc, save, budget_s):
    doc["attention"] = []
    for tp in ATT_TP:
        if time.time() - T0 > budget_s * 0.72:
            doc.setdefault("skipped", []).append({"section": "attention", "tp": tp})
            continue
        recs, calls = [], []
        for s in ATT_TOKENS:
            for layout in ATT_LAYOUTS:
                try:
                    q, k, v = attention_inputs(tp, s, layout)
                except Exception as ex:  # noqa: BLE001
                    doc["attention"].append({"tp": tp, "tokens": s, "layout": layout, "error": repr(ex)[:500]})
                    continue
                for be in ATT_BACKENDS:
                    rec = {"tp": tp, "q_heads": 64 // tp, "kv_heads": 8 // tp, "head_dim": 128, "tokens": s,
                           "layout": layout, "backend": be, "causal": True}
                    try:
                        call = sdpa_call(be, q, k, v)
                        call()
                        torch.cuda.synchronize()
                        rec["timing"] = tt.measure(lambda r, c=call: c())
                        calls.append((rec, call))
                    except Exception as ex:  # noqa: BLE001
                        rec["error"] = repr(ex)[:500]
                    recs.append(rec)
                    doc["attention"].append(rec)
        # one profile per TP size: marker, 3 calls, marker, ... -> each call's kernels
        try:
            error = profile_calls(calls)
            if error:
                doc.setdefault("errors", []).append({"section": "attention", "tp": tp, "error": error})
        except Exception as ex:  # noqa: BLE001
            doc.setdefault("errors", []).append({"section": "attention profile", "tp": tp, "error": repr(ex)[:500]})
        for rec in recs:
            if "timing" in rec:
                log("attn TP%d s%5d %-10s %-16s %8.1f us spacing, attention kernels %s us: %s" % (
                    tp, rec["tokens"], rec["layout"], rec["backend"], rec["timing"]["time_us"],
                    "%.1f" % rec["attention_kernel_us"] if "attention_kernel_us" in rec else "-",
                    [k["name"][:70] for k in rec.get("kernels", [])]))
            else:
                log("attn TP%d s%5d %-10s %-16s ERROR %s" % (tp, rec["tokens"], rec["layout"], rec["backend"],
                                                            rec.get("error")))
        save()
        gc.collect()
        torch.cuda.empty_cache()


def decode_ops(batch):
    """Single ops of the TP4 decode step at `batch` tokens (name, fn)."""
    dev, bf = torch.device("cuda"), torch.bfloat16
    h, hq, hkv, d, ffn = 8192, 16, 2, 128, 7168
    x = torch.randn(batch, h, device=dev, dtype=bf)
    w = torch.ones(h, device=dev, dtype=bf)
    wqkv = torch.randn((hq + 2 * hkv) * d, h, device=dev, dtype=bf) * 0.02
    q = torch.randn(batch, 1, hq, d, device=dev, dtype=bf).transpose(1, 2)
    cos = torch.randn(batch, 1, 1, d, device=dev, dtype=bf)
    sin = torch.randn(batch, 1, 1, d, device=dev, dtype=bf)
    gu = torch.randn(batch, 2 * ffn, device=dev, dtype=bf)
    return [("rms_norm", lambda: rms_norm(x, w, 1e-5)),
            ("rotary_q", lambda: q * cos + rotate_half(q) * sin),
            ("residual_add", lambda: x + x),
            ("silu_mul", lambda: (lambda a, b: F.silu(a) * b)(*gu.chunk(2, dim=-1))),
            ("qkv_gemm", lambda: F.linear(x, wqkv))]


def section_ops(doc, save, budget_s):
    doc["ops"] = []
    for b in OPS_BATCH:
        for name, fn in decode_ops(b):
            if time.time() - T0 > budget_s * 0.97:
                doc.setdefault("skipped", []).append({"section": "ops", "op": name, "batch": b})
                continue
            rec = {"op": name, "batch": b, "repeats": OPS_REPEATS}
            try:
                rep = lambda fn=fn: [fn() for _ in range(OPS_REPEATS)]  # noqa: E731
                rep()
                torch.cuda.synchronize()
                acts = [e for e in gpu_activities(backlogged(lambda: fn(), 200)) if not is_spin(e)]
                rec["kernels_per_op"] = len(acts)
                rec["kernels"] = [{"name": e["name"], "dur_us": e["dur_us"]} for e in acts]
                rec["stream"] = tt.measure(lambda r: rep())
                g = capture(rep)
                rec["graph"] = tt.measure(lambda r: g.replay())
                n = OPS_REPEATS * max(1, len(acts))
                rec["stream_period_us"] = rec["stream"]["time_us"] / n
                rec["graph_period_us"] = rec["graph"]["time_us"] / n
                log("op %-12s b%3d: %d kernels/op, per kernel stream %.3f graph %.3f us (durations %s)" % (
                    name, b, len(acts), rec["stream_period_us"], rec["graph_period_us"],
                    ["%.2f" % e["dur_us"] for e in acts]))
                del g
            except Exception as ex:  # noqa: BLE001
                rec["error"] = repr(ex)[:500]
            doc["ops"].append(rec)
        save()


def section_prefill(doc, save, shards, budget_s):
    doc["prefill"] = []
    for tp in (4, 2):
        for s in PREFILL_TOKENS:
            if time.time() - T0 > budget_s * 0.88:
                doc.setdefault("skipped", []).append({"section": "prefill", "tp": tp, "tokens": s})
                continue
            rec = {"tp": tp, "tokens": s}
            try:
                fn = step_fn(shards[tp], 1, s, False)
                fn()
                torch.cuda.synchronize()
                ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
                tt.backlog(20000)
                ev[0].record()
                for i in range(3):
                    fn()
                    ev[i + 1].record()
                torch.cuda.synchronize()
                rec["step_us"] = statistics.median(ev[i].elapsed_time(ev[i + 1]) * 1000.0 for i in range(3))
                acts = [e for e in gpu_activities(backlogged(fn, 20000)) if not is_spin(e)]
                rec["activities_per_step"] = len(acts)
                rec["memsets_per_step"] = sum(1 for e in acts if e["cat"] == "gpu_memset" or "memset" in e["name"].lower())
                rec["memset_us_per_step"] = sum(e["dur_us"] for e in acts
                                                if e["cat"] == "gpu_memset" or "memset" in e["name"].lower())
                followers = {}
                for a, nxt in zip(acts, acts[1:]):
                    if a["cat"] == "gpu_memset" or "memset" in a["name"].lower():
                        followers[nxt["name"]] = followers.get(nxt["name"], 0) + 1
                rec["memset_followed_by"] = followers
                rec["kernels"] = summarize_kernels(acts)
                rec["sequence_head"] = [{"name": e["name"][:120], "cat": e["cat"], "dur_us": round(e["dur_us"], 3)}
                                        for e in acts[:60]]
                rec["profile"] = gap_stats(acts)
                log("prefill TP%d s%d: %.1f us, %d activities, %d memsets (%.1f us); memsets before %s" % (
                    tp, s, rec["step_us"], len(acts), rec["memsets_per_step"], rec["memset_us_per_step"],
                    {k[:60]: v for k, v in followers.items()}))
            except Exception as ex:  # noqa: BLE001
                rec["error"] = repr(ex)[:800]
                rec["traceback"] = traceback.format_exc()[-3000:]
            doc["prefill"].append(rec)
            save()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--budget-s", type=float, default=120.0)
    a = ap.parse_args()
    torch.cuda.set_device(0)
    doc = {"schema": "gcsim.serving_kernels.v1", "method": __doc__, "model": MODEL, "errors": [], "skipped": []}
    doc["meta"] = provenance()
    doc["nvidia_smi_before"] = clocks()

    def save():
        doc["elapsed_s"] = time.time() - T0
        with open(a.out + ".tmp", "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(a.out + ".tmp", a.out)

    save()
    log("%s on %s, torch %s, cuDNN %s" % (VERSION, doc["meta"]["device_name"], torch.__version__,
                                         doc["meta"]["cudnn"]))
    # CUPTI's first start is slow: warm the profiler once
    try:
        gpu_activities(lambda: torch.cuda._sleep(1000))
    except Exception as ex:  # noqa: BLE001
        doc["errors"].append({"section": "profiler warm-up", "error": repr(ex)[:500]})
    for name, fn in (("tiny", lambda: section_tiny(doc, save)),):
        try:
            fn()
        except Exception as ex:  # noqa: BLE001
            doc["errors"].append({"section": name, "error": repr(ex)[:800], "traceback": traceback.format_exc()[-3000:]})
    shards = {}
    try:
        t = time.time()
        shards[4] = LocalShard(MODEL, 4, 0, None, 256 * DECODE_KV)
        shards[2] = LocalShard(MODEL, 2, 0, None, 256 * DECODE_KV)
        torch.cuda.synchronize()
        doc["setup_s"] = time.time() - t
        log("shards: %.1f s, %.1f GiB" % (doc["setup_s"], torch.cuda.memory_allocated() / 2**30))
    except Exception as ex:  # noqa: BLE001
        doc["errors"].append({"section": "shards", "error": repr(ex)[:800], "traceback": traceback.format_exc()[-3000:]})
    sections = [("decode", lambda: section_decode(doc, save, shards, a.budget_s)),
                ("attention", lambda: section_attention(doc, save, a.budget_s)),
                ("prefill", lambda: section_prefill(doc, save, shards, a.budget_s)),
                ("ops", lambda: section_ops(doc, save, a.budget_s))]
    for name, fn in sections:
        if name in ("decode", "prefill") and not shards:
            continue
        try:
            fn()
        except Exception as ex:  # noqa: BLE001
            doc["errors"].append({"section": name, "error": repr(ex)[:800], "traceback": traceback.format_exc()[-3000:]})
        save()
        gc.collect()
        torch.cuda.empty_cache()
    doc["nvidia_smi_after"] = clocks()
    save()
    log("done in %.1f s, %d errors, %d skipped" % (time.time() - T0, len(doc["errors"]), len(doc["skipped"])))


if __name__ == "__main__":
    main()
