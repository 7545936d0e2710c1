#!/usr/bin/env python3
"""cuDNN's decode attention kernel by kernel: the prototype of gcsim's `cudnn` decode terms. gcsim now
has them (attention_kernel_model.cpp: decode_min_split_keys, decode_kernel_overhead, the block
latencies, decode_split_per_doubling; fitted by calibration/fit/decode_kernel_fit.h; report
calibration/fit/decode_attention_split_2026-11-28.md); this script is kept as the record of how the
structure was found, as cudnn_small_grid.py is for the prefill grids.

Measured (decode_attention_split.py, PyTorch's default SDPA for one decode token, torch.profiler's
kernel durations): cuDNN splits a decode's keys, and runs lean_reduction_kernel after its split-KV
kernel, exactly when pairs = batch x KV heads <= 64 and keys >= 1024. The structure fitted here,
per kernel, in us:

  pieces n   = FlashAttention-2's split count (gcsim's decode_kv_splits) when cuDNN splits, else 1
  main       = inside + (W unsplit | Ws split) + sum over waves of max(floor, memory per CTA)
               + W2 per wave after the first
  floor      = (key blocks a CTA walks + cu) x tu unsplit, (blocks + cs) x ts split (128-key blocks:
               one CTA reads its blocks one after another, latency-bound when few)
  memory     = a CTA's KV bytes at the larger of one SM's reach (133.7 GB/s) and its share of
               bw x the HBM peak among the wave's CTAs
  reduction  = l0 + l1 log2(n), when split
  inside     = the profile's launch_inside_kernel (H200 1.377 us, H100 0.946 us)

Fitted by coordinate descent on the mean relative error of main + reduction over the H200's
even-index cases; held out: its odd-index cases and the whole H100 run (same SM, its own HBM
peak and profile split).

    python3 calibration/fit/decode_split_prototype.py
"""
import json
import math
import os
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))
MEAS = os.path.join(HERE, "..", "measurements")
SMS = 132
REACH = 133.7e3  # one SM's HBM reach, bytes per us (the H100 profile's; the H200 preset's sm_hbm_reach)
GPUS = {"h200": {"inside": 1.377, "peak": 4.8e6, "file": "h200-x1"},
        "h100": {"inside": 0.946, "peak": 3.35e6, "file": "h100-sxm"}}


def load(gpu):
    path = os.path.join(MEAS, GPUS[gpu]["file"], "decode_attention_split_2026-11-28", "decode_attention_split.json")
    with open(path) as f:
        return [r for r in json.load(f)["decode"] if "timing" in r]


def fa2_splits(pairs, keys):
    """kernel_cost_model.h decode_kv_splits: no split once the pairs fill 80% of the SMs; else the
    fewest pieces (of 256 keys or more) within 85% of the best wave efficiency."""
    if 5 * pairs >= 4 * SMS:
        return 1
    most = max(1, min(SMS, math.ceil(keys / 256)))

    def eff(n):
        waves = pairs * n / SMS
        return waves / math.ceil(waves)
    best = max(eff(n) for n in range(1, most + 1))
    return next(n for n in range(1, most + 1) if eff(n) >= 0.85 * best)


def predict(r, gpu, p):
    pairs, keys = r["batch"] * r["kv_heads"], r["keys"]
    split = pairs <= 64 and keys >= 1024
    n = fa2_splits(pairs, keys) if split else 1
    blocks = math.ceil(keys / n / 128)
    cta_bytes = keys / n * 512  # K and V, 128 bf16 each a key
    floor = (blocks + p["cs"]) * p["ts"] if split else (blocks + p["cu"]) * p["tu"]
    t = GPUS[gpu]["inside"] + (p["Ws"] if split else p["W"])
    left = pairs * n
    while left > 0:
        w = min(left, SMS)
        left -= w
        memory = max(cta_bytes / REACH, cta_bytes * w / (p["bw"] * GPUS[gpu]["peak"]))
        t += max(floor, memory) + (p["W2"] if left > 0 else 0.0)
    if split:
        t += p["l0"] + p["l1"] * math.log2(n)
    return t


def errors(rows, gpu, p):
    return [predict(r, gpu, p) / (r["main_us"] + r["reduction_us"]) - 1 for r in rows]


def mean_abs(e):
    return statistics.mean(abs(x) for x in e)


def fit(rows):
    p = {"bw": 0.92, "W": 1.3, "Ws": 1.0, "W2": 0.3, "tu": 1.15, "cu": 1.0, "ts": 0.5, "cs": 1.0,
         "l0": 1.5, "l1": 0.3}
    steps = {k: 0.25 * v if v else 0.25 for k, v in p.items()}
    steps["bw"] = 0.02
    for _ in range(60):
        for k in p:
            for sign in (1, -1):
                while True:
                    q = dict(p)
                    q[k] = max(0.0, p[k] + sign * steps[k])
                    if k == "bw":
                        q[k] = min(q[k], 1.0)
                    if mean_abs(errors(rows, "h200", q)) < mean_abs(errors(rows, "h200", p)) - 1e-9:
                        p = q
                    else:
                        break
        steps = {k: 0.7 * v for k, v in steps.items()}
    return p


def summary(name, rows, gpu, p):
    e = errors(rows, gpu, p)
    few = [x for x, r in zip(e, rows) if r["keys"] <= 512 and r["batch"] * r["kv_heads"] <= 64]
    print("%-22s %3d cases: median %4.1f%%, mean %4.1f%%, worst %5.1f%%; <= 512 keys at <= 64 pairs median %4.1f%%" % (
        name, len(e), 100 * statistics.median(abs(x) for x in e), 100 * mean_abs(e), 100 * max(abs(x) for x in e),
        100 * statistics.median(abs(x) for x in few)))


def main():
    h200, h100 = load("h200"), load("h100")
    fit_rows = h200[0::2]
    p = fit(fit_rows)
    print("fitted (us, bw of the HBM peak): " + ", ".join("%s %.3f" % kv for kv in p.items()))
    summary("H200, fitted half", fit_rows, "h200", p)
    summary("H200, held-out half", h200[1::2], "h200", p)
    summary("H100, held out", h100, "h100", p)


if __name__ == "__main__":
    main()
