#!/usr/bin/env python3
"""Reads serving_kernels_bench.py's measurement (one H100) and writes what it says about gcsim's serving
step: how much sooner a kernel starts when it is a node of a replayed CUDA graph than when it is launched
on a stream (against the calibration profile's graph_kernel_launch_latency, which `gcsim calibrate` fits
on this measurement's decode steps), what SDPA's default backend runs for causal GQA prefill per TP rank and how long
it takes against gcsim's attention model, and the memsets an eager prefill step launches.

    python3 calibration/fit/serving_kernels_report.py --gcsim build/gcsim \
        --measurement calibration/measurements/h100-sxm/serving_kernels_2026-11-27/serving_kernels.json \
        [-o REPORT.md]

Graph saving per kernel = (eager step on a stream, host kept ahead - the same step replayed from a
graph) / kernels in the step: both GPU-bound, the same kernels, so the difference is the launch
path alone. The profile's value is the stream launch latency less the steps' mean saving; gcsim
charges every kernel node stream latency - saving.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
PROFILE = os.path.join(ROOT, "calibration", "profiles", "h100-sxm.yaml")


def profile_values(path=PROFILE):
    """(stream launch latency, graph launch latency) in us from a calibration profile."""
    with open(path) as f:
        text = f.read()

    def ns(key):
        m = re.search(r"^%s: (\d+)ns$" % key, text, re.M)
        return float(m.group(1)) / 1000.0 if m else None
    return ns("kernel_launch_latency"), ns("graph_kernel_launch_latency")


def gcsim_attention_us(gcsim, heads, kv_heads, tokens, family="cudnn"):
    """gcsim's time of one causal prefill attention kernel from its first tile to its end (the op starts
    after the launch latency), us: what torch.profiler's kernel duration measures."""
    cfg = ("cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 1}\n"
           "workload:\n  kind: graph\n  ops:\n"
           "    - {name: a, rank: 0, op: attention, batch: 1, heads: %d, kv_heads: %d, q_len: %d, "
           "head_dim: 128, causal: true, kernel: %s}\n" % (heads, kv_heads, tokens, family))
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "a.yaml")
        with open(p, "w") as f:
            f.write(cfg)
        subprocess.run([gcsim, "run", p, "-o", d, "-q"], check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(d, "summary.json")) as f:
            s = json.load(f)
    op = s["ops"][0]
    return (op["end_s"] - op["start_s"]) * 1e6


