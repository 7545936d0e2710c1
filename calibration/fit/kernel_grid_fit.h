// Parameters fitted apart on kernel_grid.py's single-kernel run
// (calibration/measurements/h100-sxm/kernel_grid_2026-11-26/), beside the
// profile's least squares (profile_fit.h), which has no column for them:
// a GEMM's fixed cost (gemm_setup and gemm_setup_per_cta), cuBLAS's
// split-K (gemm_split_k_min_slice) and PyTorch's eager softmax
// (GpuEfficiency::softmax). Each is a search over a stated physical range
// minimising the mean relative error of the model itself (gemm_kernel,
// memory_kernel) on the fit half; the other half is held out.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "calibration/fit/measurements.h"
#include "models/gpu/gpu_spec.h"
#include "sim/engine/time.h"

namespace gcsim::calibration {

// The GEMMs of the 7^3 grid (M, N, K each in 128, 256, ..., 8192; group
// "grid") whose three indices sum to an even number: a checkerboard, so
// that every size and aspect is on both sides. The other grid points and
// every other GEMM of the run are held out.
bool in_gemm_fit_half(const Measurement& m);

// Physical ranges of the search (a test asserts the committed profile
// stays inside): the fixed part of a GEMM's setup from 0 (none) to 2 us
// (the whole fixed cost of the smallest GEMM, 3.2 us, less a launch); per
// CTA of the first wave from 0 to 30 ns (60 SM cycles: 4 us for 132 CTAs,
// more than any one-wave GEMM's whole fixed cost); a split-K slice of 256
// (four 64-deep K-blocks: the pipeline's depth) to 4096 columns of K.
inline constexpr double kGemmSetupMaxUs = 2.0;
inline constexpr double kGemmSetupPerCtaMaxNs = 30.0;
inline constexpr int64_t kSplitKSlices[] = {256, 512, 1024, 2048, 4096};

struct GemmFixedCostFit {
  sim::Duration setup;          // GpuEfficiency::gemm_setup
  sim::Duration setup_per_cta;  // GpuEfficiency::gemm_setup_per_cta
  int64_t split_k_min_slice = 0;
  double mean_abs_error = 0;    // over the fit cases, at the fitted values
  int cases = 0;
};
// Searches gemm_setup (50 ns steps), gemm_setup_per_cta (1 ns steps) and
// the split-K slice (kSplitKSlices) on `cases` (GEMMs), every other
// parameter as in `base`; the tile and split choice follows each trial.
GemmFixedCostFit fit_gemm_fixed_cost(const models::gpu::GpuSpec& base,
                                     const std::vector<const Measurement*>& cases);

// The eager softmax forward points of kernel_grid (softmax and
// log_softmax, bf16 and fp32): the fit half is softmax, log_softmax (one
// exponential per element to softmax's two) is held out.
bool is_softmax_forward(const Measurement& m);
bool in_softmax_fit_half(const Measurement& m);

struct SoftmaxFit {
  models::gpu::EagerSoftmaxParams params;
  double mean_abs_error = 0;
  int cases = 0;
};
// Each kernel's parameter on its own cases: SM cycles per element in
// [0, 4] (0.01 steps; what the SM spends issuing and waiting on a row's
// loads, conversions, exponentials and two reductions, not lane arithmetic
// alone: 1 cycle is 128 lane slots; 4 would put 8192 x 4096 at 500 us, 4x
// the slowest softmax measured), HBM reads of a long row in [1, 3] (0.25
// steps: the kernel's three passes each load it).
SoftmaxFit fit_eager_softmax(const models::gpu::GpuSpec& base,
                             const std::vector<const Measurement*>& cases);

// |predicted - measured| / measured of a kernel_grid.py run, per class:
// measurements.cpp's shape_class (excluded cases apart, as "<class>
// (excluded)"), the shapes cuBLAS ran split-K ("split-K shapes", from its
// kernel's name), and the small and mid GEMM classes split into the fit half
// of in_gemm_fit_half ("... (fit half)") and the rest ("... (held out)").
struct GridClassError {
  int n = 0;
  double mean = 0;  // mean |error|
  double max = 0;   // largest |error|
  double bias = 0;  // mean signed error
};
std::map<std::string, GridClassError> kernel_grid_class_errors(const models::gpu::GpuSpec& spec,
                                                               const MeasurementSet& set);

}  // namespace gcsim::calibration
