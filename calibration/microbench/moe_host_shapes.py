#!/usr/bin/env python3
"""Why the eager expert loop's host cost per launch differs by layer shape (gcsim issue 22): the
expert loop of calibration/microbench/moe_ep_bench.py (Layer.experts_fwd / experts_bwd, its
weights and code) on one GPU, for the layer shapes and rows per expert of the measured points,
the shapes interleaved over many rounds so that a shape effect is not a warm-up trend.

    python3 calibration/microbench/moe_host_shapes.py -o OUT.json [--budget-s 60]

What it records per case (hidden, expert FFN, local experts L, rows per expert):
  whole     host µs of Layer.experts_fwd and Layer.experts_bwd (the bench's own code, timed as a
            whole with time.perf_counter_ns), the GPU back-logged by torch.cuda._sleep so no launch
            waits for it: per round, so a trend along the run shows;
  ops       host µs of each statement of the same loop (a traced copy, `traced_fwd`/`traced_bwd`,
            the same torch calls in the same order with the same tensor lifetimes, checked equal to
            the bench's output), per expert index, back-logged, no sync between ops; median over
            rounds, and the first and second half of the rounds apart;
  ops_*_idle / ops_*_busy  the same statements, every third round, each launched onto an idle
            GPU (drained before it) or behind one running 50-µs kernel: does a call's host cost
            depend on the launch queue's state (deep back-log, empty, one deep)?
  natural   the loop with the GPU idle at its start (no back-log), host µs and the CUDA-event time
            of each pass: what the bench's instrumented expert phase times (max of host and GPU);
  gpu       CUDA-event µs of each pass issued while the GPU sleeps: the GPU's own time;
  blocked   `whole` again with the case repeated back to back (as the bench runs one point) after
            the interleaved rounds, and the caching allocator's counters over those repetitions
            (a cudaMalloc per pass would show as segment allocations);
  profile   torch.profiler CPU self time per aten op and CUDA runtime call (cudaLaunchKernel,
            cudaLaunchKernelExC, cudaMemsetAsync, cudaMalloc, ...), a few passes per case;
  affinity  `whole` of two cases with the main thread pinned to one CPU of each NUMA node in turn
            (does the host's speed differ by core, as the 4-H100 ranks' issue times do?).
Also: CPU model and MHz before/after, load average, the GPU's NUMA node, nvidia-smi before/after,
versions, the script's sha256. Partial results are written after every stage.
"""
import argparse
import gc
import hashlib
import json
import os
import random
import statistics
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import moe_ep_bench as bench  # noqa: E402
import torch_timing as tt  # noqa: E402

VERSION = "moe_host_shapes 1.1"
SMI = "clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active"
# (name, hidden, expert ffn, local experts, rows per expert): the measured points' hot-rank expert
# loops at 4K-8K tokens per rank, balanced (2 H200s: 4 / 8 local experts; 4 H100s: 2 / 4 / 8), one
# skewed hot rank, and two crossings (the other shape at the same L and rows) to tell the shape's
# sizes from the number of experts.
CASES = [
    ("h2048_f1408_L2_n4096", 2048, 1408, [4096] * 2),       # 4 H100s, hidden 2048, 4K, balanced
    ("h2048_f1408_L4_n2048", 2048, 1408, [2048] * 4),       # 2 H200s, hidden 2048, 4K, balanced
    ("h4096_f2048_L4_n2048", 4096, 2048, [2048] * 4),       # 4 H100s, hidden 4096, 4K, balanced
    ("h4096_f2048_L8_n1024", 4096, 2048, [1024] * 8),       # 2 H200s, hidden 4096, 4K, balanced
    ("h2048_f1024_L8_n2048", 2048, 1024, [2048] * 8),       # 4 H100s, top-4 layer, 4K, balanced
    ("h2048_f1408_L2_n8192", 2048, 1408, [8192] * 2),       # 4 H100s, hidden 2048, 8K, balanced
    ("h2048_f1408_L2_skew", 2048, 1408, [16384, 6252]),     # 4 H100s, hidden 2048, 4K, s1.5 rank 0
    ("h4096_f2048_L2_n4096", 4096, 2048, [4096] * 2),       # crossing: hidden 4096 at L2 n4096
    ("h2048_f1408_L8_n1024", 2048, 1408, [1024] * 8),       # crossing: hidden 2048 at L8 n1024
]
FWD_OPS = ["slice_x", "fc1", "slice_a1", "silu", "slice_a2", "mul", "fc2_out", "keep"]
BWD_OPS = ["slice_g", "fc2_wgrad", "fc2_dgrad", "slice_a", "mul_a2", "silu_backward", "silu", "mul_silu",
           "cat", "fc1_wgrad", "fc1_dgrad_out", "free"]


