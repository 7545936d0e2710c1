// Summaries of relative errors that the measured-data tests report.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace gcsim::test {

// The median of |e| over `errors` (0 for none).
inline double median_abs(std::vector<double> errors) {
  if (errors.empty()) return 0.0;
  for (double& x : errors) x = std::abs(x);
  std::sort(errors.begin(), errors.end());
  const size_t n = errors.size();
  return n % 2 ? errors[n / 2] : 0.5 * (errors[n / 2 - 1] + errors[n / 2]);
}

}  // namespace gcsim::test
