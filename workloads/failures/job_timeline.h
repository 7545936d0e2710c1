// One training job over a long horizon (days to weeks), as macro events:
// steps of the DES step time, a checkpoint every N steps, failures from a
// drawn trace. A failure loses the work since the last durable checkpoint,
// then the job pays detection, its recovery policy, restart and the
// checkpoint load; failures during recovery start it over (each counts as an
// interruption). An asynchronous or in-memory checkpoint becomes durable
// some time after its snapshot; until then a failure falls back to the one
// before, and the next checkpoint waits for it.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/engine/time.h"
#include "workloads/failures/failure_process.h"
#include "workloads/failures/recovery_policy.h"

namespace gcsim::workloads::failures {

struct CheckpointTiming {
  sim::Duration blocking;  // training stops for this long per checkpoint
  sim::Duration durable;   // from checkpoint start until it can be recovered from (>= blocking)
  sim::Duration load;      // bringing the state back after a restart
};

struct JobTimelineConfig {
  sim::Duration step;                 // one training step (from the DES)
  int64_t checkpoint_every_steps = 1;
  CheckpointTiming checkpoint;
  RecoveryConfig recovery;
  sim::Duration horizon;
};

struct JobOutcome {
  int64_t interruptions = 0;
  int64_t checkpoints = 0;
  int64_t correlated_link_failures = 0;
  int64_t spare_waits = 0;
  int64_t steps = 0;  // steps of progress kept at the end of the horizon
  PerClass<int64_t> interruptions_by_class;
  double lost_work_s = 0;            // training time thrown away by failures
  double checkpoint_overhead_s = 0;  // training blocked by checkpoints (and waiting for one)
  double recovery_s = 0;             // detection + policy + restart + load, failures during it included
  double useful_s = 0;               // steps x step time
  double effective_fraction = 0;     // useful / horizon
};

JobOutcome simulate_job(const JobTimelineConfig& c, const std::vector<FailureEvent>& failures);

}  // namespace gcsim::workloads::failures
