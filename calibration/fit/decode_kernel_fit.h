// The decode terms of a fused attention family (FusedAttentionParams'
// decode_*) fitted to its kernels as a profiler times them:
// decode_attention_split.py's runs (PyTorch's default SDPA for one decode
// token; each call's split-KV kernel and lean_reduction_kernel, profiled),
// gcsim's duration of a case being its isolated time less the gap a
// profiler leaves before the next kernel (gpu_spec.h launch_gap).
#pragma once

#include <string>
#include <vector>

#include "models/gpu/gpu_spec.h"
#include "models/gpu/kernel.h"

namespace gcsim::calibration {

struct DecodeKernelPoint {
  models::gpu::AttentionShape shape;
  double duration_us = 0;  // the call's kernels, summed
  double spacing_us = 0;   // back to back, CUDA events
  bool split = false;      // a lean_reduction_kernel ran
};

// The cases of a gcsim.decode_attention_split.v1 file as `family` runs
// them. Throws std::runtime_error naming the file for an unreadable one or
// a wrong schema.
std::vector<DecodeKernelPoint> load_decode_kernel_points(const std::string& path,
                                                          models::gpu::AttentionFamily family);

// gcsim's profiled duration and spacing of a point on `spec`, in us.
double decode_duration_us(const models::gpu::GpuSpec& spec, const DecodeKernelPoint& p);
double decode_spacing_us(const models::gpu::GpuSpec& spec, const DecodeKernelPoint& p);

// `spec`'s family decode terms with decode_bandwidth, decode_wave_overhead,
// decode_split_overhead, decode_kernel_overhead, decode_block_latency and
// decode_split_per_doubling fitted to `points`' durations (coordinate
// descent on the mean relative error from the family's current values and
// from block latencies of 0-1.2 us, the best kept; each term in the
// loader's range); decode_min_split_keys as given.
models::gpu::FusedAttentionParams fit_decode_kernels(const models::gpu::GpuSpec& spec,
                                                     models::gpu::AttentionFamily family,
                                                     const std::vector<DecodeKernelPoint>& points);

// Mean relative error of the durations on `spec` (signed errors kept in `errors` when given).
double decode_mean_abs_error(const models::gpu::GpuSpec& spec, const std::vector<DecodeKernelPoint>& points,
                             std::vector<double>* errors = nullptr);

}  // namespace gcsim::calibration
