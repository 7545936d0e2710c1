#include "workloads/estimate/reliability_estimate.h"

#include <cmath>

#include "workloads/failures/checkpoint_interval.h"

namespace gcsim::workloads::estimate {

std::vector<Line> ReliabilityEstimate::lines() const {
  return {failures_per_hour, mtbf, checkpoint_cost, young, daly, useful_fraction};
}

ReliabilityEstimate estimate_reliability(double per_hour, double delta, double recovery) {
  namespace wf = workloads::failures;
  ReliabilityEstimate e;
  e.failures_per_hour = make_line("job failures per hour", per_hour, Unit::count,
                                  "sum over components of count x rate");
  const double m = per_hour > 0 ? 3600.0 / per_hour : 0.0;
  e.mtbf = make_line("job MTBF M", m, Unit::seconds, "3600 s / " + num(per_hour));
  e.checkpoint_cost = make_line("checkpoint cost delta", delta, Unit::seconds, "time the job stops per checkpoint");
  if (m <= 0) return e;
  e.young = make_line("Young interval", wf::young_interval(delta, m), Unit::seconds,
                      "sqrt(2 delta M) = sqrt(2 x " + num(delta) + " x " + num(m) + ")");
  const double tau = wf::daly_interval(delta, m);
  e.daly = make_line("Daly interval", tau, Unit::seconds,
                     "sqrt(2 delta M)(1 + sqrt(delta/2M)/3 + (delta/2M)/9) - delta");
  e.useful_fraction = make_line("useful fraction at Daly's interval", wf::daly_useful_fraction(tau, delta, recovery, m),
                                Unit::fraction,
                                "tau / (M e^(R/M) (e^((tau + delta)/M) - 1)), R " + num(recovery) + " s");
  return e;
}

}  // namespace gcsim::workloads::estimate
