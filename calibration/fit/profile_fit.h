// Fits the kernel cost model's parameters to measured kernel times by
// weighted linear least squares (Eigen), minimising the relative error.
//
// For a fixed tile choice and fixed bound of each wave (compute or memory),
// the model's time is linear in its parameters' inverses:
//   T = launch + setup[GEMM] + waves * tile_overhead
//       + sum over compute-bound waves of  c_w / (e_unit * f_tile)
//       + sum over memory-bound waves  of  m_w / (e_hbm [* e_row])
// with c_w, m_w the wave's times at efficiency 1. The fit alternates:
// choose tiles and bounds with the current parameters; solve for launch,
// setup, overhead and the inverse efficiencies 1/e (bounded: e <= 1, times
// >= 0); then solve each tile shape's multiplier f_tile; repeat. The HBM
// headroom of one SM (sm_bandwidth_headroom) is chosen from a few
// candidates by the same criterion.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "calibration/fit/measurements.h"
#include "models/gpu/gpu_spec.h"

namespace gcsim::calibration {

struct FitResult {
  models::gpu::GpuSpec spec;  // the base spec with the fitted parameters
  double rms_relative_error = 0;  // over the fitting set
  int cases = 0;
  std::vector<std::string> notes;  // parameters left at the base value, and why
};

// Fixed costs measured apart, which the least squares keeps instead of
// fitting: on spacings alone a one-wave kernel's launch latency, setup and
// wave overhead are one column (measurements.h: the stream's gap between
// kernels, a kernel with no work's duration).
struct MeasuredFixedCosts {
  std::optional<double> launch_us;    // kernel_launch_latency, us
  std::optional<double> overhead_us;  // tile_overhead, us
};

FitResult fit_profile(const models::gpu::GpuSpec& base, const std::vector<const Measurement*>& cases,
                      const MeasuredFixedCosts& fixed = {});

// The model's isolated time of a measurement's kernel on `spec`, in us.
double predicted_us(const models::gpu::GpuSpec& spec, const Measurement& m);

// A graph node's launch latency of `us`, kept in [kMinGraphLaunchLatency,
// fitted.kernel_launch_latency] (a node starts no slower than a stream
// launch), in whole nanoseconds as a profile writes it.
sim::Duration graph_launch_latency_of(const models::gpu::GpuSpec& fitted, double us);

// A kernel node's launch latency in a replayed CUDA graph: `fitted`'s
// stream launch latency less what a graph saves per kernel, kept in
// [kMinGraphLaunchLatency, kernel_launch_latency]. The saving is the mean
// over real decode steps when `set` has them (graph_savings_us), else the
// empty kernels' stream spacing minus their graph-node spacing
// (gcsim_microbench's launch section); nullopt when neither was measured.
std::optional<sim::Duration> fit_graph_launch_latency(const models::gpu::GpuSpec& fitted,
                                                      const MeasurementSet& set);

// The part of `fitted`'s launch latencies a profiler counts as the kernel's
// (GpuSpec::launch_inside_kernel): the stream latency less the real decode
// steps' mean gap between kernels on a stream (set.decode_stream_gaps_us),
// kept in [0, the graph's latency], whole nanoseconds; nullopt when no decode
// step was measured. A profile whose latency is the measured gap itself
// (--measured-fixed-costs) gets 0: its kernels hold all of their time.
std::optional<sim::Duration> fit_launch_inside_kernel(const models::gpu::GpuSpec& fitted,
                                                      const MeasurementSet& set);

}  // namespace gcsim::calibration