def init_single_rank():
    """moe_ep_bench.Layer asks torch.distributed for its rank and world size: one rank, gloo (no
    collective is called here)."""
    path = os.path.join(tempfile.mkdtemp(), "pg")
    dist.init_process_group("gloo", init_method="file://" + path, rank=0, world_size=1)


def make_layer(hidden, ffn, rows):
    """The bench's Layer with len(rows) local experts (one rank: E = L) and rows[e] rows each."""
    L = len(rows)
    tokens = max(1, sum(rows) // 2)  # top-2: tokens*2 copies; only x/gy/idx sizes depend on it
    layer = bench.Layer(tokens, hidden, ffn, L, 2, [0] * L)
    layer.per_expert = list(rows)
    g = torch.Generator(device="cuda")
    g.manual_seed(99)
    xs = torch.randn(sum(rows), hidden, device="cuda", dtype=bench.BF, generator=g)
    gy = torch.randn(sum(rows), hidden, device="cuda", dtype=bench.BF, generator=g)
    return layer, xs, gy


def traced_fwd(layer, xs, tick):
    """Layer.experts_fwd statement by statement, tick() between statements (see Ticker)."""
    tick()
    y = torch.empty_like(xs)
    saved = []
    o = 0
    tick()
    for e in range(layer.L):
        n = layer.per_expert[e]
        if n == 0:
            saved.append(None)
            continue
        xe = xs[o:o + n]
        tick()
        a = xe @ layer.w1[e]
        tick()
        a1 = a[:, :layer.F]
        tick()
        s = F.silu(a1)
        tick()
        a2 = a[:, layer.F:]
        tick()
        h = s * a2
        del s, a1, a2
        tick()
        torch.mm(h, layer.w2[e], out=y[o:o + n])
        tick()
        saved.append((xe, a, h))
        o += n
        tick()
    return y, saved


def traced_bwd(layer, gy, saved, tick):
    """Layer.experts_bwd statement by statement (names kept alive as long as there)."""
    tick()
    gx = torch.empty_like(gy)
    o = 0
    tick()
    for e in range(layer.L):
        n = layer.per_expert[e]
        if n == 0:
            continue
        xe, a, h = saved[e]
        ge = gy[o:o + n]
        tick()
        dw2 = h.t() @ ge
        tick()
        dh = ge @ layer.w2[e].t()
        tick()
        a1, a2 = a[:, :layer.F], a[:, layer.F:]
        tick()
        t = dh * a2
        tick()
        d1 = torch.ops.aten.silu_backward(t, a1)
        del t
        tick()
        s = F.silu(a1)
        tick()
        m = dh * s
        del s
        tick()
        da = torch.cat([d1, m], dim=1)
        del m
        tick()
        dw1 = xe.t() @ da
        tick()
        torch.mm(da, layer.w1[e].t(), out=gx[o:o + n])
        tick()
        del dw1, dw2
        o += n
        tick()
    return gx


class Ticker:
    """Marks the end of one statement and the start of the next. mode 'backlog': nothing between
    them (the GPU asleep behind a long sleep, a deep launch queue); 'idle': the GPU drained first
    (each call launches onto an idle GPU, an empty queue); 'busy': drained, then a 50-µs sleep
    kernel (each call launches behind one running kernel, a queue one deep). Only the statements
    are timed: the drain and the sleep's own launch fall between marks."""

    def __init__(self, mode):
        self.mode = mode
        self.marks = []  # (end of the previous statement, start of the next), ns

    def __call__(self):
        end = time.perf_counter_ns()
        if self.mode != "backlog":
            torch.cuda.synchronize()
            if self.mode == "busy":
                tt.backlog(50.0)
        self.marks.append((end, time.perf_counter_ns()))


def split_ops(marks, ops, L):
    """[head µs, [[op µs per op] per expert]] from a Ticker's marks."""
    d = [(b[0] - a[1]) / 1000.0 for a, b in zip(marks, marks[1:])]
    head, rest = d[0], d[1:]
    k = len(ops)
    return head, [rest[e * k:(e + 1) * k] for e in range(L)]


def backlog_us(L):
    """GPU sleep that outlasts the host's issue of one forward and backward (13 launches per
    expert at up to ~100 µs each on a slow host) and a margin."""
    return 2000.0 + 13 * L * 100.0


def whole_pass(layer, xs, gy, mode):
    """One forward + backward of the bench's own loop. mode: 'backlog' (GPU asleep while the host
    issues: host µs = issue cost), 'natural' (GPU idle at the start). Returns host µs and
    event µs per pass."""
    torch.cuda.synchronize()
    if mode == "backlog":
        tt.backlog(backlog_us(layer.L))
    e0, e1, e2 = (torch.cuda.Event(enable_timing=True) for _ in range(3))
    gate = torch.cuda.Event()
    gate.record()
    t0 = time.perf_counter_ns()
    e0.record()
    y, saved = layer.experts_fwd(xs)
    e1.record()
    t1 = time.perf_counter_ns()
    gx = layer.experts_bwd(gy, saved)
    e2.record()
    t2 = time.perf_counter_ns()
    still_asleep = not gate.query() if mode == "backlog" else None
    torch.cuda.synchronize()
    del y, saved, gx
    return {"host_fwd": (t1 - t0) / 1000.0, "host_bwd": (t2 - t1) / 1000.0,
            "ev_fwd": e0.elapsed_time(e1) * 1000.0, "ev_bwd": e1.elapsed_time(e2) * 1000.0,
            "backlog_ok": still_asleep}


def traced_pass(layer, xs, gy, mode="backlog"):
    torch.cuda.synchronize()
    if mode == "backlog":
        tt.backlog(backlog_us(layer.L))
    tf, tb = Ticker(mode), Ticker(mode)
    y, saved = traced_fwd(layer, xs, tf)
    gx = traced_bwd(layer, gy, saved, tb)
    torch.cuda.synchronize()
    del y, saved, gx
    return split_ops(tf.marks, FWD_OPS, layer.L), split_ops(tb.marks, BWD_OPS, layer.L)


def check_traced(layer, xs, gy):
    """The traced copy computes what the bench's loop computes (same calls, same order)."""
    y0, s0 = layer.experts_fwd(xs)
    g0 = layer.experts_bwd(gy, s0)
    y1, s1 = traced_fwd(layer, xs, Ticker("backlog"))
    g1 = traced_bwd(layer, gy, s1, Ticker("backlog"))
    torch.cuda.synchronize()
    return bool(torch.equal(y0, y1) and torch.equal(g0, g1))


def med(v):
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None


def summarize_ops(samples, ops, L):
    """samples: [(head, per-expert lists)] over rounds -> medians per op and expert."""
    heads = [s[0] for s in samples]
    out = {"head": med(heads), "per_expert": []}
    for e in range(L):
        out["per_expert"].append({op: med([s[1][e][i] for s in samples if e < len(s[1]) and i < len(s[1][e])])
                                  for i, op in enumerate(ops)})
    out["per_op_mean_over_experts"] = {op: med([pe[op] for pe in out["per_expert"]]) for op in ops}
    return out


def cpu_state():
    st = {}
    try:
        mhz = [float(l.split(":")[1]) for l in open("/proc/cpuinfo") if l.startswith("cpu MHz")]
        st["cpu_mhz_min_mean_max"] = [min(mhz), sum(mhz) / len(mhz), max(mhz)] if mhz else None
    except Exception as ex:  # noqa: BLE001
        st["cpu_mhz"] = "unreadable: %r" % ex
    try:
        st["loadavg"] = open("/proc/loadavg").read().strip()
    except Exception as ex:  # noqa: BLE001
        st["loadavg"] = "unreadable: %r" % ex
    try:
        st["affinity"] = sorted(os.sched_getaffinity(0))
    except Exception as ex:  # noqa: BLE001
        st["affinity"] = "unreadable: %r" % ex
    return st


def host_info():
    info = {"cpu_count": os.cpu_count()}
    try:
        for l in open("/proc/cpuinfo"):
            if l.startswith("model name"):
                info["cpu_model"] = l.split(":", 1)[1].strip()
                break
    except Exception as ex:  # noqa: BLE001
        info["cpu_model"] = "unreadable: %r" % ex
    nodes = {}
    try:
        base = "/sys/devices/system/node"
        for d in sorted(os.listdir(base)):
            if d.startswith("node") and d[4:].isdigit():
                nodes[d] = open(os.path.join(base, d, "cpulist")).read().strip()
    except Exception as ex:  # noqa: BLE001
        nodes["error"] = repr(ex)
    info["numa_nodes"] = nodes
    try:
        lines = tt.nvsmi("index,pci.bus_id").splitlines()
        info["gpus_pci"] = lines
        # nvidia-smi lists every GPU whatever CUDA_VISIBLE_DEVICES says; run.sh uses GPU 0
        bus = lines[1].split(",")[1].strip().lower()
        dom, rest = bus.split(":", 1)
        path = "/sys/bus/pci/devices/%s:%s/numa_node" % (dom[-4:], rest)
        info["gpu_pci"] = bus
        info["gpu_numa_node"] = open(path).read().strip()
    except Exception as ex:  # noqa: BLE001
        info["gpu_numa_node"] = "unreadable: %r" % ex
    info["python_gc_threshold"] = gc.get_threshold()
    return info


def parse_cpulist(txt):
    out = []
    for part in txt.split(","):
        if "-" in part:
            a, b = part.split("-")
            out += list(range(int(a), int(b) + 1))
        elif part.strip():
            out.append(int(part))
    return out


def alloc_counters():
    s = torch.cuda.memory_stats()
    keys = ("num_alloc_retries", "num_device_alloc", "num_device_free", "segment.all.allocated",
            "segment.all.freed", "segment.large_pool.allocated", "segment.small_pool.allocated",
            "allocation.all.allocated", "allocation.large_pool.allocated", "allocation.small_pool.allocated")
    return {k: s.get(k) for k in keys}


def profile_case(layer, xs, gy, passes):
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(passes):
            tt.backlog(backlog_us(layer.L))
            y, saved = layer.experts_fwd(xs)
            gx = layer.experts_bwd(gy, saved)
            del y, saved, gx
        torch.cuda.synchronize()
    rows = []
    for ev in prof.key_averages():
        if not ev.count:
            continue
        rows.append({"name": ev.key[:120], "count": ev.count / passes,
                     "self_cpu_us": ev.self_cpu_time_total / passes, "cpu_us": ev.cpu_time_total / passes,
                     "self_cpu_us_per_call": ev.self_cpu_time_total / ev.count})
    rows.sort(key=lambda r: -r["self_cpu_us"])
    return rows[:45]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--budget-s", type=float, default=60.0, help="no new stage after this")
    ap.add_argument("--rounds", type=int, default=120, help="interleaved rounds (fewer if the budget ends)")
    ap.add_argument("--blocked", type=int, default=30, help="back-to-back passes per case after the rounds")
    a = ap.parse_args()
    t0 = time.perf_counter()
    left = lambda: a.budget_s - (time.perf_counter() - t0)  # noqa: E731
    torch.cuda.set_device(0)
    init_single_rank()
    meta = tt.provenance("calibration/microbench/moe_host_shapes.py", VERSION)
    for name in ("moe_host_shapes.py", "moe_ep_bench.py", "torch_timing.py"):
        try:
            with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), name), "rb") as f:
                meta["sha256_" + name] = hashlib.sha256(f.read()).hexdigest()
        except Exception as ex:  # noqa: BLE001
            meta["sha256_" + name] = "unreadable: %r" % ex
    meta["nvidia_smi_before"] = tt.nvsmi(SMI)
    meta["host"] = host_info()
    meta["cpu_before"] = cpu_state()
    meta["cases"] = [{"name": c[0], "hidden": c[1], "expert_ffn": c[2], "rows": c[3]} for c in CASES]
    doc = {"schema": "gcsim.microbench.v1", "meta": meta, "cases": {}, "rounds": [], "errors": []}

    def write():
        doc["elapsed_s"] = time.perf_counter() - t0
        text = json.dumps(doc, indent=1)
        with open(a.out, "w") as f:
            f.write(text)

    # Build every case and warm it (allocator blocks, cuBLAS heuristics, kernels' first loads).
    built = {}
    for name, H, Fh, rows in CASES:
        rec = {"hidden": H, "expert_ffn": Fh, "rows": rows, "L": len(rows)}
        try:
            layer, xs, gy = make_layer(H, Fh, rows)
            for _ in range(3):
                whole_pass(layer, xs, gy, "natural")
                traced_pass(layer, xs, gy)
            rec["traced_equals_bench"] = check_traced(layer, xs, gy)
            built[name] = (layer, xs, gy)
        except Exception as ex:  # noqa: BLE001
            rec["error"] = repr(ex)
            print("%s: build failed: %r" % (name, ex), flush=True)
        doc["cases"][name] = rec
    write()
    print("built %d cases in %.1f s" % (len(built), time.perf_counter() - t0), flush=True)

    # Interleaved rounds: every case once per round in a seeded random order, three passes each.
    rng = random.Random(2211)
    samples = {n: {"whole": [], "natural": [], "fwd_ops": [], "bwd_ops": [], "fwd_ops_idle": [], "bwd_ops_idle": [],
                   "fwd_ops_busy": [], "bwd_ops_busy": []} for n in built}
    rounds_budget = 0.55 * a.budget_s
    for rnd in range(a.rounds):
        if time.perf_counter() - t0 > rounds_budget:
            print("rounds stopped at %d (budget)" % rnd, flush=True)
            break
        order = list(built)
        rng.shuffle(order)
        doc["rounds"].append(order)
        for name in order:
            layer, xs, gy = built[name]
            try:
                samples[name]["whole"].append(whole_pass(layer, xs, gy, "backlog"))
                f_ops, b_ops = traced_pass(layer, xs, gy)
                samples[name]["fwd_ops"].append(f_ops)
                samples[name]["bwd_ops"].append(b_ops)
                samples[name]["natural"].append(whole_pass(layer, xs, gy, "natural"))
                if rnd % 3 == 0:  # the queue-state variants, every third round
                    for mode in ("idle", "busy"):
                        f_ops, b_ops = traced_pass(layer, xs, gy, mode)
                        samples[name]["fwd_ops_" + mode].append(f_ops)
                        samples[name]["bwd_ops_" + mode].append(b_ops)
            except Exception as ex:  # noqa: BLE001
                doc["errors"].append("%s round %d: %r" % (name, rnd, ex))
        if rnd % 20 == 19:
            print("round %d at %.1f s" % (rnd + 1, time.perf_counter() - t0), flush=True)
    for name, s in samples.items():
        rec = doc["cases"][name]
        L = rec["L"]
        try:
            w = s["whole"]
            half = len(w) // 2
            rec["whole"] = {
                "rounds": len(w),
                "host_fwd_us": med([x["host_fwd"] for x in w]), "host_bwd_us": med([x["host_bwd"] for x in w]),
                "host_fwd_us_first_half": med([x["host_fwd"] for x in w[:half]]),
                "host_fwd_us_second_half": med([x["host_fwd"] for x in w[half:]]),
                "host_bwd_us_first_half": med([x["host_bwd"] for x in w[:half]]),
                "host_bwd_us_second_half": med([x["host_bwd"] for x in w[half:]]),
                "host_fwd_us_per_round": [round(x["host_fwd"], 1) for x in w],
                "host_bwd_us_per_round": [round(x["host_bwd"], 1) for x in w],
                "gpu_fwd_us": med([x["ev_fwd"] for x in w]), "gpu_bwd_us": med([x["ev_bwd"] for x in w]),
                "backlog_ok_share": (sum(1 for x in w if x["backlog_ok"]) / len(w)) if w else None,
                "launches_fwd": 4 * L, "launches_bwd": 9 * L,
            }
            rec["whole"]["host_us_per_launch_fwd"] = rec["whole"]["host_fwd_us"] / (4 * L)
            rec["whole"]["host_us_per_launch_bwd"] = rec["whole"]["host_bwd_us"] / (9 * L)
            nat = s["natural"]
            rec["natural"] = {"host_fwd_us": med([x["host_fwd"] for x in nat]),
                              "host_bwd_us": med([x["host_bwd"] for x in nat]),
                              "event_fwd_us": med([x["ev_fwd"] for x in nat]),
                              "event_bwd_us": med([x["ev_bwd"] for x in nat])}
            half = len(s["fwd_ops"]) // 2
            rec["ops_fwd"] = summarize_ops(s["fwd_ops"], FWD_OPS, L)
            rec["ops_bwd"] = summarize_ops(s["bwd_ops"], BWD_OPS, L)
            rec["ops_fwd_first_half"] = summarize_ops(s["fwd_ops"][:half], FWD_OPS, L)["per_op_mean_over_experts"]
            rec["ops_fwd_second_half"] = summarize_ops(s["fwd_ops"][half:], FWD_OPS, L)["per_op_mean_over_experts"]
            rec["ops_bwd_first_half"] = summarize_ops(s["bwd_ops"][:half], BWD_OPS, L)["per_op_mean_over_experts"]
            rec["ops_bwd_second_half"] = summarize_ops(s["bwd_ops"][half:], BWD_OPS, L)["per_op_mean_over_experts"]
            for mode in ("idle", "busy"):
                if s["fwd_ops_" + mode]:
                    rec["ops_fwd_" + mode] = summarize_ops(s["fwd_ops_" + mode], FWD_OPS, L)
                    rec["ops_bwd_" + mode] = summarize_ops(s["bwd_ops_" + mode], BWD_OPS, L)
            print("%s: host fwd %.0f bwd %.0f us (%.1f / %.1f per launch), gpu %.0f / %.0f, natural %.0f / %.0f" % (
                name, rec["whole"]["host_fwd_us"], rec["whole"]["host_bwd_us"],
                rec["whole"]["host_us_per_launch_fwd"], rec["whole"]["host_us_per_launch_bwd"],
                rec["whole"]["gpu_fwd_us"], rec["whole"]["gpu_bwd_us"],
                rec["natural"]["event_fwd_us"], rec["natural"]["event_bwd_us"]), flush=True)
        except Exception as ex:  # noqa: BLE001
            rec["summary_error"] = repr(ex)
    meta["cpu_after_rounds"] = cpu_state()
    write()

    # Blocked: each case back to back, as the bench runs a point; allocator counters around it.
    for name, (layer, xs, gy) in built.items():
        if left() < 0.3 * a.budget_s:
            print("blocked stage stopped at %s (budget)" % name, flush=True)
            break
        rec = doc["cases"][name]
        try:
            before = alloc_counters()
            w = [whole_pass(layer, xs, gy, "backlog") for _ in range(a.blocked)]
            after = alloc_counters()
            rec["blocked"] = {"passes": len(w), "host_fwd_us": med([x["host_fwd"] for x in w]),
                              "host_bwd_us": med([x["host_bwd"] for x in w]),
                              "allocator_delta": {k: (after[k] - before[k]) if (after[k] is not None and
                                                  before[k] is not None) else None for k in before}}
        except Exception as ex:  # noqa: BLE001
            rec["blocked_error"] = repr(ex)
    write()

    # Affinity: two cases, the main thread on the first CPU of each NUMA node (and a second CPU of
    # the GPU's node), interleaved.
    try:
        allowed = sorted(os.sched_getaffinity(0))
        cpus = []
        for node, lst in sorted(meta["host"]["numa_nodes"].items()):
            if node.startswith("node"):
                cs = [c for c in parse_cpulist(lst) if c in allowed]
                cpus += cs[:2]
        cpus = cpus[:6] or allowed[:2]
        pick = [n for n in ("h2048_f1408_L4_n2048", "h4096_f2048_L8_n1024") if n in built]
        aff = {str(c): {n: [] for n in pick} for c in cpus}
        for rep in range(12):
            if left() < 0.12 * a.budget_s:
                break
            for c in cpus:
                os.sched_setaffinity(0, {c})
                for n in pick:
                    layer, xs, gy = built[n]
                    aff[str(c)][n].append(whole_pass(layer, xs, gy, "backlog"))
        os.sched_setaffinity(0, allowed)
        doc["affinity"] = {c: {n: {"passes": len(v), "host_fwd_us": med([x["host_fwd"] for x in v]),
                                   "host_bwd_us": med([x["host_bwd"] for x in v])} for n, v in d.items()}
                           for c, d in aff.items()}
    except Exception as ex:  # noqa: BLE001
        doc["affinity_error"] = repr(ex)
        try:
            os.sched_setaffinity(0, allowed)
        except Exception:  # noqa: BLE001
            pass
    write()

    # torch.profiler per case (its own overhead inflates CPU times: read them as shares).
    for name, (layer, xs, gy) in built.items():
        if left() < 0.03 * a.budget_s:
            print("profile stage stopped at %s (budget)" % name, flush=True)
            break
        try:
            doc["cases"][name]["profile"] = profile_case(layer, xs, gy, 5)
        except Exception as ex:  # noqa: BLE001
            doc["cases"][name]["profile_error"] = repr(ex)
        write()
    meta["cpu_after"] = cpu_state()
    meta["nvidia_smi_after"] = tt.nvsmi(SMI)
    write()
    print("done in %.1f s" % (time.perf_counter() - t0), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
