// Attention kernel families: which attention kernel a software stack runs,
// and the per-GPU parameters of the fused Hopper-class ones. The cost model
// itself is attention_kernel_model.h; this header is plain data so that the
// GPU spec and the op shapes can name a family without the model.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "sim/engine/time.h"

namespace gcsim::models::gpu {

// flash2:  FlashAttention-2 (Dao 2023), PyTorch SDPA's FLASH_ATTENTION backend.
// flash3:  FlashAttention-3 (Shah et al. 2024): warp-specialised, TMA loads,
//          softmax overlapped with the GEMMs (Hopper only).
// cudnn:   cuDNN's fused SDPA (PyTorch's CUDNN_ATTENTION; its default on
//          Hopper): the same class of kernel as flash3.
// unfused: QK^T GEMM, softmax over the scores in HBM, PV GEMM (PyTorch's
//          math backend, Megatron-LM 2022's core attention).
enum class AttentionFamily { flash2, flash3, cudnn, unfused };

inline constexpr AttentionFamily kAllAttentionFamilies[] = {
    AttentionFamily::flash2, AttentionFamily::flash3, AttentionFamily::cudnn,
    AttentionFamily::unfused};

constexpr std::string_view attention_family_name(AttentionFamily f) {
  switch (f) {
    case AttentionFamily::flash2: return "flash2";
    case AttentionFamily::flash3: return "flash3";
    case AttentionFamily::cudnn: return "cudnn";
    case AttentionFamily::unfused: return "unfused";
  }
  return "?";
}

inline std::optional<AttentionFamily> parse_attention_family(std::string_view s) {
  for (AttentionFamily f : kAllAttentionFamilies) {
    if (attention_family_name(f) == s) return f;
  }
  return std::nullopt;
}

// One pass (forward or backward) of a fused Hopper-class kernel. A tile's
// time is its tensor-core work at peak x efficiency (x wide_head for head
// dims above 128) plus the exposed part of its exponentials at the SFU rate,
// plus wave_overhead per wave of CTAs.
struct FusedAttentionPass {
  // Tensor-core mainloop fraction of peak, in (0, 1].
  double efficiency = 0.6;
  // Multiplier on efficiency at V head dim 192 (register accumulators grow
  // with it); 1/efficiency moves linearly in dv from 128 (none) to 256
  // (twice the step), in (0, 1].
  double wide_head = 1.0;
  // Fraction of the exponentials' SFU time not hidden under the GEMMs, in
  // [0, 1] (0: fully overlapped, as FA3's ping-pong schedule aims for).
  double softmax_exposed = 0.0;
  // Per wave of CTAs: Q/dO loads, O/dQ stores, the backward's dQ reduction.
  sim::Duration wave_overhead = sim::Duration::zero();
  // How the grid's CTAs share the SMs (attention_grid_tail.h, the schedule
  // of one kernel's CTAs). CTAs of the pass's kernel resident on one SM at a
  // time, in [1, 4] (1: one at a time, cuDNN's backward, FlashAttention-3).
  int64_t ctas_per_sm = 1;
  // The fraction of the SM's attention throughput one CTA reaches on its
  // own, in (0, 1]: a lone 64-row warpgroup runs QK^T, softmax and PV one
  // after the other, so a second CTA is what fills the tensor cores (the
  // serving grids, calibration/measurements/h100-sxm/serving_kernels_2026-11-27).
  double lone_cta_fraction = 1.0;
  // A CTA's fixed latency (Q load, pipeline fill, O store) in key blocks of
  // its lone time, in [0, 16]: overlapped by its SM partner's work, paid in
  // full by a lone CTA.
  double cta_latency_blocks = 0.0;
  // Once per kernel, after the launch: the grid's ramp and drain (first
  // TMA descriptor and K/V fetches, the last CTAs' stores), in [0, 10 us].
  sim::Duration kernel_overhead = sim::Duration::zero();
  // The call's side kernels, as HBM passes (attention_side_bytes()): the
  // fraction of the HBM peak they reach, in [0, 1]; 0: none modelled. cuDNN's
  // backward launches dO.O (compute_dot_do_o), dQ's fp32 -> bf16 conversion
  // (convert_dq_to_16bits) and, for GQA, one head reduction each for dK and
  // dV (fmha_reduce_head) around its bprop kernel (torch.profiler in
  // calibration/measurements/h100-sxm/serving_attention_2026-11-27 and
  // attention_families_2026-11-26): 12 us of a 43 us call at 16 heads and
  // 512 tokens, 9% at 8192. Each costs the GPU's launch latency besides.
  double side_bandwidth = 0.0;
};

struct FusedAttentionParams {
  // Whether this GPU runs the family at all (FlashAttention-3 needs Hopper).
  bool available = true;
  FusedAttentionPass forward;
  FusedAttentionPass backward;
  // Decode (q_len <= 16) reads the KV cache: the fraction of the HBM peak it
  // reaches, in (0, 1] (split-KV measured at 0.92-0.95 on H100 and H200,
  // above a copy's 0.85-0.87), a fixed cost per wave of CTAs, and, when the
  // keys are split, the combining kernel's cost (launch, partial results).
  double decode_bandwidth = 0.9;
  sim::Duration decode_wave_overhead = sim::Duration::zero();
  sim::Duration decode_split_overhead = sim::Duration::zero();
  // The library's own decode kernels, as profiled (cuDNN 9.19 on H100 and
  // H200: calibration/measurements/{h200-x1,h100-sxm}/
  // decode_attention_split_2026-11-28; all zero: the terms above alone).
  // Keys are split only from decode_min_split_keys per sequence (cuDNN:
  // 1024; below it one CTA per (sequence, KV head) walks them all); each
  // decode kernel pays decode_kernel_overhead once; a CTA walking its 128-key
  // blocks one after another takes at least (blocks + 1) x
  // decode_block_latency in an unsplit kernel, under which its KV read
  // hides (a split kernel's CTAs walk few blocks each: fitted with a term of
  // their own, it came out 0 on both GPUs, so they have none); and the kernel combining split partial
  // results grows by decode_split_per_doubling each time the pieces double
  // (decode_split_overhead at one piece: 1.7 us at 4, 3.6-3.8 at 28-55).
  // Ranges (the loader refuses a value outside them): the kernel's fixed
  // cost in [0, kMaxDecodeKernelOverhead], the block latencies and the
  // growth per doubling in [0, kMaxDecodeStepLatency] (measured: 1.5-2.1 us
  // and 0.4-0.9 us).
  static constexpr sim::Duration kMaxDecodeKernelOverhead = sim::Duration::from_ps(20'000'000);  // 20 us
  static constexpr sim::Duration kMaxDecodeStepLatency = sim::Duration::from_ps(10'000'000);     // 10 us
  int64_t decode_min_split_keys = 0;
  sim::Duration decode_kernel_overhead = sim::Duration::zero();
  sim::Duration decode_block_latency = sim::Duration::zero();
  sim::Duration decode_split_per_doubling = sim::Duration::zero();
};

// FlashAttention-2's prefill (flash2, forward and backward) beyond the MMA
// efficiency and per-wave overhead that GpuEfficiency::attention,
// attention_backward and attention(_backward)_tile_overhead carry: the
// same two terms as a fused family's pass (FusedAttentionPass), on FA2's
// own tile shapes and occupancy (attention_kernel_model.h).
struct Flash2PrefillPass {
  // Multiplier on efficiency at V head dim 192 (as FusedAttentionPass), in (0, 1].
  double wide_head = 1.0;
  // Fraction of the exponentials' SFU time not hidden under the MMAs, in
  // [0, 1]: FA2 runs softmax and mma.sync in the same warps, one after the
  // other; only the other CTA's warps on the SM can fill the gap.
  double softmax_exposed = 0.0;
};
struct Flash2PrefillParams {
  Flash2PrefillPass forward;
  Flash2PrefillPass backward;
};

// FlashAttention-2's decode (flash2, q_len <= 16; attention_flash2_decode.h):
// a split-KV kernel (64 query rows per CTA) when the heads leave SMs idle,
// else the plain forward kernel (128 query rows per CTA); either runs its
// whole query tile through the MMAs (a GQA group of 4 heads fills 4 of its
// rows), reads the KV cache, and a split one needs a second kernel that
// combines the partial results.
struct Flash2DecodeParams {
  // MMA fraction of the tensor peak on the padded query tile, in (0, 1]
  // (FA2's mma.sync kernels: 0.35-0.40 in prefill).
  double efficiency = 0.36;
  // Fraction of the HBM peak reading the KV cache, in (0, 1].
  double bandwidth = 0.9;
  // Per wave of CTAs: Q load, O (or partial O) store.
  sim::Duration wave_overhead = sim::us(int64_t{2});
  // The combine kernel: a fixed cost (its launch, one wave) and a cost per
  // split (each output row reads the splits' partial results in turn).
  sim::Duration combine_overhead = sim::us(int64_t{3});
  sim::Duration combine_per_split = sim::ns(int64_t{250});
};

}  // namespace gcsim::models::gpu
