// The tail of a causal attention grid: its CTAs carry unequal work (a
// forward CTA's key blocks grow with its query-block index, a backward CTA's
// query blocks shrink with its key-block index), so the last CTAs dispatched
// leave SMs idle, more so the fewer CTAs per SM slot. Measured on one H100
// (calibration/measurements/h100-sxm/attention_grid_size_2026-11-27/, cuDNN
// SDPA, s 4096, d 128), per (batch, head) against the b8 h8 grid: causal
// b1 h16 +26.2% forward / +21.4% backward, b1 h32 +9.0% / +6.8%, full
// attention b1 h16 +1.0% / +3.0%. calibration/fit/attention_grid_tail.py
// reproduces those within 3.5% by list scheduling, nothing fitted; this is
// that model, in gcsim's kernel units.
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
// order) as soon as it is free; the time the last one ends, in work units.
double list_makespan(const std::vector<int64_t>& works, int64_t repeats, int64_t slots);

// The kernel's time over what the wave model charges (ceil(tiles / SMs)
// waves of the mean tile): the list-scheduled makespan of the grid's CTAs
// (`pairs` x blocks_per_cta, in the family's launch order) on sm_count
// slots, over waves x the mean CTA, where one CTA runs on an SM at a time
// (ctas_per_sm 1: cuDNN, FlashAttention-3, FlashAttention-2's 8-warp
// kernels); 1 where several share an SM (not modelled: how fast a CTA runs
// once its partner has ended is not measured). FlashAttention-2 and cuDNN
// launch head-major, block index ascending (FA2's grid (blocks, batch,
// heads); cuDNN's as measured); FlashAttention-3 schedules a causal grid
// longest-processing-time first (hopper/tile_scheduler.hpp's LPT
// schedulers). 1 for full attention (equal CTAs). Cached per grid: the
// simulator asks for the same kernels many times.
double causal_grid_tail(AttentionFamily family, const AttentionShape& shape, int64_t tile_m,
                        int64_t tile_n, int64_t ctas_per_sm, int64_t sm_count);

}  // namespace gcsim::models::gpu
