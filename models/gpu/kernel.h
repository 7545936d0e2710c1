// A kernel as the GPU model sees it: a grid of equal tiles, each with the
// arithmetic it does and the HBM bytes it moves. The cost model
// (kernel_cost_model.h) builds these from op shapes; the Gpu runs them.
#pragma once

#include <cstdint>
#include <string>

#include "models/gpu/attention_family.h"
#include "models/gpu/dtype.h"
#include "sim/engine/time.h"

namespace gcsim::models::gpu {

enum class ExecUnit { tensor, vector, memory };  // which ceiling bounds a tile

struct KernelDesc {
  std::string name;            // for traces: "gemm 8192x12288x4096 bf16"
  ExecUnit unit = ExecUnit::vector;
  Dtype dtype = Dtype::bf16;
  int64_t tiles = 1;           // thread blocks (CTAs) in the grid, one per SM at a time
  double flops_per_tile = 0;   // floating-point operations per tile
  double bytes_per_tile = 0;   // HBM bytes read + written per tile
  double efficiency = 1.0;     // achieved fraction of the unit's peak for this kernel
  // Fraction of the achieved streaming HBM bandwidth this kernel's access
  // pattern reaches (1 for copies and elementwise ops; above 1, up to
  // 1 / efficiency.hbm, for split-KV decode, which streams closer to the peak).
  double bandwidth_efficiency = 1.0;
  int max_sms = 0;             // cap on SMs it may occupy (0 = all)
  // Of one SM's HBM reach (sm_bandwidth_headroom x the achieved bandwidth /
  // sm_count, hbm.h), the part one tile's SM pulls: a tile of W resident
  // warps keeps W / kMaxWarpsPerSm of a full SM's loads in flight, and by
  // Little's law pulls that share of the bytes per unit of memory latency
  // (memory_kernel: PyTorch's reduce_kernel over a few rows, 16 warps a CTA
  // alone on its SM); in (0, 1], 1 = a full SM's.
  double sm_pull_fraction = 1.0;
  // A persistent kernel (Hopper cuBLAS/CUTLASS GEMMs: at most one CTA per
  // SM, each looping over tiles) takes min(tiles, free SMs, max_sms) SMs at
  // the scheduling pass that first gives it any, and keeps exactly those
  // until its end: its waves all have that width (the last one may run
  // fewer tiles; its idle SMs stay with the kernel), and it neither gives
  // SMs back nor takes more at wave boundaries. Otherwise the freed SMs of
  // every wave are shared anew among the waiting kernels and holds.
  bool persistent = false;
  // Paid once after the launch latency, before the first wave (GEMMs:
  // GpuEfficiency::gemm_setup); zero for other kernels.
  sim::Duration setup = sim::Duration::zero();
  // GEMMs: the slices K is cut into (split-K, GpuEfficiency::
  // gemm_split_k_min_slice); above 1 the reduction kernel that sums the fp32
  // partials is part of `setup` (its launch and bytes), as flash2 decode's
  // combine kernel is.
  int64_t split_k = 1;
  // How a tile's arithmetic and its HBM streaming overlap: 0 = perfectly
  // (the tile takes the longer of the two), p > 0 = the p-norm
  // (compute^p + memory^p)^(1/p), which is the longer one far from balance
  // and 2^(1/p) x it at balance (GEMMs: kGemmOverlapKnee,
  // kernel_cost_model.h).
  double overlap_knee = 0.0;
  // A fused attention kernel (FlashAttention-2/3, cuDNN; not the split-KV
  // decode): its query tile stays in shared memory and K/V are reread from
  // L2 by every query block, so beside a collective's HBM traffic its
  // arithmetic stretches by InterferenceParams::attention_sensitivity, not
  // kernel_sensitivity (measured on 2x H100: cuDNN SDPA loses only its SMs).
  bool fused_attention = false;
  // Added to every wave beside efficiency.tile_overhead (attention tiles:
  // GpuEfficiency::attention_tile_overhead); zero for other kernels.
  sim::Duration extra_wave_overhead = sim::Duration::zero();
  // SM work beside the unit's arithmetic (memory kernels that compute):
  // transcendentals (ex2, lg2, rsqrt, rcp: exp, log, sigmoid, rsqrt) per
  // tile on the special-function units, GpuSpec::sfu_per_clock_per_sm a
  // clock per SM; they issue beside the fp32 lanes, so a tile's arithmetic
  // takes the longer of the two. And SM cycles per tile that no other work
  // hides: the end of each row a reduction gives a CTA of its own (warp
  // shuffles, a block barrier and a shared-memory exchange, the next row's
  // first loads), added to the arithmetic.
  double sfu_ops_per_tile = 0;
  double latency_cycles_per_tile = 0;
  // SM cycles a tile takes at least, whatever its arithmetic and bytes: a
  // chain of dependent loads one CTA walks (a split-KV decode CTA's key
  // blocks, attention_kernel_model.h). A lower bound on the tile's time, not
  // arithmetic: the power model's activity does not count it.
  double latency_floor_cycles_per_tile = 0;
  // Its bytes move between the SMs and L2, not HBM (l2_cache.h): a pass
  // whose inputs the kernels just before it wrote, all of whose reads and
  // writes fit in L2. Its tiles stream at l2_bandwidth_per_sm; it draws no
  // HBM bandwidth beside a collective and no HBM power (its dirty lines are
  // written back later, under the kernels after it: not counted).
  bool l2_resident = false;
  double hbm_bytes_per_tile() const { return l2_resident ? 0.0 : bytes_per_tile; }
  double total_flops() const { return flops_per_tile * static_cast<double>(tiles); }
  double total_bytes() const { return bytes_per_tile * static_cast<double>(tiles); }
};

// Op shapes, in the units of the IR.
struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1;  // batched GEMM: `batch` independent m×n×k products
  Dtype dtype = Dtype::bf16;
};

