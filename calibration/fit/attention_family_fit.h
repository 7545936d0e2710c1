// Fits the fused attention families' parameters (models/gpu/attention_family.h)
// to PyTorch SDPA measurements (calibration/microbench/attention_families_bench.py,
// schema gcsim.microbench.v1), and reports the model's error on shapes it
// was not fitted on.
//
// Per family and pass, the kernel time alone on the GPU is linear in the
// unknowns (attention_kernel_model.h):
//   t - launch - waves x tile_overhead
//     = waves x (mma_s / e  [+ mma_s x (1/(e w) - 1/e) for d > 128]
//                + softmax_exposed x exp_s + wave_overhead)
// and is solved by least squares on relative error under the physical
// bounds (e, w in (0, 1], softmax_exposed in [0, 1], overhead >= 0), every
// bound combination tried. Decode: t - launch - waves x tile_overhead =
// memory time at the HBM peak / decode_bandwidth + waves x overhead
// (+ decode_split_overhead when the keys are split), decode_bandwidth in
// (0, 1], the split overhead in [0, 50 us].
//
// Held out (never fitted): prefill at 1K, 4K and 16K tokens, every GQA and
// MLA shape, decode at 4K keys and at batch 128. Fitted: prefill at 512,
// 2K, 8K and 32K tokens, MHA, head dims 64/128/192.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "models/gpu/attention_family.h"
#include "models/gpu/gpu_spec.h"
#include "models/gpu/kernel.h"

