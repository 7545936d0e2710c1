// The kernel cost model: pure functions that turn op shapes into tile grids
// (KernelDesc) and give a kernel's time when it runs alone on the GPU.
//
// A tile is bounded by the larger of its arithmetic time at the unit's
// per-SM rate and its HBM traffic at the SM's share of bandwidth (roofline
// per tile); tiles run in waves over the SMs, the last partial wave costing
// a full tile, plus a fixed per-wave overhead and the launch latency.
// GEMM tiling follows CUTLASS/cuBLAS CTA tiles; attention follows
// FlashAttention-2 (Dao 2023) and flash-decoding split-KV for decode.
//
// Every function throws std::invalid_argument on a shape or dtype the GPU
// cannot run (e.g. fp8 on an A100, whose fp8 tensor peak is 0), with a
// message the caller can show the user.
#pragma once

#include <cstdint>
#include <vector>

#include "models/gpu/gpu_spec.h"
#include "models/gpu/kernel.h"
#include "sim/engine/time.h"

namespace gcsim::models::gpu {

// Candidate CTA tile shapes (rows x cols of C), in the order tried.
struct GemmTile {
  int64_t m, n;
};
inline constexpr GemmTile kGemmTileCandidates[] = {{128, 256}, {256, 128}, {128, 128},
                                                   {128, 64},  {64, 128},  {64, 64}};

// The grid of one candidate tile shape, K in `split_k` slices (no choice
// made). Its setup is gemm_setup + gemm_setup_per_cta for each CTA of its
// first wave; split, each CTA also writes its fp32 partial tile, and the
// reduction kernel (a launch, then s x M x N fp32 partials read and the
// output written at the achieved HBM bandwidth) is added to the setup.
KernelDesc gemm_kernel_with_tile(const GpuSpec& spec, const GemmShape& shape, GemmTile tile,
                                 int64_t split_k = 1);
// The slices cuBLAS's split-K would cut K into for this tile: the most that
// keep every tile's slices in one wave, min(SMs / tiles, K / min_slice), or
// 1 when that is under 2 or the profile has no gemm_split_k_min_slice.
int64_t gemm_split_k_slices(const GpuSpec& spec, const GemmShape& shape, GemmTile tile);
// HBM bytes of the split-K reduction kernel: `split_k` fp32 partials of
// M x N read, C written (fp8/int8 GEMMs write bf16).
double gemm_split_k_reduce_bytes(const GemmShape& shape, int64_t split_k);
// The kernels cuBLAS's heuristic chooses among, in order: each tile shape
// unsplit, then split-K where gemm_split_k_slices allows it.
std::vector<KernelDesc> gemm_candidates(const GpuSpec& spec, const GemmShape& shape);
// The candidate with the least isolated time on all SMs (ties: less padded
// work, then candidate order), like cuBLAS's heuristic.
KernelDesc gemm_kernel(const GpuSpec& spec, const GemmShape& shape);

// Unmasked (query, key) pairs per (batch, head): q_len*kv_len, or causal with
// queries aligned to the end of the keys (row i sees kv_len - q_len + i + 1).
double attention_pairs(const AttentionShape& shape);
// Elements of K and V per KV head and key: head_dim + head_dim_v, or the
// wider of the two when V is a slice of K (AttentionShape::kv_shared).
double attention_kv_width(const AttentionShape& shape);
// The kernel of shape.family (attention_kernel_model.h): flash2's prefill,
// flash3 and cudnn as tile grids (FlashAttention-2's tiles: GpuEfficiency::
// attention / attention_backward and flash2_prefill), unfused as its parts.
// flash2's decode (q_len <= 16, forward) is attention_flash2_decode.h:
// FlashAttention-2's own split rule and padded query tiles; the fused
// families in attention_kernel_model.h split by decode_kv_splits.
inline constexpr int64_t kDecodeMaxQueryLen = 16;
inline constexpr int64_t kDecodeMinKeysPerSplit = 256;
KernelDesc attention_kernel(const GpuSpec& spec, const AttentionShape& shape);

// How many pieces a split-KV decode kernel cuts each (batch, KV head)'s keys
// into, as FlashAttention-2's num_splits heuristic chooses: no split once
// the heads fill 80% of the SMs; otherwise, of 1 .. min(SMs, kv_len/256)
// splits, the fewest whose wave efficiency (waves / whole waves) is within
// 85% of the best. So the CTAs fill one wave instead of spilling a few into
// a second (b 1, 8 KV heads on 132 SMs: 15 splits, 120 CTAs, at 16K keys).
// cuDNN's choice is not published; the fused families (cudnn, flash3) take
// this rule, which their H100/H200 decode fits support.
int64_t decode_kv_splits(const GpuSpec& spec, int64_t heads_total, int64_t kv_len);

// Bandwidth-bound ops, grid-stride: one tile per 64 KiB, at most one per SM.
// A softmax adds the SM work of PyTorch's eager kernel for its row length
// (GpuEfficiency::softmax): its cycles per element over the tiles' SMs on
// top of its arithmetic, or for long rows the row's extra loads. A
// log_softmax (MemoryOpShape::log_softmax) runs the same kernels with a
// cheaper last pass: its counted saving per element comes off the cycles.
inline constexpr int64_t kMemoryBytesPerTile = 64 * 1024;
// Warps an SM needs resident to issue its arithmetic at full rate: 4
// schedulers, each issuing a warp's instruction a cycle, and a dependent
// integer or fp32 instruction ready about 4 cycles after the one before
// (Hopper and Ampere ALU latency), so 4 warps a scheduler. A memory kernel
// whose grid leaves fewer on each SM (MemoryOpShape::threads_per_cta: a
// small tensor's few CTAs of 4 warps) runs its SM work that many times
// slower: each thread's offset arithmetic is a dependent chain nothing
// else hides. Counted, not fitted: in [4, 64] warps (one CTA of 4 warps,
// the SM's resident maximum).
inline constexpr int kWarpsToHideIssueLatency = 16;
inline constexpr int kMaxWarpsPerSm = 64;
KernelDesc memory_kernel(const GpuSpec& spec, const MemoryOpShape& shape);

// The kernel PyTorch's eager softmax forward runs for rows of `cols`, as
// torch.profiler named them on two H100s (kernel_grid, 2026-11-26 and -27):
// a warp per row up to 2048 columns and 8 KiB (softmax_warp_forward: bf16
// 128-2048, fp32 256-2048), a CTA per row held in registers up to 16 KiB
// (cunn_SoftMaxForwardReg, 1024 threads of 16 B: bf16 3072-8192, fp32
// 4096), a CTA per row cached in shared memory while the row fits a block's
// default 48 KiB (cunn_SoftMaxForwardSmem: bf16 16384), the three-pass
// kernel beyond (bf16 32000-128256, fp32 50304).
enum class EagerSoftmaxKernel { warp_per_row, block_per_row, smem_per_row, multipass };
EagerSoftmaxKernel eager_softmax_kernel(int64_t cols, Dtype dtype);

// A GEMM tile's mainloop overlaps its MMAs with the TMA loads of the next
// K-blocks, but not perfectly: where the two are of one size (a decode GEMM
// at batch 128-256, whose arithmetic nears its weight streaming) the
// pipeline stalls on whichever side is late in each K-block. The p-norm
// (compute^p + memory^p)^(1/p) is the longer bound far from balance and
// 2^(1/p) x it at balance. Fitted on the serving step's TP4 decode GEMMs at
// batch 1/32/256 (calibration/measurements/h100-sxm/serving_kernels_2026-11-27,
// p in {2, 2.5, 3, 4, 5, 6, 8, 12}: class sums -3.5, -5.9, -0.0%); held out:
// the TP2 decode GEMMs (-3.3, -5.3, +0.8%) and the microbench's bf16 GEMMs
// (calibration/profiles/h100-sxm.yaml measurements, mean |error| fit set
// 3.73 -> 3.66%, held-out set 3.54 -> 3.85%; calibration/fit/
// decode_gemm_fit.py). Physical range: p >= 1 (1: loads and MMAs
// serialised; the larger, the better the overlap; infinity: the plain max).
inline constexpr double kGemmOverlapKnee = 4.0;

// max(compute, memory) for knee <= 0, else (compute^knee +
// memory^knee)^(1/knee), rounded once to 1 ps.
sim::Duration overlapped_time(sim::Duration compute, sim::Duration memory, double knee);

// The two bounds of one tile while `active_sms` SMs (this wave and any
// other kernels' tiles) run on the GPU, each rounded once to 1 ps.
struct TileCost {
  sim::Duration compute;  // flops_per_tile at the unit's per-SM rate x efficiency
  sim::Duration memory;   // bytes_per_tile at hbm_bandwidth_per_sm(active_sms)
  sim::Duration floor;    // latency_floor_cycles_per_tile at the SM clock
  double overlap_knee = 0.0;  // the kernel's KernelDesc::overlap_knee
  sim::Duration time() const { return time_at(1.0); }
  // The same with the SM side stretched by `compute_stretch` (1 / the clock's
  // relative speed): the arithmetic and the floor are SM cycles, the bytes
  // are not. The arithmetic and the bytes overlap as overlapped_time says;
  // the floor is a bound of its own.
  sim::Duration time_at(double compute_stretch) const {
    return sim::max(overlapped_time(compute.scaled(compute_stretch), memory, overlap_knee),
                    floor.scaled(compute_stretch));
  }
  bool memory_bound() const { return memory > compute; }
  // What sets time(), for reports: "latency" when the floor is above both
  // bounds (a split-KV decode CTA walking its key blocks), else the longer
  // of the bytes and the arithmetic.
  const char* bound() const {
    if (floor > compute && floor > memory) return "latency";
    return memory_bound() ? "memory" : "compute";
  }
};
TileCost tile_cost(const GpuSpec& spec, const KernelDesc& kernel, int active_sms);
// The same with only `hbm_fraction` of the achieved HBM bandwidth left to
// the kernels (interference.h); 1 gives the form above exactly.
TileCost tile_cost(const GpuSpec& spec, const KernelDesc& kernel, int active_sms,
                   double hbm_fraction);
// tile_cost(...).time() + efficiency.tile_overhead + the kernel's
// extra_wave_overhead: how long one wave of this
// kernel occupies its SMs. The Gpu runtime uses exactly this.
sim::Duration wave_time(const GpuSpec& spec, const KernelDesc& kernel, int active_sms);
// The same with the tile's arithmetic time multiplied by `compute_stretch`
// (a clock other than the spec's: clock_governor.h); 1 gives wave_time.
sim::Duration wave_time(const GpuSpec& spec, const KernelDesc& kernel, int active_sms,
                        double compute_stretch);
// And with `hbm_fraction` of the HBM bandwidth left to kernels (collectives
// streaming beside them: interference.h).
sim::Duration wave_time(const GpuSpec& spec, const KernelDesc& kernel, int active_sms,
                        double compute_stretch, double hbm_fraction);

// SMs a wave of this kernel may use when `sms_available` are free:
// min(sms_available, max_sms or all), at least 1 is required.
int wave_width(const GpuSpec& spec, const KernelDesc& kernel, int sms_available);
// Number of waves alone on `sms_available` SMs.
int64_t wave_count(const GpuSpec& spec, const KernelDesc& kernel, int sms_available);

// The closed form the simulator reproduces for a kernel alone, persistent
// or not (alone, a persistent kernel's waves are the same):
// launch latency + setup + sum over waves of wave_time(SMs active in that wave).
sim::Duration isolated_time(const GpuSpec& spec, const KernelDesc& kernel, int sms_available);

}  // namespace gcsim::models::gpu
