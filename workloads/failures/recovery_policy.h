// What a job does after a failure is detected, and what that costs:
//   restart   same nodes: the fault is cleared by the restart itself (GPU
//             reset, host reboot, process relaunch);
//   replace   swap the failed node for a spare; a hardware failure (gpu, hbm,
//             nic, node) takes a spare from a finite pool and the failed node
//             returns to it after `repair`; with the pool empty the job waits
//             for the first repair to finish;
//   resubmit  the scheduler requeues the whole job: a queue wait, then a
//             fresh start on healthy nodes.
// Every policy then pays `restart` (relaunch, NCCL init) and the checkpoint
// load, which the caller adds.
#pragma once

#include <string>
#include <vector>

#include "sim/engine/time.h"
#include "workloads/failures/component_failures.h"

namespace gcsim::workloads::failures {

enum class RecoveryPolicy { restart, replace, resubmit };
bool parse_recovery_policy(const std::string& name, RecoveryPolicy& policy);
const char* recovery_policy_name(RecoveryPolicy p);

struct RecoveryConfig {
  RecoveryPolicy policy = RecoveryPolicy::restart;
  sim::Duration detection = sim::seconds(int64_t{120});   // failure until the job knows
  sim::Duration restart = sim::seconds(int64_t{600});     // relaunch and re-initialise
  sim::Duration queue_wait = sim::seconds(int64_t{1800}); // resubmit only
  sim::Duration repair = sim::seconds(int64_t{72 * 3600});// replace: node back in the pool
  int spares = 16;                                        // replace: spare nodes
};

// a + b for non-negative spans, stopping at Duration::max(): the failure
// timeline only looks up to its horizon (at most 106 days), so a sum of
// long configured spans (detection + restart + repair ...) that passes the
// int64 picosecond range means "after the end", not an error.
sim::Duration saturating_sum(sim::Duration a, sim::Duration b);
// t + d, stopping at Time::max() likewise.
sim::Time saturating_at(sim::Time t, sim::Duration d);

// Hardware faults tie a node up; software, link and switch faults do not
// (the fabric routes around a dead link or switch).
bool needs_spare(ComponentClass c);

// The spare pool of the `replace` policy, over one run.
class SparePool {
 public:
  explicit SparePool(int spares) : free_(spares) {}
  // Takes a spare at `now`; returns how long the job waits for one.
  sim::Duration take(sim::Time now, sim::Duration repair);
  int64_t waits() const { return waits_; }

 private:
  int free_;
  std::vector<sim::Time> returning_;  // repaired nodes coming back, any order
  int64_t waits_ = 0;
};

}  // namespace gcsim::workloads::failures
