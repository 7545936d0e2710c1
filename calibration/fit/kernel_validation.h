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
  // Signed relative error of the prediction: (predicted − measured) / measured.
  double error() const { return (predicted_us - measured_us) / measured_us; }
};

// `runs` are one or more result files of the same script on the same GPU;
// each case's measurement is the lowest median across runs (the rested,
// unthrottled GPU: large GEMMs lose 5–15% to the power cap when hot).
std::vector<KernelComparison> compare_with_measurements(const models::gpu::GpuSpec& spec,
                                                        const std::vector<nlohmann::json>& runs);

// A plain-text table of the comparisons with the mean absolute error.
std::string comparison_table(const std::vector<KernelComparison>& rows);

}  // namespace gcsim::calibration
