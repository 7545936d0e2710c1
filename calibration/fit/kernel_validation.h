// Compares the kernel cost model's predictions with measured kernel times
// (calibration/microbench/torch_kernels.py output): one row per measured
// GEMM, memory-bound op and attention case. The basis of `calibrate
// --validate` and of the H100 validation test.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/gpu/gpu_spec.h"

namespace gcsim::calibration {

struct KernelComparison {
  std::string kind;   // gemm | memory | attention
  std::string label;  // "gemm bf16 8192x8192x8192"
  double measured_us = 0;
  double predicted_us = 0;
  double sm_mhz = 0;  // the clock the kept measurement ran at (0: not recorded)
  // Signed relative error of the prediction: (predicted − measured) / measured.
  double error() const { return (predicted_us - measured_us) / measured_us; }
};

// `runs` are result files of torch_kernels.py or kernel_grid.py on the same
// GPU. A record's time is its back-to-back spacing (time_us: the kernel in a
// stream of work, what gcsim's kernel time stands for) where it has one, else
// its event-pair median (torch_kernels.py: ~1-2 us of event overhead on top,
// which only the smallest kernels feel); each case keeps its lowest time
// across runs, and is predicted at the SM clock that run recorded for it
// (kernel_grid.py's NVML median; unrecorded: the spec's clock).
std::vector<KernelComparison> compare_with_measurements(const models::gpu::GpuSpec& spec,
                                                        const std::vector<nlohmann::json>& runs);

// A plain-text table of the comparisons with the mean absolute error.
std::string comparison_table(const std::vector<KernelComparison>& rows);

}  // namespace gcsim::calibration
