// The failures a cluster suffers over a horizon, one seeded draw: every
// component carries its own next-failure time (a heap over all components),
// a failed component is renewed (repaired or swapped) at the moment it fails
// and draws a fresh lifetime, the others keep ageing. With exponential
// lifetimes this is a Poisson process of rate sum(count x rate); with
// Weibull lifetimes ageing matters and the per-component clocks make it
// exact. Correlated failures: a switch failure takes its rail's links down
// with it (they are renewed with the switch and counted, but interrupt the
// job once). The trace depends only on the seed and the rates, never on what
// the job does, so checkpoint intervals can be compared on common random
// numbers.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/engine/time.h"
#include "workloads/failures/component_failures.h"

namespace gcsim::workloads::failures {

struct FailureEvent {
  sim::Time when;
  ComponentClass component = ComponentClass::gpu;
  int64_t index = 0;           // which component of its class
  int correlated_links = 0;    // links taken down with a failed switch
};

// Failures in [0, horizon), in time order.
std::vector<FailureEvent> draw_failures(const FailureRates& rates, const ComponentCounts& counts,
                                        sim::Duration horizon, uint64_t seed);

// Mean lifetime (hours) to a Weibull scale: eta = mean / Gamma(1 + 1/k).
double weibull_scale_for_mean(double mean, double shape);

}  // namespace gcsim::workloads::failures
