#!/usr/bin/env python3
"""Decode GEMMs, kernel by kernel (issue 16): gcsim's GEMM model against the cuBLAS kernels of the
serving step's profiled decode steps (one H100), and the choice of the tile overlap knee p
(models/gpu/kernel_cost_model.h, kGemmOverlapKnee).

    python3 calibration/fit/decode_gemm_fit.py [--gcsim build/gcsim] [-o REPORT.md]

Data: calibration/measurements/h100-sxm/serving_kernels_2026-11-27/serving_kernels.json, section
decode (torch.profiler kernel durations of one eager step of the Llama-2-70B TP4/TP2 rank shard, 8
layers, batch 1/32/256: per layer QKV, output projection, gate+up, down; then the LM head), and the
bf16 GEMMs of the microbench recorded in calibration/profiles/h100-sxm.yaml (its `measurements`,
each with its fit/heldout set).

The p grid is evaluated on a transcription of gemm_kernel/isolated_time (below: tile candidates,
split-K, setup, waves, per-SM HBM share) with the preset's and the profile's values; with --gcsim
the transcription is checked against the binary shape by shape (it must agree to 0.05 us) at
--gcsim-model: `max` for a gcsim without the overlap (main), `4` for one built from commit d49e5c8
(branch dgemm), which implements p = 4 and the narrow MMAs. p is chosen on the TP4 class sums (3 points); TP2 and the microbench are held out.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
PROFILE = os.path.join(ROOT, "calibration", "profiles", "h100-sxm.yaml")
PRESET = os.path.join(ROOT, "configs", "hardware", "h100-sxm.yaml")
KERNELS = os.path.join(ROOT, "calibration", "measurements", "h100-sxm", "serving_kernels_2026-11-27",
                       "serving_kernels.json")
TILES = [(128, 256), (256, 128), (128, 128), (128, 64), (64, 128), (64, 64)]
GRID = [None, 12, 8, 6, 5, 4, 3, 2.5, 2]  # None: the plain max (before)
SHIPPED = 4.0
FINDINGS = """- Batch 1-32: the kernels are weight streaming. cuBLAS runs 64x8 / 128x8 / 64x32 / 128x32 tiles (the
  batch on wgmma's narrow side); the model's padded 64-256-row tiles showed as much arithmetic as
  streaming (1 x 8192 x 8192, 128x128 tiles: 43 us of MMAs beside 46 us of HBM), harmless under the
  plain max but not under any overlap term: the MMAs now run the batch's rows rounded up to 8.
  The class is within -6 .. -3%; what is left is the QKV projection (N = 2560 at TP4: cuBLAS's split-K
  kernel 17.0 us + its reduction 1.9 against gcsim 15.9, -16%; TP2 N = 5120: 33.3 against 30.2, -9%):
  a grid of 40-80 CTAs that the model lets stream at the whole stack's rate (hbm.h's per-SM share
  reaches B at 22 SMs). Not changed: the memory-kernel saturation curve (memory_spread.h) is for
  LSU loads, not a GEMM's TMA pipeline, and no single-GPU sweep isolates it.
- Batch 256: the kernels sit at balance. TP4 gate+up (nvjet 112x128, 256 CTAs in 2 rounds on 132
  SMs): 72 us of MMAs per SM (0.87 of the bf16 peak) against 80 us of weight streaming at the
  profile's 2.94 TB/s; measured 98.4 us, gcsim 86.7 with the plain max (-12%). Likewise the LM head
  (-17%), QKV (-10%), output projection + down (-10% together). A pipelined mainloop hides the
  shorter side only where the other has slack in every K-block; near balance each stage waits on
  whichever is late. The p-norm (p = 4, 1.19x the larger at balance) gives +1.7%, -5.7%, -4.9%.
- Split-K: cuBLAS splits the QKV projection at batch 1-32 (splitK kernels + splitKreduce_kernel,
  1.9-2.3 us); the model does not (its 40 tiles of 64x64 stream faster unsplit), so the reduction
  launch is not in its sum: part of the -16%.
- Wave quantization: at batch 256 the model's tile count (112-256 over 132 SMs) and cuBLAS's differ,
  but the class sum now matches within 1%; per kernel within 6%.
