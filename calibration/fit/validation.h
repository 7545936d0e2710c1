// Fit and held-out sets of a calibration, and the prediction error by class
// of kernel on either: what `gcsim calibrate --validate` prints.
#pragma once

#include <string>
#include <vector>

#include "calibration/fit/measurements.h"
#include "models/gpu/gpu_spec.h"

namespace gcsim::calibration {

enum class Split { fit, heldout, excluded };
const char* split_name(Split s);

// Deterministic: within each class, cases sorted by label, every fourth
// (positions 2, 6, 10, ...) is held out; excluded cases stay out of both.
std::vector<Split> split_measurements(const MeasurementSet& set);

struct ClassError {
  std::string shape_class;  // a class, or "GEMM (all)", "memory-bound (all)", "attention (all)"
  int n = 0;
  double median_abs = 0, p90_abs = 0, max_abs = 0;  // |predicted - measured| / measured
  double target_median = 0, target_p90 = 0;         // the targets for aggregates, 0 = none
  bool meets_target() const;
};

// Errors on the cases of `which`, per class and per category.
std::vector<ClassError> class_errors(const models::gpu::GpuSpec& spec, const MeasurementSet& set,
                                     const std::vector<Split>& splits, Split which);

std::string error_table(const std::vector<ClassError>& rows);

double percentile(std::vector<double> v, double p);

}  // namespace gcsim::calibration
