// Where a simulated training step's time went on each GPU: compute
// (kernels, their launch latency included), the optimizer step, exposed
// communication per parallel dimension, and the pipeline bubble. Every
// picosecond of the step is charged once, so the parts sum to the step time.
//
// The compute stream's idle gaps are charged to what the kernel after each
// gap waited for: a collective's span (and, behind it, whatever held that
// collective up on its stream) to its dimension; a pipeline receive's
// transfer (from the moment both sides are there) to PP and the wait for
// the upstream stage before it to the bubble; the tail after a rank's last
// kernel to its own communication still running, else the bubble.
#pragma once

#include <array>
#include <vector>

#include "sim/engine/recorder.h"
#include "sim/engine/time.h"
#include "workloads/training/training_generator.h"

namespace gcsim::workloads::training {

struct StepBreakdown {
  double step_s = 0;
  // Indexed by OpCategory: compute, optimizer, tp, cp, ep, pp, dp; memory
  // holds the bubble.
  std::array<double, kCategories> seconds{};
  double bubble_s() const { return seconds[static_cast<size_t>(OpCategory::memory)]; }
  double& bubble() { return seconds[static_cast<size_t>(OpCategory::memory)]; }
  double of(OpCategory c) const { return seconds[static_cast<size_t>(c)]; }
};

// Per observed rank and their mean. `launch_latency`: counted as part of
// the kernel it precedes.
struct BreakdownResult {
  std::vector<int> ranks;
  std::vector<StepBreakdown> per_rank;
  StepBreakdown mean;
};

// `graph` is the workload's (the scenario may own it by then).
BreakdownResult step_breakdown(const WorkloadGraph& graph, const TrainingWorkload& w,
                               const std::vector<sim::OpRecord>& records,
                               const std::vector<int>& ranks, sim::Time step_end,
                               sim::Duration launch_latency);

}  // namespace gcsim::workloads::training