namespace gcsim::calibration {

struct AttentionPoint {
  models::gpu::AttentionShape shape;  // family: the backend's, or the GPU's default
  std::string backend;                // as recorded: DEFAULT, CUDNN_ATTENTION, FLASH_ATTENTION, ...
  double time_us = 0.0;               // back-to-back spacing
  bool heldout = false;
  std::string label;
  // The measurement is the kernel's own duration (torch.profiler), not the
  // spacing of back-to-back calls: no launch latency in it.
  bool kernel_only = false;
  // "" for attention_families_bench.py's grid; "serving" for
  // serving_kernels_bench.py's small grids (the group names say so).
  std::string source;
  // The call's side kernels' summed profiler durations (the backward's
  // dO.O, dQ conversion and GQA head reductions), where the record lists
  // its kernels; 0: not measured.
  double side_us = 0.0;
};

// The points of one measurement file that a family models: CUDNN_ATTENTION
// (cudnn), FLASH_ATTENTION (flash2), DEFAULT (the GPU's auto family).
// EFFICIENT_ATTENTION and MATH are not modelled and left out. Cases the
// power cap slowed (NVML sm_mhz under 90% of boost) are kept. Throws
// std::runtime_error naming the file when it cannot be read.
std::vector<AttentionPoint> load_attention_points(const std::string& path,
                                                  const models::gpu::GpuSpec& spec);
bool attention_heldout(const models::gpu::AttentionShape& shape);

// The causal GQA prefill kernels of serving_kernels_bench.py's attention
// section (the serving model's TP ranks: batch 1, 16/2, 32/4 and 64/8
// heads, head dim 128, 512-8192 tokens, 128-8192 CTAs): the contiguous
// layout's CUDNN_ATTENTION and default records, their torch.profiler
// kernel durations (kernel_only). Held out: 1024 and 4096 tokens, and every
// 32-head (TP2) shape. A file with an `attention_backward` list
// (serving_attention_sweep.py) adds the default backend's backward at the
// same shapes, timed by its spacing (the call's kernels and their gaps, as
// the families grid's backward), held out the same way, with its side
// kernels' durations (side_us). Throws std::runtime_error naming the file
// when it cannot be read.
std::vector<AttentionPoint> load_serving_attention_points(const std::string& path,
                                                          const models::gpu::GpuSpec& spec);
bool serving_attention_heldout(const models::gpu::AttentionShape& shape);

// Fits `family`'s forward, backward and decode parameters on the points
// that are not held out; what lacks data keeps `spec`'s values (`notes`
// says which). The forward of a family that is not flash2 also fits how
// its CTAs share an SM (FusedAttentionPass: ctas_per_sm in 1..3, the backward 2..3,
// lone_cta_fraction in [0.3, 1], cta_latency_blocks in [0, 6], searched on
// a grid, coarse then fine; the rest solved by least squares at each,
// kernel_overhead in [0, 10 us] among them): on grids of every size
// (attention_families_bench.py's and serving_kernels_bench.py's) at once.
// `search_sharing` false keeps `spec`'s sharing and kernel_overhead (a GPU
// with no small grids measured: the H200 takes the H100's, the same SM).
// The backward the same way (cuDNN's bprop, 64 x 64 tiles), fitted on the
// forced backend's large grids and the serving grids' default-backend
// backward (whose trace runs cuDNN's bprop), after its side kernels'
// side_bandwidth, fitted to their own durations (fit_side_bandwidth).
models::gpu::FusedAttentionParams fit_attention_family(const models::gpu::GpuSpec& spec,
                                                       models::gpu::AttentionFamily family,
                                                       const std::vector<AttentionPoint>& points,
                                                       std::vector<std::string>& notes,
                                                       bool search_sharing = true);

// The side kernels' fraction of the HBM peak, fitted on the points that
// are not held out and carry side_us: side_us = kernels x a fixed cost +
// side bytes / (HBM peak x side_bandwidth), least squares on relative
// error, the fixed cost in [0, 5 us] (a small kernel's launch-to-end floor
// on Hopper is 1.5-2.5 us), side_bandwidth in (0, 1]. Returns `fallback`
// without such points (`notes` says so); `fixed_us` gets the fixed cost.
double fit_side_bandwidth(const models::gpu::GpuSpec& spec, const std::vector<AttentionPoint>& points,
                          double fallback, std::vector<std::string>& notes, double* fixed_us = nullptr);

// Fits flash2's prefill (FlashAttention-2's tiles, attention_kernel_model.h)
// on the FLASH_ATTENTION forward and backward points that are not held
// out, the same way as a fused family's passes: per pass the MMA efficiency
// and per-wave overhead (GpuEfficiency::attention, attention_backward,
// attention(_backward)_tile_overhead) and flash2_prefill's wide_head and
// softmax_exposed. Without points a pass keeps `spec`'s values.
struct Flash2PrefillFit {
  models::gpu::FusedAttentionPass forward;
  models::gpu::FusedAttentionPass backward;
};
Flash2PrefillFit fit_flash2_prefill(const models::gpu::GpuSpec& spec,
                                    const std::vector<AttentionPoint>& points,
                                    std::vector<std::string>& notes);
void apply_flash2_prefill(models::gpu::GpuSpec& spec, const Flash2PrefillFit& fit);
// The preset lines: efficiency.attention* and attention_families.flash2's passes.
std::string flash2_prefill_yaml(const Flash2PrefillFit& fit);

// Fits flash2's decode (models/gpu/attention_flash2_decode.h) on the
// FLASH_ATTENTION decode points that are not held out: each wave of CTAs
// costs max(MMA time / efficiency, memory time at the HBM peak / bandwidth)
// + wave_overhead, a split kernel adds combine_overhead + splits x
// combine_per_split. Linear in 1/efficiency, 1/bandwidth and the three
// times once each wave's bound is known; solved under the bounds,
// alternating with the bounds (from `spec`'s values) until they stay put.
// Without such points the spec's values are kept (`notes` says so).
models::gpu::Flash2DecodeParams fit_flash2_decode(const models::gpu::GpuSpec& spec,
                                                  const std::vector<AttentionPoint>& points,
                                                  std::vector<std::string>& notes);
std::string flash2_decode_yaml(const models::gpu::Flash2DecodeParams& p);
std::vector<std::string> flash2_decode_out_of_range(const models::gpu::Flash2DecodeParams& p);

// The model's time for a point on `spec` (the kernel alone, as the GPU runs it).
double attention_predicted_us(const models::gpu::GpuSpec& spec, const AttentionPoint& p);

struct AttentionErrorRow {
  std::string group;  // "cudnn fwd", "default backend vs cudnn model bwd", "flash2 decode", ...
  bool heldout = false;
  int n = 0;
  double median = 0.0;  // |predicted - measured| / measured
  double worst = 0.0;
  std::string worst_label;
};
std::vector<AttentionErrorRow> attention_errors(const models::gpu::GpuSpec& spec,
                                                const std::vector<AttentionPoint>& points);

// The error table as markdown: one row per group, fitted then held out.
std::string attention_errors_markdown(const std::vector<AttentionErrorRow>& rows);
// A family's parameters as the YAML a preset or profile takes.
std::string attention_params_yaml(models::gpu::AttentionFamily family,
                                  const models::gpu::FusedAttentionParams& p);

// Physical-range violations of a family's parameters, as text (empty: all in range).
std::vector<std::string> attention_params_out_of_range(const models::gpu::FusedAttentionParams& p);

}  // namespace gcsim::calibration
