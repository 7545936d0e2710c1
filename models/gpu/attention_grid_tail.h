// The schedule of one fused attention kernel's CTAs on the SMs, and what it
// costs over the wave model (ceil(tiles / SMs) waves of the mean tile).
//
// Causal CTAs carry unequal work (a forward CTA's key blocks grow with its
// query-block index, a backward CTA's query blocks shrink with its key-block
// index), so the last CTAs dispatched leave SMs idle, more so the fewer CTAs
// per SM slot. Measured on one H100
// (calibration/measurements/h100-sxm/attention_grid_size_2026-11-27/, cuDNN
// SDPA, s 4096, d 128), per (batch, head) against the b8 h8 grid: causal
// b1 h16 +26.2% forward / +21.4% backward, b1 h32 +9.0% / +6.8%, full
// attention b1 h16 +1.0% / +3.0%; calibration/fit/attention_grid_tail.py
// reproduces those within 3.5% by list scheduling, nothing fitted.
//
// cuDNN's sm90 forward (knob_7, 64 x 128 tiles) keeps two CTAs on an SM, and
// a lone one runs at about half the SM's rate: on the serving model's grids
// (batch 1, 16-64 heads, 128-8192 CTAs;
// calibration/measurements/h100-sxm/serving_kernels_2026-11-27/) 256 CTAs of
// up to 4 key blocks take 11.2 us where 128 take 10.6, and the wave model
// (every tile at the full SM's rate) was 13-40% fast
// (calibration/fit/cudnn_small_grid.py, the prototype). So one schedule
// covers both: sm_count x ctas_per_sm slots take the CTAs in launch order as
// each frees (greedy list scheduling); a CTA of w key blocks takes
//   max((latency_blocks + w) / lone_fraction, n x w)
// block-times, one block-time being a key block at the full SM's attention
// throughput: alone it is latency-bound (its fixed latency_blocks included),
// beside n - 1 others it gets 1/n of the SM, where n is the CTAs an SM holds
// on average, min(ctas_per_sm, CTAs / SMs) and at least 1 (not per SM: the
// last CTAs of a large grid run at the shared rate, an approximation). With
// ctas_per_sm 1, lone_fraction 1 and no latency it is plain list scheduling
// of the CTAs' blocks, the tail of the measured grids above.
#pragma once

#include <cstdint>
#include <vector>

#include "models/gpu/attention_family.h"
#include "models/gpu/kernel.h"

namespace gcsim::models::gpu {

// Whole blocks (tile.m x tile.n) each CTA of one (batch, head) executes, in
// block-index order: forward CTA i owns query block i, backward CTA j key
// block j; causal rows aligned to the end of the keys (attention_pairs()).
std::vector<int64_t> blocks_per_cta(const AttentionShape& shape, int64_t tile_m, int64_t tile_n);

// Greedy list scheduling: each of `slots` takes the next CTA of `works` (in
// order, `repeats` times over) as soon as it is free; the time the last one
// ends, in work units.
double list_makespan(const std::vector<int64_t>& works, int64_t repeats, int64_t slots);

// How a pass's CTAs share an SM (FusedAttentionPass: ctas_per_sm,
// lone_cta_fraction, cta_latency_blocks).
struct CtaSharing {
  int64_t ctas_per_sm = 1;      // [1, 4]
  double lone_fraction = 1.0;   // (0, 1]
  double latency_blocks = 0.0;  // [0, 16]
  bool trivial() const { return ctas_per_sm == 1 && lone_fraction == 1.0 && latency_blocks == 0.0; }
};
CtaSharing cta_sharing(const FusedAttentionPass& pass);

// The schedule above: the time the last of the grid's CTAs (`works`, in
// order, `repeats` times over) ends, in block-times.
double shared_makespan(const std::vector<int64_t>& works, int64_t repeats, int64_t sm_count,
                       const CtaSharing& sharing);

// The kernel's time over what the wave model charges: shared_makespan of
// the grid (`pairs` x blocks_per_cta, in the family's launch order) over
// waves x the mean tile, a tile being ctas_per_sm CTAs (their summed blocks)
// and waves ceil(tiles / SMs). FlashAttention-2 and cuDNN launch
// head-major, block index ascending (FA2's grid (blocks, batch, heads);
// cuDNN's as measured); FlashAttention-3 schedules a causal grid
// longest-processing-time first (hopper/tile_scheduler.hpp's LPT
// schedulers). 1 for full attention under trivial sharing (equal CTAs).
// `hw_ctas_per_sm` above 1 with trivial sharing (FlashAttention-2's 4-warp
// forward: two CTAs, how fast one runs once its partner has ended is not
// measured): 1, the wave model. Cached per grid: the simulator asks for the
// same kernels many times.
double attention_grid_tail(AttentionFamily family, const AttentionShape& shape, int64_t tile_m,
                           int64_t tile_n, int64_t sm_count, const CtaSharing& sharing,
                           int64_t hw_ctas_per_sm = 1);

}  // namespace gcsim::models::gpu
