#!/usr/bin/env python3
"""Causal attention's small-grid tail: cuDNN SDPA alone on one H100 (attention_grid_size.py's
measurement) against greedy list scheduling of the grid's unequal tiles, nothing fitted.

    python3 calibration/fit/attention_grid_tail.py \
        calibration/measurements/h100-sxm/attention_grid_size_2026-11-27/attention_grid_size.json

Per (batch x heads) at 4096 tokens, d 128: the time per (batch, head) against the 64-pair grid's
(b8 h8), measured, and as a GPU would run the grid if each SM took the next CTA in launch order
(head-major, block index ascending) as soon as it is free: a causal forward CTA owns 128 query
rows and runs over i + 1 key blocks (i = 0..31), a backward CTA owns 128 keys and runs over the
query blocks from its own down (32 - j); a full-attention CTA runs all 32 (the control: equal
tiles, no tail). gcsim's wave model (attention_kernel_model.h: ceil(CTAs / SMs) waves of the mean
tile) gives 1.00 for every grid.
"""
import heapq
import json
import sys

SMS = 132
BLOCKS = 4096 // 128  # query (forward) or key (backward) blocks per (batch, head)


def makespan(works, sms=SMS):
    free = [0.0] * sms
    for w in works:
        heapq.heappush(free, heapq.heappop(free) + w)
    return max(free)


def tile_works(pairs, causal, backward):
    one = [float(BLOCKS)] * BLOCKS
    if causal:
        one = [float(BLOCKS - j) for j in range(BLOCKS)] if backward else [float(i + 1) for i in range(BLOCKS)]
    return one * pairs


def per_pair(pairs, causal, backward):
    return makespan(tile_works(pairs, causal, backward)) / pairs


def main(path):
    d = json.load(open(path))
    meas = {}
    for r in d["results"]:
        meas[(r["causal"], r["pass"], r["batch"] * r["heads"], r["batch"])] = r["time_us"] / (r["batch"] * r["heads"])
    print("| mask | pass | b x h | measured us | per pair vs b8 h8 | list-scheduled | wave model |")
    print("|---|---|---|---:|---:|---:|---:|")
    for causal in (True, False):
        for p in ("fwd", "bwd"):
            ref = meas[(causal, p, 64, 8)]
            ref_model = per_pair(64, causal, p == "bwd")
            for (c, q, pairs, b), v in sorted(meas.items(), key=lambda kv: -kv[0][2]):
                if c != causal or q != p:
                    continue
                model = per_pair(pairs, causal, p == "bwd") / ref_model
                print("| %s | %s | %d x %d | %.1f | %.3f | %.3f | 1.000 |" % (
                    "causal" if causal else "full", p, b, pairs // b, v * pairs, v / ref, model))


if __name__ == "__main__":
    main(sys.argv[1])