struct AttentionShape {
  int64_t batch = 1, heads = 1, kv_heads = 0;  // kv_heads 0 = heads (MHA)
  int64_t q_len = 1, kv_len = 0;               // kv_len 0 = q_len
  int64_t head_dim = 128;
  bool causal = false;
  bool backward = false;  // false: forward pass
  Dtype dtype = Dtype::bf16;
  // The kernel that runs it (attention_family.h); flash2 is PyTorch's
  // FlashAttention-2 backend.
  AttentionFamily family = AttentionFamily::flash2;
  // Head dim of V (and O) when it differs from Q/K's (MLA: 192 vs 128); 0 = head_dim.
  int64_t head_dim_v = 0;
  // V is the first head_dim_v columns of K, one tensor read once (MLA's
  // absorbed decode: every head attends over the one latent per token, its
  // kv_lora_rank columns as V).
  bool kv_shared = false;
};

enum class MemoryOpKind { elementwise, layer_norm, rms_norm, softmax, memcpy };

struct MemoryOpShape {
  MemoryOpKind kind = MemoryOpKind::elementwise;
  int64_t elements = 0;    // elementwise/memcpy: elements (memcpy: bytes with dtype fp8/int8)
  int64_t rows = 0;        // norms/softmax: tokens
  int64_t cols = 0;        // norms/softmax: hidden
  int inputs = 1;          // elementwise: tensors read (gelu 1, add 2)
  double flops_per_element = 1.0;
  Dtype dtype = Dtype::bf16;
  // elementwise only: HBM bytes moved per element when the tensors differ in
  // type (an optimizer pass reading an fp16 gradient and writing fp32); 0 =
  // (inputs + 1) x the dtype's size.
  double bytes_per_element = 0.0;
  // elementwise only: transcendentals (exp, log, rsqrt, reciprocal) per
  // element, run on the SMs' special-function units (KernelDesc).
  double transcendentals_per_element = 0.0;
  // elementwise only: rows a reduction ends, each on a CTA of its own (a
  // loss over the vocabulary), and the SM cycles each row's end costs that
  // other work does not hide (KernelDesc::latency_cycles_per_tile); 0: none.
  int64_t reduction_rows = 0;
  double cycles_per_row = 0.0;
  // elementwise only: the pass is PyTorch's three-pass softmax kernel over
  // rows too long for one CTA to keep (kernel_cost_model.h, multipass): its
  // max, sum and write passes each load the row, so the one load of each
  // element counted in bytes_per_element becomes the GPU's
  // efficiency.softmax.multipass_reads loads (the rest hit L2).
  bool multipass_row_loads = false;
  // elementwise only: the fraction of the achieved streaming HBM bandwidth
  // the kernel's access pattern reaches (1: vectorized and contiguous; a
  // framework's unfused kernels on small or strided tensors, and eager
  // PyTorch's broadcast and atomic kernels in workloads/moe, reach less);
  // in (0, 1].
  double bandwidth_efficiency = 1.0;
  // softmax only: PyTorch's log_softmax forward, which runs softmax's
  // kernels but ends each element with x - max - log(sum), where softmax
  // divides (and its CTA-per-row kernels recompute the exponential first):
  // fewer SM cycles per element (kernel_cost_model.h, memory_kernel).
  bool log_softmax = false;
  // elementwise only: elements one CTA of the kernel's launch takes; 0: the
  // grid follows the bytes (kMemoryBytesPerTile a tile). PyTorch's
  // TensorIterator kernels launch 128 threads of 4 elements a CTA
  // (elementwise_kernel<128, 4>, vectorized_elementwise_kernel's
  // block_work_size): a small tensor's CTAs land on as many SMs (up to all
  // of them), each with its share of the bytes and the SM work, where
  // 64 KiB tiles would put an 8192-element pass on one SM.
  int64_t elements_per_cta = 0;
  // With elements_per_cta: the threads of one such CTA (PyTorch's 128). A
  // grid too small to give each SM kWarpsToHideIssueLatency warps runs its
  // SM work latency-bound (memory_kernel); 0: never. With max_ctas: the
  // threads of each of those CTAs, whose warps on an SM set the share of
  // its HBM reach they pull (KernelDesc::sm_pull_fraction); 0: a full SM's.
  int threads_per_cta = 0;
  // elementwise only: the CTAs the launch has when fewer than the SMs its
  // bytes would spread over (a reduction over a few rows, each CTA at what
  // one SM pulls); 0: the grid follows the bytes.
  int64_t max_ctas = 0;
  // The pass reads tensors the kernels just before it wrote (a serving
  // step's activations: a GEMM's output, the previous pass's): when its
  // bytes fit in L2 (l2_cache.h l2_holds) they move at L2's rate
  // (KernelDesc::l2_resident). false: from HBM, as a pass after an L2 flush
  // (the microbenchmarks' way) or over weights, gradients and optimizer state.
  bool inputs_in_l2 = false;
};

}  // namespace gcsim::models::gpu
