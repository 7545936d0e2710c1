// What one GPU model is: datasheet ceilings plus the achieved-fraction
// efficiencies that turn them into predictions. Filled from a preset in
// configs/hardware/ and, when given, overridden by a calibration profile.
#pragma once

#include <array>
#include <optional>
#include <string>

#include "models/gpu/attention_family.h"
#include "models/gpu/dtype.h"
#include "models/gpu/power_model.h"
#include "sim/engine/time.h"
#include "sim/config/units.h"

namespace gcsim::models::gpu {

// PyTorch's eager softmax/log_softmax forward, which is bound by the SMs
// rather than by its bytes below ~30,000 columns (an H100 moves 250-600 G
// elements/s, 0.3-2.4 TB/s). The kernel its row length picks
// (kernel_cost_model.h, eager_softmax_kernel) sets the cost: SM cycles per
// element, spread over the SMs, and for long rows the bytes of re-reading
// each row. Zeros: the bytes alone at row_reduction (no profile measured it).
struct EagerSoftmaxParams {
  // Up to 2048 columns and 8 KiB, a warp per row (softmax_warp_forward).
  double warp_cycles_per_element = 0.0;
  // Rows up to 16 KiB, a CTA per row in registers (cunn_SoftMaxForwardReg),
  // two block reductions a row (to 48 KiB, in shared memory: its bytes).
  double block_cycles_per_element = 0.0;
  // Longer rows (cunn_SoftMaxForward): its max, sum and write passes each
  // load the row; this many of the loads reach HBM (1: read once).
  double multipass_reads = 1.0;
};

// Fractions of datasheet peaks that real kernels reach. Presets carry
// typical measured values; a calibration profile replaces them.
struct GpuEfficiency {
  // Tensor-core mainloop efficiency of a large GEMM tile, per dtype (index
  // by Dtype). H100 bf16 8192^3 cuBLAS: ~800 of 989 TF/s = 0.81.
  std::array<double, 6> tensor{0.8, 0.8, 0.8, 0.8, 0.8, 0.8};
  double vector = 0.7;          // CUDA-core (non-tensor) arithmetic
  double hbm = 0.9;             // large streaming copy / datasheet bandwidth
  // FlashAttention-2 (flash2) prefill: MMA fraction of the tensor peak on
  // its executed tiles (attention_kernel_model.h), forward and backward.
  double attention = 0.65;
  double attention_backward = 0.25;
  // Row-wise reductions (layer/RMS norm, softmax) reach this fraction of the
  // streaming bandwidth: per-row synchronisation and lower occupancy.
  double row_reduction = 0.7;
  // Fixed cost per tile wave: prologue (first loads), epilogue (store), in ps.
  sim::Duration tile_overhead = sim::us(int64_t{1});
  // GEMM tile-shape efficiency: a multiplier on `tensor` for each CTA tile
  // candidate (index as kGemmTileCandidates: 128x256, 256x128, 128x128,
  // 128x64, 64x128, 64x64). Smaller tiles reuse operands less; 1 = as the
  // largest tile. Fitted by calibration (calibration/fit/profile_fit.h).
  std::array<double, 6> gemm_tile{1.0, 1.0, 1.0, 1.0, 1.0, 1.0};
  // Fixed time a GEMM kernel spends once before its first wave, beyond the
  // launch latency (cuBLASLt on H100: workspace/semaphore setup and the
  // persistent kernel's prologue; a 256^3 bf16 GEMM takes ~4 us where an
  // empty kernel takes ~1.6 us). 0 unless a calibration profile sets it.
  sim::Duration gemm_setup = sim::Duration::zero();
  // Added to gemm_setup for every CTA of a GEMM's first wave: the block
  // scheduler dispatching it and its prologue (barriers, descriptors, the
  // first K-block's loads) before its first MMA. On an H100 a 128^3 GEMM
  // (a few CTAs) takes 3.2 us between kernels in a stream, a one-wave
  // GEMM on all 132 SMs ~1.3 us more fixed cost (kernel_grid, 2026-11-26).
  // 0 unless a calibration profile sets it.
  sim::Duration gemm_setup_per_cta = sim::Duration::zero();
  // cuBLAS's split-K: a GEMM whose M x N tiles leave SMs idle cuts K into
  // s = min(SMs / tiles, K / gemm_split_k_min_slice) slices (s >= 2), each
  // CTA writing an fp32 partial tile, and a second kernel sums the s
  // partials (kernel_cost_model.h). The shortest slice of K worth a CTA:
  // its pipeline needs several 64-deep K-blocks to reach its rate. 0: GEMMs
  // never split (no profile measured it).
  int64_t gemm_split_k_min_slice = 0;
  // PyTorch's eager softmax forward (above); fitted on kernel_grid.
  EagerSoftmaxParams softmax;
  // Extra cost per wave of flash-attention tiles, beyond tile_overhead: the
  // work of a query block that does not grow with the keys (forward: Q load,
  // O rescale and store; backward: the dO.O pass, the fp32 dQ accumulation
  // and its conversion). H100 SDPA at 16K tokens: ~120 us (fwd) and ~1 ms
  // (bwd) of each kernel's time do not scale with the sequence length.
  sim::Duration attention_tile_overhead = sim::Duration::zero();
  sim::Duration attention_backward_tile_overhead = sim::Duration::zero();
  // The fused Hopper-class attention families (attention_kernel_model.h);
  // flash2's prefill uses the attention fields above. Fitted per GPU
  // (calibration/fit/attention_family_fit.h).
  FusedAttentionParams cudnn_attention;
  FusedAttentionParams flash3_attention;
  // flash2's prefill head-dim terms (attention_kernel_model.h; its
  // efficiency and per-wave overhead are the attention fields above) and its
  // decode kernels (attention_flash2_decode.h), fitted like the above.
  Flash2PrefillParams flash2_prefill;
  Flash2DecodeParams flash2_decode;
  double tensor_for(Dtype d) const { return tensor[static_cast<size_t>(d)]; }
  // The parameters of a fused family (flash3 or cudnn).
  const FusedAttentionParams& fused_attention(AttentionFamily f) const {
    return f == AttentionFamily::flash3 ? flash3_attention : cudnn_attention;
  }
  FusedAttentionParams& fused_attention(AttentionFamily f) {
    return f == AttentionFamily::flash3 ? flash3_attention : cudnn_attention;
  }
};

struct GpuSpec {
  std::string name;    // preset key, e.g. "h100-sxm"
  std::string source;  // where the datasheet numbers come from
  int sm_count = 0;
  double sm_clock_ghz = 0.0;  // boost clock
  // Dense tensor-core peak per dtype (index by Dtype); 0 = not supported.
  std::array<sim::FlopRate, 6> tensor_peak{};
  sim::FlopRate vector_fp32_peak;  // non-tensor FP32 (FMA = 2 flops)
  // Special-function-unit results (ex2, lg2, rsqrt, rcp, sin, cos) per SM
  // per clock: 16 on compute capability 5.0-9.0 and 10.0 (CUDA C++
  // Programming Guide, "Arithmetic Instructions" throughput table); at
  // sm_clock_ghz. Exponentials and logarithms are each one such result
  // (exp(x) = ex2(x * log2 e)).
  double sfu_per_clock_per_sm = 16.0;
  sim::Bandwidth hbm_bandwidth;
  sim::Bytes hbm_capacity;
  sim::Bytes l2_size;
  // Scale-up (NVLink through NVSwitch): per GPU, each direction.
  sim::Bandwidth nvlink_bandwidth;
  int nvlink_links = 0;
  sim::Duration nvlink_latency;
  bool has_nvls = false;  // NVLink SHARP in-switch reduction
  sim::Bandwidth pcie_bandwidth;  // host link, each direction
  // Time from a kernel's launch to its first tile on an SM, back-to-back
  // launches on a stream (the host-side cost overlaps previous kernels).
  sim::Duration kernel_launch_latency;
  // The same for a kernel node of a replayed CUDA graph: the graph's
  // executor starts a node's successor on the GPU without the stream's
  // per-launch work, so back-to-back kernels start closer together
  // (gcsim calibrate: calibration/fit/profile_fit.h fit_graph_launch_latency;
  // checked on real decode kernels by calibration/fit/serving_kernels_report.py).
  // In [kMinGraphLaunchLatency, kernel_launch_latency]; nullopt: not measured
  // for this GPU, graph nodes pay kernel_launch_latency.
  std::optional<sim::Duration> graph_kernel_launch_latency;
  // What an NCCL collective's kernel node adds to a replayed CUDA graph
  // beyond the kernel's own duration (the collective model's time): the
  // executor leaves ~2.5 us before an NCCL node against ~0.4 us before
  // another kernel (its 4 KiB ncclDevKernelArgsStorage parameter block), and
  // the step loses more than that gap. Measured on 4 H100s
  // (calibration/measurements/h100-x4/serving_graph_parts_2026-11-27: the
  // serving step's graph with and without its 18 collectives, each NCCL
  // kernel's duration from a profiled replay); zero: not measured for this
  // GPU. Collectives launched on a stream pay none (the collective model is
  // fitted to back-to-back stream launches, nccl-tests' way).
  sim::Duration graph_collective_overhead = sim::Duration::zero();
  // Of kernel_launch_latency (and of the graph's, which is it less what a
  // graph saves), the part a profiler's kernel duration covers; the rest is
  // the idle gap between one kernel's end and the next one's start
  // (launch_gap). Both launch latencies are fitted to back-to-back spacing,
  // so how they split is a property of the fit as much as of the GPU:
  // `gcsim calibrate` measures it as the fitted stream latency less the real
  // decode steps' mean end-to-start gap on a stream (serving_kernels_bench.py;
  // H100 profile 2397 - 1451 = 946 ns, H200 profile 2720 - 1343 = 1377 ns).
  // In [0, graph_launch_latency()]; kLaunchInsideKernel where not measured.
  std::optional<sim::Duration> launch_inside_kernel;
  // How much HBM bandwidth one SM can pull on its own, as a multiple of the
  // even share hbm_bandwidth / sm_count: > 1 lets a kernel on part of the
  // chip still approach full bandwidth.
  double sm_bandwidth_headroom = 2.0;
  // One SM's own HBM reach, when measured: replaces the headroom times the
  // even share for one SM (hbm.h, single_sm_hbm_reach). A lone CTA's pull is
  // its outstanding loads over the memory latency, a property of the SM,
  // not of the stack: PyTorch's few-row reductions take the same time on an
  // H200 as on an H100 (calibration/measurements/h200-x1/
  // calibration_set_2026-11-28), where the H200's even share is 1.42x the
  // H100's. nullopt: the headroom rule.
  std::optional<sim::Bandwidth> sm_hbm_reach;
  // The rate all SMs together read and write lines resident in L2, as a
  // pass over tensors the kernels just before it wrote sees it (l2_cache.h).
  // Measured (calibration/measurements/h200-x1/l2_resident_2026-11-28: eager
  // PyTorch passes over tensors a fill just wrote, against the same from
  // HBM). nullopt: not measured, every byte moves at HBM's rate.
  std::optional<sim::Bandwidth> l2_bandwidth;
  // GEMMs run as persistent kernels (KernelDesc::persistent): cuBLAS on
  // Hopper and later sizes the grid to the SMs and keeps them to the end.
  bool persistent_gemm = false;
  // What workload.attention_kernel: auto runs on this GPU: PyTorch SDPA's
  // default backend, as torch.profiler recorded it (prefill, decode).
  AttentionFamily default_attention = AttentionFamily::flash2;
  AttentionFamily default_decode_attention = AttentionFamily::flash2;
  GpuEfficiency efficiency;
  // Steady-state tensor-core throughput under back-to-back tensor work over
  // the rested rate, once the power limit has lowered the SM clock
  // (sustained_clocks.h; 1 = no power capping). Runs with sustained clocks
  // (training, by default) derate the tensor efficiencies by it.
  double sustained_tensor_fraction = 1.0;
  // Whether the tensor efficiencies above already include it.
  bool at_sustained_clocks = false;
  // Board power and the power cap's clock control (power_model.h); cap 0:
  // no power model for this GPU (cluster.clocks: model then falls back to
  // sustained_tensor_fraction).
  PowerParams power;
  // The calibration profile the preset names as its default ("" = none), and
  // the one applied to this spec ("" = the preset's own efficiencies).
  std::string calibration;
  std::string calibration_applied;

