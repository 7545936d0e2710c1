// What a failures study reduces to on a whiteboard: the job's MTBF from
// per-component rates (1 / sum of rates x counts), the checkpoint cost, and
// Young's and Daly's optimal checkpoint intervals with Daly's useful
// fraction (workloads/failures/checkpoint_interval.h).
#pragma once

#include <vector>

#include "workloads/estimate/estimate_line.h"

namespace gcsim::workloads::estimate {

struct ReliabilityEstimate {
  Line failures_per_hour;  // whole job
  Line mtbf;               // seconds
  Line checkpoint_cost;    // seconds the job stops per checkpoint
  Line young;              // sqrt(2 delta M)
  Line daly;
  Line useful_fraction;    // at Daly's interval, with `recovery` per failure
  std::vector<Line> lines() const;
};

// `failures_per_hour`: summed over all components of the job;
// `checkpoint_s`: blocking cost delta; `recovery_s`: restart and reload.
ReliabilityEstimate estimate_reliability(double failures_per_hour, double checkpoint_s, double recovery_s);

}  // namespace gcsim::workloads::estimate
