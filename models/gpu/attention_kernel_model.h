// The cost of attention by kernel family (attention_family.h), as tile grids
// the GPU model runs (kernel.h).
//
// flash2 (FlashAttention-2's prefill, forward and backward), flash3 and
// cudnn are tile grids of the same form: a forward CTA owns M
// query rows and loops over the keys in blocks of N; a backward CTA owns N
// keys and loops over the queries in blocks of M (tile shapes per family and
// head dim: attention_tile(); FA2 puts 2 CTAs of 4 warps on an SM where
// registers allow, attention_ctas_per_sm()). A tile's time is
//   executed MMA flops / (SM tensor rate x efficiency [x wide_head, dv > 128])
//   + softmax_exposed x exponentials / SM SFU rate,
// where executed work counts whole blocks: causal diagonal blocks run in
// full and are masked inside (more than the unmasked pairs at short
// sequences), the last partial block of queries or keys runs in full. Tiles
// run in waves over the SMs, each wave paying wave_overhead, and the tiles
// stretch to the grid's schedule (attention_grid_tail.h: its CTAs
// list-scheduled in launch order; a causal grid's are unequal, and where a
// pass keeps two on an SM a lone one is latency-bound), plus the pass's
// kernel_overhead once; the HBM traffic
// of Q, K, V, O (and gradients) is the floor. The SFU's 16 exponentials per
// SM per clock (CUDA C Programming Guide, arithmetic throughput of sm_80 and
// sm_90) matter at small head dims: at d = 64 a score costs 256 FLOPs of
// tensor work (4.2e12 scores/s on an H100) and one exponential (4.2e12/s).
// Forward MMA flops are 2 x pairs x (d + dv); backward 2 x pairs x (3d + 2dv)
// (S recomputed, dP, dV, dQ, dK: 2.5x the forward at d = dv), with one
// exponential per score in each pass (backward recomputes P).
//
// flash2 takes its efficiency and wave overhead from GpuEfficiency::attention
// (attention_backward, attention(_backward)_tile_overhead) and the other two
// terms from GpuEfficiency::flash2_prefill: at head dim 64 a 128 x 128 FA2
// forward tile runs 2 CTAs a SM and its exponentials are a quarter of the
// MMA time at full rate; at 192 one 8-warp CTA a SM, its O accumulator 1.5x.
//
// Decode (q_len <= 16) of flash3 and cudnn is split-KV (flash-decoding):
// b x kv_heads x splits CTAs (decode_kv_splits) reading the KV cache at
// decode_bandwidth of the HBM peak, plus decode_wave_overhead per wave and,
// when the keys are split, decode_split_overhead once for the kernel that
// combines the partial results. Paged KV (vLLM's
// 16-token blocks: 4 KiB contiguous per KV head at d = 128) reads the same
// bytes at the same rate, so paged and contiguous cost the same here.
//
// unfused (PyTorch's math backend): QK^T and PV as batched GEMMs (full
// scores: causal saves nothing), the scores written to HBM and read back by
// the mask (causal) and the softmax; backward dP, dV, softmax backward, dQ,
// dK. Timed as those kernels back to back on the whole GPU and given as one
// kernel whose achieved tensor rate is that total.
#pragma once

#include <cstdint>
#include <optional>

#include "models/gpu/attention_family.h"
#include "models/gpu/gpu_spec.h"
#include "models/gpu/kernel.h"

