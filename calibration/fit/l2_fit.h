// The L2's rate (gpu_spec.h l2_bandwidth) fitted to eager PyTorch passes
// over tensors a kernel just wrote: l2_resident_passes.py's runs (add, SiLU
// and an fp32 cast over 256 KiB-256 MiB, each `warm`: its inputs filled just
// before, and `cold`: the same after a 1 GiB read), as the serving step's
// pytorch-eager passes model them (EagerServingPasses: the residual add, a
// vectorized SiLU, the norm's fp32 cast). gcsim's duration of a pass is its
// isolated time less the gap a profiler leaves before the next kernel
// (gpu_spec.h launch_gap), as serving's kernel classes count it.
#pragma once

#include <string>
#include <vector>

#include "models/gpu/gpu_spec.h"
#include "models/gpu/kernel.h"

namespace gcsim::calibration {

struct L2PassPoint {
  std::string op;                  // add, silu, cast
  bool warm = false;               // inputs written just before (MemoryOpShape::inputs_in_l2)
  models::gpu::MemoryOpShape shape;
  double footprint_bytes = 0;      // what the pass reads and writes
  double duration_us = 0;          // profiled, median of 5
};

// The add, silu and cast passes of a gcsim.l2_resident_passes.v1 file, warm
// and cold (its `copy` rows timed another kernel: left out). Throws
// std::runtime_error naming the file for an unreadable one or a wrong schema.
std::vector<L2PassPoint> load_l2_pass_points(const std::string& path);

// gcsim's profiled duration of a point on `spec`, in us.
double l2_pass_duration_us(const models::gpu::GpuSpec& spec, const L2PassPoint& p);

// Mean relative error of the durations on `spec` (signed errors in `errors` when given).
double l2_pass_mean_abs_error(const models::gpu::GpuSpec& spec, const std::vector<L2PassPoint>& points,
                              std::vector<double>* errors = nullptr);

// The relative error of the time each point adds over the one before it
// (consecutive points of one op and state, in growing size): the rate at
// which a pass's time grows with its bytes, free of what a pass costs at
// any size (gcsim's fixed part of a warm pass is ~0.5 us long: L2's shorter
// first-load latency is not modelled). Mean |error|, signed errors in
// `errors` when given.
double l2_increment_mean_abs_error(const models::gpu::GpuSpec& spec, const std::vector<L2PassPoint>& points,
                                   std::vector<double>* errors = nullptr);

// The l2_bandwidth in [hbm_bandwidth, 8 x hbm_bandwidth] (the loader's
// range) that minimises l2_increment_mean_abs_error on `points` (golden
// section), in whole GB/s.
sim::Bandwidth fit_l2_bandwidth(const models::gpu::GpuSpec& spec, const std::vector<L2PassPoint>& points);

}  // namespace gcsim::calibration