  sim::FlopRate tensor_peak_for(Dtype d) const { return tensor_peak[static_cast<size_t>(d)]; }
  sim::Duration graph_launch_latency() const {
    return graph_kernel_launch_latency.value_or(kernel_launch_latency);
  }
  sim::Duration launch_inside() const;
};

// Lower bound of graph_kernel_launch_latency: H100 and H200 replay empty
// kernel nodes 0.5-0.8 us apart (calibration/measurements/h100-sxm/
// microbench_2026-11-22.json, h200-x4/), and a real kernel's fixed part is
// larger than an empty one's.
inline constexpr sim::Duration kMinGraphLaunchLatency = sim::Duration::from_ps(200'000);  // 200 ns

// Upper bound of graph_collective_overhead: ten times the H100's measured
// value; more is no launch gap but a misconfiguration.
inline constexpr sim::Duration kMaxGraphCollectiveOverhead = sim::Duration::from_ps(50'000'000);  // 50 us

// Where a GPU has no measured launch_inside_kernel: of a kernel's launch
// latency (kernel_launch_latency or the graph's, both fitted to the spacing
// of back-to-back kernels), the part a profiler's kernel duration covers: its
// CTAs dispatched to the SMs before the first instruction and its completion
// at the end. Measured on one H100 (calibration/measurements/h100-sxm/
// serving_kernels_2026-11-27, the serving model's six decode steps, each
// profiled on a stream and replayed from a CUDA graph): the profiler's mean
// end-to-start gap is 1.451 us on the stream (1.379 .. 1.554) and 0.160 us
// in the graph (0.074 .. 0.210); the profile's launch latencies, 2.397 and
// 1.106 us, less those gaps leave 0.946 us both ways.
inline constexpr sim::Duration kLaunchInsideKernel = sim::Duration::from_ps(946'000);  // 946 ns

inline sim::Duration GpuSpec::launch_inside() const { return launch_inside_kernel.value_or(kLaunchInsideKernel); }

// The gap a profiler leaves between back-to-back kernels launched with
// `launch` latency: launch less the part of it inside the kernel (`inside`,
// GpuSpec::launch_inside), at least 0.
inline sim::Duration launch_gap(sim::Duration launch, sim::Duration inside) {
  return launch > inside ? launch - inside : sim::Duration::zero();
}

// `s` as kernels replayed in a CUDA graph see it: the graph node's launch
// latency in place of the stream's (the rest of the kernel cost model is the
// same).
inline GpuSpec graph_replay_spec(const GpuSpec& s) {
  GpuSpec g = s;
  g.kernel_launch_latency = s.graph_launch_latency();
  return g;
}

}  // namespace gcsim::models::gpu
