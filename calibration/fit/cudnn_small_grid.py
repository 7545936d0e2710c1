#!/usr/bin/env python3
"""Why gcsim's cudnn prefill model was fast on the serving model's attention (batch 1, 16-64 query heads
per TP rank): the prototype. gcsim now has it (models/gpu/attention_grid_tail.h, FusedAttentionPass's
ctas_per_sm, lone_cta_fraction, cta_latency_blocks and kernel_overhead), fitted jointly with the large
grids by calibration/fit/attention_family_fit.cpp (report attention_families_2026-11-27.md); this
script is kept as the record of how the regime was found.

cuDNN's sm90 forward kernel that PyTorch 2.11 runs here (knob_7, 64x128x128) gives each CTA 64 query
rows; a causal CTA i walks ceil(64 (i + 1) / 128) key blocks of 128. The fitted cudnn family (fitted on
grids of 8192 CTAs and more) charges every tile the average work at the full SM's rate. On the
serving shapes (128-8192 CTAs) the measured kernels behave as list scheduling over k CTAs per SM, each
CTA taking c + blocks x max(r_lat, r_tp x concurrency): a lone CTA is latency-bound (r_lat per key
block), co-resident ones share the SM's throughput (r_tp). This script fits (r_lat, r_tp, c, k) on the
serving shapes of serving_kernels_bench.py's attention sweep (default backend, contiguous layout,
torch.profiler's kernel durations) and prints the error there and on the large grids the cudnn
family was fitted on (calibration/measurements/h100-sxm/attention_families_2026-11-26, back-to-back
spacing less ~1.5 us of memset and gap).

    python3 calibration/fit/cudnn_small_grid.py \
        --measurement calibration/measurements/h100-sxm/serving_kernels_2026-11-27/serving_kernels.json
"""
import argparse
import heapq
import json
import math

SMS = 132
# attention_families_2026-11-26, CUDNN_ATTENTION, causal, MHA, head dim 128: (batch x heads, tokens) -> us
LARGE_GRIDS = {(1024, 512): 189.6, (512, 1024): 294.2, (256, 2048): 505.2, (128, 4096): 922.2,
               (64, 8192): 1756.3, (32, 16384): 3621.6}
LARGE_GRID_EXTRA_US = 1.5  # the default call's memset and the gap before the kernel, in that spacing


def cta_blocks(heads, tokens, rows=64, keys=128):
    per = [math.ceil(min(rows * (i + 1), tokens) / keys) for i in range(math.ceil(tokens / rows))]
    return [b for _ in range(heads) for b in per]


def makespan(blocks, r_lat, r_tp, c, k):
    concurrency = max(1.0, min(k, len(blocks) / SMS))
    per_block = max(r_lat, r_tp * concurrency)
    slots = [0.0] * min(SMS * k, len(blocks))
    for b in blocks:
        t = heapq.heappop(slots)
        heapq.heappush(slots, t + c + b * per_block)
    return max(slots)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--measurement", required=True)
    a = ap.parse_args()
    with open(a.measurement) as f:
        doc = json.load(f)
    small = {(r["q_heads"], r["tokens"]): r["attention_kernel_us"] for r in doc["attention"]
             if r.get("backend") == "default" and r.get("layout") == "contiguous" and "attention_kernel_us" in r}
    best = None
    for k in (1, 2):
        for r_lat in [x / 10 for x in range(8, 30)]:
            for r_tp in [x / 100 for x in range(60, 100, 2)]:
                if r_lat < r_tp:
                    continue
                for c in [x / 2 for x in range(0, 9)]:
                    e = [makespan(cta_blocks(h, s), r_lat, r_tp, c, k) / t - 1 for (h, s), t in small.items()]
                    sq = sum(x * x for x in e)
                    if best is None or sq < best[0]:
                        best = (sq, r_lat, r_tp, c, k)
    _, r_lat, r_tp, c, k = best
    print("fit on %d serving shapes: %d CTAs per SM, lone CTA %.2f us per key block, shared %.2f us, %.1f us "
          "per CTA" % (len(small), k, r_lat, r_tp, c))
    print("| q heads | tokens | measured (us) | prototype | error |")
    print("|---:|---:|---:|---:|---:|")
    for (h, s), t in sorted(small.items()):
        m = makespan(cta_blocks(h, s), r_lat, r_tp, c, k)
        print("| %d | %d | %.1f | %.1f | %+.1f%% |" % (h, s, t, m, 100 * (m / t - 1)))
    print("\nlarge grids (the cudnn family's fit shapes), not fitted here:")
    for (bh, s), t in sorted(LARGE_GRIDS.items()):
        want = t - LARGE_GRID_EXTRA_US
        m = makespan(cta_blocks(bh, s), r_lat, r_tp, c, k)
        print("| %d | %d | %.1f | %.1f | %+.1f%% |" % (bh, s, want, m, 100 * (m / want - 1)))


if __name__ == "__main__":
    main()
