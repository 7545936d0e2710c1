// Closed forms for checkpointing under exponential failures (Young 1974,
// Daly 2006; ../shared/REFERENCE.md "Reliability"), the yardstick the
// simulated optimum is tested against. delta: one checkpoint's cost (s),
// M: the job's mean time between failures (s), R: the time to recover (s).
#pragma once

#include <vector>

namespace gcsim::workloads::failures {

// Young: tau = sqrt(2 delta M).
double young_interval(double delta, double mtbf);
// Daly's higher-order estimate: sqrt(2 delta M) [1 + 1/3 sqrt(delta / 2M)
// + (delta / 2M) / 9] - delta for delta < 2M, else M.
double daly_interval(double delta, double mtbf);
// Daly's expected wall time to finish one segment of `tau` work plus a
// checkpoint when failures (also during recovery) are Poisson with mean M:
// M e^(R/M) (e^((tau + delta)/M) - 1); the useful fraction is tau over it.
double daly_useful_fraction(double tau, double delta, double recovery, double mtbf);

// Mean and 95% confidence interval (Student t) of a sample.
struct MeanCi {
  double mean = 0, lo = 0, hi = 0;
};
MeanCi mean_ci95(const std::vector<double>& x);

// Mean and 95% confidence interval of a sample of fractions (each in
// [0, 1]), kept inside (0, 1): the Student-t interval is built on the logit
// of the mean, with the delta method's standard error se / (m (1 - m)),
// and mapped back: expit(logit(m) ± t se / (m (1 - m))). A plain t
// interval of two seeds, 0.91 ± 12.7 se, can read [0.15, 1.67]; this one
// cannot leave the domain. A mean of exactly 0 or 1 (or no spread) gives
// the point interval.
MeanCi fraction_ci95(const std::vector<double>& x);

}  // namespace gcsim::workloads::failures