- Training GEMMs (strategy_compare, h100-x4 and h200-x4): unchanged per class; their tiles are far
  from balance (arithmetic 10x the streaming), where the p-norm is the max to within 0.01%."""


def load_params():
    prof = open(PROFILE).read()
    pre = open(PRESET).read()

    def f(text, pat):
        m = re.search(pat, text, re.M)
        if not m:
            sys.exit("decode_gemm_fit: no match for %r" % pat)
        return float(m.group(1))
    tile_line = re.search(r"gemm_tile: \{([^}]*)\}", prof).group(1)
    te = {tuple(int(x) for x in k.strip().split("x")): float(v) for k, v in
          (kv.split(":") for kv in tile_line.split(","))}
    return {
        "sm": int(f(pre, r"^sm_count: (\d+)")),
        "peak": f(pre, r"bf16: ([\d.]+)TF/s") * 1e12,
        "hbm": f(pre, r"bandwidth: (\d+)GB/s") * 1e9 * f(prof, r"^  hbm: ([\d.]+)"),
        "eff": f(prof, r"bf16: ([\d.]+)"),
        "launch": f(prof, r"^kernel_launch_latency: (\d+)ns") / 1000.0,
        "setup": f(prof, r"gemm_setup: (\d+)ns") / 1000.0,
        "per_cta": f(prof, r"gemm_setup_per_cta: (\d+)ns") / 1000.0,
        "tile_overhead": f(prof, r"tile_overhead: (\d+)ns") / 1000.0,
        "min_slice": int(f(prof, r"gemm_split_k_min_slice: (\d+)")),
        "headroom": f(prof, r"^sm_bandwidth_headroom: ([\d.]+)"),
        "tile_eff": te,
    }


def cdiv(a, b):
    return -(-a // b)


def kernel_us(P, m, n, k, tile, s, knee):
    """isolated_time of one candidate, us (launch latency included)."""
    tm, tn = tile
    tiles = cdiv(m, tm) * cdiv(n, tn) * s
    rows = min(tm, cdiv(m, 8) * 8) if knee is not None else tm  # before: the padded tile
    flops = 2.0 * rows * tn * k / s
    c_bytes = s * m * n * 4.0 if s > 1 else m * n * 2.0
    per_tile = ((m * k + k * n) * 2.0 + c_bytes) / tiles
    rate = P["peak"] * P["eff"] * P["tile_eff"][tile] / P["sm"]

    def wave(active):
        comp = flops / rate * 1e6
        mem = per_tile / min(P["headroom"] * P["hbm"] / P["sm"], P["hbm"] / active) * 1e6
        if knee is None:
            t = max(comp, mem)
        else:
            t = (comp ** knee + mem ** knee) ** (1.0 / knee)
        return t + P["tile_overhead"]
    setup = P["setup"] + P["per_cta"] * min(tiles, P["sm"])
    if s > 1:
        setup += P["launch"] + m * n * (s * 4.0 + 2.0) / P["hbm"] * 1e6
    full, last = divmod(tiles, P["sm"])
    return P["launch"] + setup + full * wave(P["sm"]) + (wave(last) if last else 0.0)


def gemm_us(P, m, n, k, knee):
    best = None
    for tile in TILES:
        cands = [1]
        slices = min(P["sm"] // (cdiv(m, tile[0]) * cdiv(n, tile[1])), k // P["min_slice"])
        if slices >= 2:
            cands.append(slices)
        for s in cands:
            t = kernel_us(P, m, n, k, tile, s, knee)
            if best is None or t < best:
                best = t
    return best


def shapes(tp):
    return {"qkv": (10240 // tp, 8192), "o": (8192, 8192 // tp), "gu": (57344 // tp, 8192),
            "down": (8192, 28672 // tp), "head": (32000 // tp, 8192)}


def decode_points():
    doc = json.load(open(KERNELS))
    out = []
    for p in doc["decode"]:
        gemms = [k for k in p["eager_kernels"] if k["class"] == "gemm"]
        out.append((p["tp"], p["batch"], sum(k["us"] for k in gemms), gemms))
    return out


def step_sum(P, tp, b, knee):
    d = {nm: gemm_us(P, b, n, k, knee) - P["launch"] for nm, (n, k) in shapes(tp).items()}
    return 8 * (d["qkv"] + d["o"] + d["gu"] + d["down"]) + d["head"], d


def micro_records():
    recs = []
    for line in open(PROFILE):
        if '"class":"gemm' not in line:
            continue
        d = json.loads(line.strip()[2:])
        r = d["record"]
        if r.get("dtype") != "bf16" or r.get("batch", 1) != 1 or r.get("layout", "TN") != "TN":
            continue
        recs.append((d["set"], d["class"], r["m"], r["n"], r["k"], r["time_us"]))
    return recs


def gcsim_us(gcsim, m, n, k):
    cfg = ("cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 1}\nworkload:\n  kind: graph\n  ops:\n"
           "    - {name: g, rank: 0, op: gemm, m: %d, n: %d, k: %d, dtype: bf16}\n" % (m, n, k))
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "a.yaml")
        open(p, "w").write(cfg)
        subprocess.run([gcsim, "run", p, "-o", d, "-q"], check=True, stdout=subprocess.DEVNULL)
        s = json.load(open(os.path.join(d, "summary.json")))
    return s["ops"][0]["end_s"] * 1e6  # from t = 0: launch, setup and waves


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gcsim")
    ap.add_argument("-o")
    ap.add_argument("--gcsim-model", choices=["max", "4"], default="max")
    a = ap.parse_args()
    P = load_params()
    pts = decode_points()
    micro = micro_records()
    lines = ["# Decode GEMMs kernel by kernel, and the GEMM tile overlap knee", "",
             "`python3 calibration/fit/decode_gemm_fit.py%s` (serving_kernels_2026-11-27, one H100; "
             "profile calibration/profiles/h100-sxm.yaml)." % (" --gcsim " + a.gcsim if a.gcsim else ""), ""]
    if a.gcsim:
        worst = 0.0
        for tp in (4, 2):
            for b in (1, 32, 256):
                for nm, (n, k) in shapes(tp).items():
                    knee = None if a.gcsim_model == "max" else SHIPPED
                    worst = max(worst, abs(gcsim_us(a.gcsim, b, n, k) - gemm_us(P, b, n, k, knee)))
        lines += ["Transcription (%s) against gcsim, 30 shapes: largest difference %.3f us." % (
            "plain max" if a.gcsim_model == "max" else "p = 4", worst), ""]
        if worst > 0.05:
            sys.exit("decode_gemm_fit: the transcription disagrees with gcsim by %.3f us" % worst)
    lines += ["## Choice of p (class sums of the profiled decode steps; microbench bf16 GEMMs)", "",
              "| p | TP4 b1 / b32 / b256 (fit) | TP2 b1 / b32 / b256 (held out) | TP4 mean abs | microbench fit set | microbench held out |",
              "|---|---|---|---:|---:|---:|"]
    best = None
    for knee in GRID:
        errs = {}
        for tp, b, meas, _ in pts:
            errs[(tp, b)] = step_sum(P, tp, b, knee)[0] / meas - 1.0
        tp4 = [errs[(4, b)] for b in (1, 32, 256)]
        tp2 = [errs[(2, b)] for b in (1, 32, 256)]
        mean4 = sum(map(abs, tp4)) / 3
        mic = {}
        for st, _, m, n, k, t in micro:
            mic.setdefault(st, []).append(abs(gemm_us(P, m, n, k, knee) / t - 1.0))
        lines.append("| %s | %s | %s | %.1f%% | %.2f%% (%d) | %.2f%% (%d) |" % (
            "max (before)" if knee is None else "%g" % knee,
            " / ".join("%+.1f%%" % (100 * e) for e in tp4), " / ".join("%+.1f%%" % (100 * e) for e in tp2),
            100 * mean4, 100 * sum(mic["fit"]) / len(mic["fit"]), len(mic["fit"]),
            100 * sum(mic["heldout"]) / len(mic["heldout"]), len(mic["heldout"])))
        if knee is not None and (best is None or mean4 < best[0]):
            best = (mean4, knee)
    lines += ["", "Chosen: p = %g (least TP4 mean |error|; commit d49e5c8's kGemmOverlapKnee is %g)." % (best[1], SHIPPED), ""]
    lines += ["## Per kernel (eager step, torch.profiler; gcsim kernel = isolated time less the launch)", "",
              "| TP | batch | cuBLAS kernels (name x calls, us each) | calls | measured class sum (us) | gcsim before / now (us) | before | now |",
              "|---|---:|---|---:|---:|---:|---:|---:|"]
    for tp, b, meas, gemms in pts:
        before, _ = step_sum(P, tp, b, None)
        now, d = step_sum(P, tp, b, SHIPPED)
        names = "; ".join("%s x%d %.1f" % (re.sub(r"^void |<.*$", "", k["name"])[:48], k["count"], k["us"] / k["count"])
                          for k in gemms)
        lines.append("| %d | %d | %s | %d | %.0f | %.0f / %.0f | %+.1f%% | %+.1f%% |" % (
            tp, b, names, sum(k["count"] for k in gemms), meas, before, now,
            100 * (before / meas - 1), 100 * (now / meas - 1)))
    lines += ["", "gcsim per shape, us (before -> now): " + "; ".join(
        "TP%d b%d: %s" % (tp, b, ", ".join("%s %.1f->%.1f" % (nm, gemm_us(P, b, n, k, None) - P["launch"],
                                                               gemm_us(P, b, n, k, SHIPPED) - P["launch"])
                                           for nm, (n, k) in shapes(tp).items()))
        for tp, b, _, _ in pts), ""]
    lines += ["## Findings", "", FINDINGS]
    text = "\n".join(lines) + "\n"
    if a.o:
        open(a.o, "w").write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