namespace gcsim::models::gpu {

// One CTA's block: m query rows by n keys, run by `warps` warps.
struct AttentionTile {
  int64_t m = 128, n = 128;
  int64_t warps = 4;
};
// flash2: the kernel traits PyTorch's FlashAttention-2 launches on sm_90
// without dropout (aten/src/ATen/native/transformers/cuda/flash_attn/
// flash_fwd_launch_template.h, flash_bwd_launch_template.h, run_mha_*_hdimD;
// the head dim rounds up to 32, 64, 96, 128, 160, 192, 224 or 256): forward
// 128 x 128 (d <= 64), 128 x 64 (d <= 128), 128 x 32 (160), 128 x 64 with 8
// warps (192, 224), 64 x 64 (256, Hopper's choice: 2 CTAs a SM); backward
// (one CTA per key block) 128 x 128 (d <= 64), 64 x 128 (d <= 128), 64 x 64
// above, all 8 warps. flash3: FlashAttention-3's Hopper tile shapes
// (hopper/tile_size.h); cudnn: the forward kernel's name gives 64 x 128 up
// to d = 128 (knob_7_64x128x128, torch.profiler), backward 64 x 128; above
// 128 not seen, taken FA3-like.
AttentionTile attention_tile(AttentionFamily family, int64_t head_dim, bool backward);

// CTAs of `tile` that run on one SM at a time. flash2: FA2's kernels take
// close to the 255-register limit a thread (mma.sync accumulators of S and
// O in registers), so the 64K-register file of sm_80/sm_90 holds two 4-warp
// CTAs or one 8-warp CTA; its forward's shared memory ((m + 2n) x d bf16:
// 48-96 KiB) fits twice in Hopper's 228 KiB. flash3 and cudnn: one here;
// a fused family's pass may put more on an SM (FusedAttentionPass::
// ctas_per_sm: cuDNN's 64-row forward, two), scheduled by
// attention_grid_tail.h.
int64_t attention_ctas_per_sm(AttentionFamily family, AttentionTile tile, int64_t head_dim,
                              bool backward);

// (query, key) pairs one (batch, head) computes with whole blocks of `tile`
// (forward: query blocks of tile.m over key blocks of tile.n; backward: key
// blocks of tile.n over query blocks of tile.m); causal rows aligned to the
// end of the keys, as attention_pairs().
double executed_pairs(const AttentionShape& shape, AttentionTile tile);

// Exponentials per second on the whole GPU at its boost clock.
inline constexpr double kSfuExpPerSmPerClock = 16.0;
double exp_rate(const GpuSpec& spec);

// What workload.attention_kernel runs: `choice`, or for auto (nullopt) the
// GPU's default for prefill or decode.
AttentionFamily resolve_attention_family(std::optional<AttentionFamily> choice,
                                         const GpuSpec& spec, bool decode);

// The parts of one fused-family kernel the fit needs: how many tiles (an
// SM's co-resident CTAs, attention_ctas_per_sm() of them) and waves on all
// SMs, and per tile the tensor time at efficiency 1 and the exponentials'
// time at softmax_exposed 1.
struct FusedAttentionTerms {
  int64_t ctas = 0;
  int64_t tiles = 0;
  int64_t waves = 0;
  double mma_s = 0.0;  // seconds per tile at efficiency 1
  double exp_s = 0.0;  // seconds per tile, all exponentials exposed
  // Both per-tile times include the grid's schedule: the list-scheduled
  // makespan of its CTAs (unequal when causal; latency-bound when alone on
  // an SM, for a pass with lone_cta_fraction < 1) over waves x the mean
  // tile (attention_grid_tail.h; 1 for decode and for full attention with
  // one CTA an SM).
  double tail = 1.0;
  // How far V's head dim is past 128, in steps of 64 (0 up to 128, 1 at
  // 192, 2 at 256): the register accumulators (O forward, dK/dV backward)
  // grow with it, and 1/efficiency grows by this times (1/(e wide_head) - 1/e).
  double wide = 0.0;
  bool decode = false;
};
FusedAttentionTerms fused_attention_terms(const GpuSpec& spec, const AttentionShape& shape);

// The pass parameters a fused-family kernel runs with: flash3's or cudnn's
// own, flash2's assembled from GpuEfficiency::attention(_backward),
// attention(_backward)_tile_overhead and flash2_prefill.
FusedAttentionPass fused_attention_pass(const GpuSpec& spec, AttentionFamily family, bool backward);

// Kernels by family. Each throws std::invalid_argument on an impossible shape.
// fused_attention_kernel: flash3, cudnn, and flash2 except its decode
// (attention_flash2_decode.h).
KernelDesc fused_attention_kernel(const GpuSpec& spec, const AttentionShape& shape);
KernelDesc unfused_attention_kernel(const GpuSpec& spec, const AttentionShape& shape);

// The HBM traffic of the side kernels a backward call launches besides its
// main kernel (cuDNN's, as traced: dO.O reads O and dO and writes an fp32
// sum a row; dQ's fp32 accumulator is converted to 16 bits; with GQA, dK and
// dV are produced per query head and summed over each group by one kernel
// each), and how many kernels that is. Zero for a forward or decode shape.
struct AttentionSideKernels {
  double bytes = 0.0;
  int kernels = 0;
};
AttentionSideKernels attention_side_kernels(const AttentionShape& shape);

// Useful FLOPs of one attention op (unmasked pairs; backward 2 x pairs x
// (3d + 2dv)), the figure a kernel's flops_per_tile adds up to.
double attention_flops(const AttentionShape& shape);

}  // namespace gcsim::models::gpu