def graph_section(doc, out, launch_us, graph_us):
    saving_profile = launch_us - graph_us if launch_us and graph_us else None
    out.append("## Kernel spacing: CUDA graph vs stream\n")
    out.append("Profile (`calibration/profiles/h100-sxm.yaml`, `gcsim calibrate` on the decode steps below; "
               "empty kernels alone, 1.617 vs 0.782 us apart, would save 0.835 us): stream launch latency "
               "%.3f us, graph node %.3f us: a graph saves %.3f us per kernel.\n" % (
                   launch_us, graph_us, saving_profile))
    t = doc.get("tiny", {})
    if t.get("graph_period_us") is not None:
        st = t.get("stream") or {}
        out.append("Tiny kernels (`x.add_(1)`, 1 element): graph node period %.3f us (slope over %s nodes, "
                   "fixed %.2f us per replay); stream period %s us (backlog ok: %s); saving %s us.\n" % (
                       t["graph_period_us"], [p.get("nodes") for p in t.get("graph", [])],
                       t.get("graph_replay_fixed_us", float("nan")),
                       "%.3f" % st["period_us"] if "period_us" in st else "-", st.get("backlog_ok"),
                       "%.3f" % (st["period_us"] - t["graph_period_us"]) if "period_us" in st else "-"))
        for name in ("graph_profile", "stream_profile"):
            p = t.get(name)
            if p and "median_start_to_start_us" in p:
                out.append("- %s (torch.profiler): %d kernels, median start-to-start %.3f us, median "
                           "end-to-start %.3f us, median duration %.3f us\n" % (
                               name.replace("_profile", ""), p["n"], p["median_start_to_start_us"],
                               p["median_end_to_start_us"], p["median_dur_us"]))
    rows = []
    for r in doc.get("decode", []):
        if "graph" not in r or "eager" not in r:
            continue
        n = r.get("eager_profile", {}).get("n") or 0
        if not n:
            continue
        saving = (r["eager"]["time_us"] - r["graph"]["time_us"]) / n
        rows.append((r, n, saving))
    if rows:
        out.append("\nDecode steps of one TP rank on one GPU (no collectives), KV %d:\n" % rows[0][0]["kv_len"])
        out.append("| TP | batch | kernels | stream step (us) | graph step (us) | saving / kernel (us) | "
                   "gap / kernel in graph (us) | on stream (us) | backlog ok |")
        out.append("|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        for r, n, saving in rows:
            out.append("| %d | %d | %d | %.1f | %.1f | %.3f | %.3f | %.3f | %s |" % (
                r["tp"], r["batch"], n, r["eager"]["time_us"], r["graph"]["time_us"], saving,
                r.get("graph_gap_per_kernel_us", float("nan")), r.get("stream_gap_per_kernel_us", float("nan")),
                r["eager"].get("backlog_ok")))
        s = [x[2] for x in rows]
        out.append("\nSaving per kernel on the decode steps: mean %.3f us (%.3f .. %.3f); the profile's %.3f. "
                   "The stream steps' backlog ran out before their last launch (a step is ~330 launches at "
                   "~13 us of host each, and CUDA's launch queue holds fewer than the backlog's steps), but "
                   "they are GPU-bound: one profiled stream step behind a 20 ms sleep spans what the events "
                   "give, and its kernels leave the same ~1.4 us between them as the tiny kernels with the "
                   "backlog intact.\n" % (statistics.mean(s), min(s), max(s), saving_profile))
    ops = [r for r in doc.get("ops", []) if "graph_period_us" in r]
    if ops:
        out.append("\nSingle ops (TP4 decode shapes), %d repeats, per kernel:\n" % ops[0]["repeats"])
        out.append("| op | batch | kernels/op | stream period (us) | graph period (us) | saving (us) | "
                   "kernel durations (us) |")
        out.append("|---|---:|---:|---:|---:|---:|---|")
        for r in ops:
            out.append("| %s | %d | %d | %.3f | %.3f | %.3f | %s |" % (
                r["op"], r["batch"], r["kernels_per_op"], r["stream_period_us"], r["graph_period_us"],
                r["stream_period_us"] - r["graph_period_us"],
                " ".join("%.2f" % k["dur_us"] for k in r.get("kernels", []))))
    return rows


def attention_section(doc, out, gcsim, launch_us):
    recs = [r for r in doc.get("attention", []) if "timing" in r]
    if not recs:
        return
    out.append("\n## Causal GQA prefill attention per TP rank (batch 1, head dim 128)\n")
    out.append("time = back-to-back spacing (events); kernel = torch.profiler's attention kernel duration "
               "(what the serving step's attention class sums); gcsim = the `cudnn` family's kernel from its first "
               "tile (its op's end - start; the %.3f us launch latency before it, as a profiler's duration "
               "leaves it out).\n" % launch_us)
    out.append("| TP | heads q/kv | tokens | layout | backend | time (us) | kernel (us) | gcsim cudnn (us) | "
               "gcsim vs kernel | kernels |")
    out.append("|---:|---|---:|---|---|---:|---:|---:|---:|---|")
    cache = {}
    for r in recs:
        key = (r["q_heads"], r["kv_heads"], r["tokens"])
        if gcsim and key not in cache:
            try:
                cache[key] = gcsim_attention_us(gcsim, *key)
            except Exception as ex:  # noqa: BLE001
                print("gcsim failed for %s: %r" % (key, ex), file=sys.stderr)
                cache[key] = None
        g = cache.get(key)
        k = r.get("attention_kernel_us")
        names = sorted({x["name"][:60] for x in r.get("kernels", [])})
        out.append("| %d | %d/%d | %d | %s | %s | %.1f | %s | %s | %s | %s |" % (
            r["tp"], r["q_heads"], r["kv_heads"], r["tokens"], r["layout"], r["backend"], r["timing"]["time_us"],
            "%.1f" % k if k else "-", "%.1f" % g if g else "-",
            "%+.1f%%" % (100 * (g - k) / k) if g and k else "-", "; ".join(names)))


def prefill_section(doc, out):
    recs = [r for r in doc.get("prefill", []) if "step_us" in r]
    if not recs:
        return
    out.append("\n## Eager prefill steps of one TP rank (no collectives): memsets\n")
    out.append("| TP | tokens | step (us) | GPU activities | memsets | memset us | what follows each memset |")
    out.append("|---:|---:|---:|---:|---:|---:|---|")
    for r in recs:
        out.append("| %d | %d | %.1f | %d | %d | %.1f | %s |" % (
            r["tp"], r["tokens"], r["step_us"], r["activities_per_step"], r["memsets_per_step"],
            r["memset_us_per_step"], "; ".join("%s x%d" % (k[:50], v) for k, v in r["memset_followed_by"].items())))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gcsim", default=os.path.join(ROOT, "build", "gcsim"))
    ap.add_argument("--measurement", required=True)
    ap.add_argument("-o", "--out")
    a = ap.parse_args()
    with open(a.measurement) as f:
        doc = json.load(f)
    launch_us, graph_us = profile_values()
    meta = doc.get("meta", {})
    out = ["# Serving kernels on one GPU: graph spacing, prefill attention, memsets\n",
           "Measurement: `%s` (%s, torch %s, cuDNN %s, %s). Produced by "
           "`calibration/fit/serving_kernels_report.py`.\n" % (
               os.path.relpath(a.measurement, ROOT), meta.get("device_name"), meta.get("torch"), meta.get("cudnn"),
               meta.get("date_utc"))]
    graph_section(doc, out, launch_us, graph_us)
    attention_section(doc, out, a.gcsim if os.path.exists(a.gcsim) else None, launch_us)
    prefill_section(doc, out)
    text = "\n".join(out) + "\n"
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
