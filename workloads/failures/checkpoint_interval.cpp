#include "workloads/failures/checkpoint_interval.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace gcsim::workloads::failures {

double young_interval(double delta, double mtbf) { return std::sqrt(2.0 * delta * mtbf); }

double daly_interval(double delta, double mtbf) {
  if (delta >= 2.0 * mtbf) return mtbf;
  const double x = delta / (2.0 * mtbf);
  return std::sqrt(2.0 * delta * mtbf) * (1.0 + std::sqrt(x) / 3.0 + x / 9.0) - delta;
}

double daly_useful_fraction(double tau, double delta, double recovery, double mtbf) {
  const double segment = mtbf * std::exp(recovery / mtbf) * std::expm1((tau + delta) / mtbf);
  return tau / segment;
}

namespace {
// Two-sided 97.5% quantile of Student's t with `df` degrees of freedom
// (1..30 tabulated; the normal's 1.96 beyond).
double t975(size_t df) {
  static constexpr std::array<double, 30> kT{
      12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
      2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
      2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  return df <= kT.size() ? kT[df - 1] : 1.96;
}
}  // namespace

MeanCi fraction_ci95(const std::vector<double>& x) {
  MeanCi r = mean_ci95(x);  // the mean; lo and hi replaced below
  r.lo = r.hi = r.mean;
  if (x.size() < 2 || !(r.mean > 0.0 && r.mean < 1.0)) return r;
  double ss = 0;
  for (double v : x) ss += (v - r.mean) * (v - r.mean);
  const size_t df = x.size() - 1;
  const double se = std::sqrt(ss / static_cast<double>(df) / static_cast<double>(x.size()));
  const double half = t975(df) * se / (r.mean * (1.0 - r.mean));
  const double logit = std::log(r.mean / (1.0 - r.mean));
  const auto expit = [](double z) { return 1.0 / (1.0 + std::exp(-z)); };
  // The min/max only absorb rounding when the spread is a few ulps (every
  // seed nearly equal): expit(logit(m)) need not give back m exactly.
  r.lo = std::min(expit(logit - half), r.mean);
  r.hi = std::max(expit(logit + half), r.mean);
  return r;
}

MeanCi mean_ci95(const std::vector<double>& x) {
  MeanCi r;
  if (x.empty()) return r;
  double sum = 0;
  for (double v : x) sum += v;
  r.mean = sum / static_cast<double>(x.size());
  r.lo = r.hi = r.mean;
  if (x.size() < 2) return r;
  double ss = 0;
  for (double v : x) ss += (v - r.mean) * (v - r.mean);
  const size_t df = x.size() - 1;
  const double half = t975(df) * std::sqrt(ss / static_cast<double>(df) / static_cast<double>(x.size()));
  r.lo = r.mean - half;
  r.hi = r.mean + half;
  return r;
}

}  // namespace gcsim::workloads::failures
