// FlashAttention-2's decode (flash2 family, q_len <= 16) as PyTorch 2.11's
// FLASH_ATTENTION backend runs it (aten/src/ATen/native/transformers/cuda/
// flash_attn/flash_api.cpp, mha_fwd and set_params_splitkv):
//
// - One query with GQA: the query heads of a KV head become the rows of one
//   query block (seqlenq_ngroups_swapped), so a (batch, KV head) holds
//   heads / kv_heads rows; otherwise a (batch, head) holds q_len rows.
// - The keys are split by num_splits_heuristic over twice the SMs (two
//   128-thread CTAs fit an SM): no split once the query blocks fill 80% of
//   those slots; else, of the splits that change the key blocks per split
//   (keys in blocks of 256 / 128 / 64 at head dim <= 64 / <= 128 / above),
//   at most 128, the fewest within 85% of the best wave efficiency.
// - Split, flash_fwd_splitkv_kernel runs 64-row query blocks and a second
//   kernel combines the partial results; unsplit, flash_fwd_kernel runs
//   128-row blocks. Either runs the whole block through its MMAs: a GQA
//   group of 4 fills 4 of 128 rows, so the unsplit kernel at batch 32 does
//   32x the useful work and is compute-bound at FA2's mma.sync rate (H100
//   and H200 alike, ~2.7 TB/s of KV at any batch), while the split kernel
//   (half the rows, twice the keys per block) streams at ~0.92 of the HBM
//   peak (calibration/fit/attention_families_2026-11-26.md).
//
// A CTA is one tile: executed MMA flops 2 x rows x keys x (d + dv) at
// Flash2DecodeParams::efficiency of the tensor peak, against its share of
// Q, K, V, O at `bandwidth` of the HBM peak; `wave_overhead` per wave; a
// split kernel adds the combine kernel (combine_overhead + splits x
// combine_per_split) once.
#pragma once

#include <cstdint>

#include "models/gpu/gpu_spec.h"
#include "models/gpu/kernel.h"

namespace gcsim::models::gpu {

// The grid FlashAttention-2 launches for one decode op.
struct Flash2DecodeGrid {
  int64_t row_blocks = 0;  // (batch, head) query blocks before splitting
  int64_t rows = 0;        // query rows each block holds (<= block_m)
  int64_t block_m = 0;     // query rows each CTA runs: 64 split, 128 unsplit
  int64_t splits = 1;      // pieces of each block's keys
  int64_t ctas() const { return row_blocks * splits; }
};

// FlashAttention-2's num_splits_heuristic (flash_api.cpp) on `slots`
// resident CTAs for `row_blocks` query blocks over `key_blocks` key blocks.
int64_t flash2_num_splits(int64_t row_blocks, int64_t slots, int64_t key_blocks);

Flash2DecodeGrid flash2_decode_grid(const GpuSpec& spec, const AttentionShape& shape);

// The decode kernel with `params` (the spec's efficiency.flash2_decode for
// the model; the fit passes unit values). Throws std::invalid_argument on a
// dtype the GPU cannot run or parameters out of range.
KernelDesc flash2_decode_kernel(const GpuSpec& spec, const AttentionShape& shape,
                                const Flash2DecodeParams& params);

}  // namespace gcsim::models::gpu
