// Kernel measurements as the calibration reads them: the records written by
// calibration/microbench (gcsim_microbench, attention_bench.py), each turned
// into the op shape the kernel cost model predicts, with its measured time.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "models/gpu/gpu_spec.h"
#include "models/gpu/kernel.h"

namespace gcsim::calibration {

struct Measurement {
  std::string kind;          // gemm | memory | attention
  std::string shape_class;   // the class errors are reported by (see class_of)
  std::string label;         // unique within a set, e.g. "gemm bf16 TN 8192x8192x8192"
  double time_us = 0;        // back-to-back spacing of the kernel (time_us of the record)
  // The SM clock the kernel ran at (MHz, NVML's median over its timing), 0 =
  // not recorded: then the spec's clock. Predictions stretch the arithmetic
  // by the spec's clock over this one (kernel_cost_model.h, isolated_time).
  double sm_mhz = 0;
  // Left out of fitting and validation, with the reason: the GPU was
  // throttled (SM clock < 90% of its maximum after the case), the stream was
  // not back-logged, or the record has no model op.
  std::string excluded;
  // Fitted elsewhere with parameters of its own (flash2's prefill:
  // attention_family_fit.h): checked against the profile, never fitted by it.
  bool validation_only = false;
  std::optional<models::gpu::GemmShape> gemm;
  std::optional<models::gpu::MemoryOpShape> memory;
  std::optional<models::gpu::AttentionShape> attention;
  nlohmann::json record;     // as measured
};

struct MeasurementSet {
  std::vector<Measurement> items;
  nlohmann::json provenance = nlohmann::json::array();  // each file's meta, with its path
  double launch_us = 0;      // empty-kernel back-to-back spacing, 0 if not measured
  double graph_node_us = 0;  // the same kernels as nodes of a replayed CUDA graph, per node; 0 if not measured
  // Real decode steps (serving_kernels_bench.py, gcsim.serving_kernels.v1):
  // per step, (its time launched on a stream - replayed from a CUDA graph) /
  // its kernels, us: what a graph saves per kernel.
  std::vector<double> graph_savings_us;
  // kernel_grid.py's back-logged GEMMs of one kernel a call and under 10 us
  // apart: spacing - the kernel's profiled duration, us. The GPU's idle time
  // between two kernels of a stream: what the model's kernel_launch_latency
  // stands for, measured apart from the kernels' own fixed costs.
  std::vector<double> stream_gaps_us;
  // serving_kernels_bench.py: its 1-element add_'s profiled duration on a
  // stream (a kernel with no work: its fixed time on the GPU), us, 0 if not
  // measured; and each decode step's median gap between the kernels of its
  // replayed CUDA graph, us.
  double empty_kernel_duration_us = 0;
  std::vector<double> graph_gaps_us;
  // serving_kernels_bench.py: each decode step's mean gap between kernels
  // launched on a stream (its eager time less its profiled kernels' summed
  // durations, over its kernels), us: how much of the fitted launch latency
  // a profiler sees as idle (profile_fit.h fit_launch_inside_kernel).
  std::vector<double> decode_stream_gaps_us;
};

// The median of set.stream_gaps_us (us); nullopt without any.
std::optional<double> measured_stream_gap_us(const MeasurementSet& set);
// The median of set.graph_gaps_us (us); nullopt without any.
std::optional<double> measured_graph_gap_us(const MeasurementSet& set);

// Loads gcsim.microbench.v1 files, gcsim.serving_kernels.v1 ones (their
// decode steps' graph savings only) and gcsim.calibration.kernel_grid.v1 ones
// (calibration/microbench/kernel_grid.py: its GEMMs and eager softmax
// forward/backward; the compiled loss points are framework passes, read by
// calibration/fit/reduction_fit.py). Throws std::runtime_error naming the
// file for an unreadable file, a wrong schema or a record without the keys
// its kind needs.
MeasurementSet load_measurements(const std::vector<std::string>& paths);
// The same from parsed documents (`name` for messages).
void add_measurements(MeasurementSet& set, const nlohmann::json& doc, const std::string& name);

// The kernel the cost model runs for a measurement on `spec`.
models::gpu::KernelDesc kernel_for(const models::gpu::GpuSpec& spec, const Measurement& m);
// The spec's SM clock over the one the measurement ran at (1 when unknown).
double compute_stretch(const models::gpu::GpuSpec& spec, const Measurement& m);
// models::gpu::isolated_time on all SMs with every wave's arithmetic
// stretched by `compute_stretch` (a kernel measured at another SM clock;
// launch, setup and the bytes do not follow the clock), in us.
double isolated_us_at(const models::gpu::GpuSpec& spec, const models::gpu::KernelDesc& k,
                      double compute_stretch);

}  // namespace gcsim::calibration
