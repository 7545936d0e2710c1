#include "workloads/failures/recovery_policy.h"

#include <algorithm>

namespace gcsim::workloads::failures {

bool parse_recovery_policy(const std::string& name, RecoveryPolicy& policy) {
  if (name == "restart") {
    policy = RecoveryPolicy::restart;
  } else if (name == "replace") {
    policy = RecoveryPolicy::replace;
  } else if (name == "resubmit") {
    policy = RecoveryPolicy::resubmit;
  } else {
    return false;
  }
  return true;
}

const char* recovery_policy_name(RecoveryPolicy p) {
  switch (p) {
    case RecoveryPolicy::restart: return "restart";
    case RecoveryPolicy::replace: return "replace";
    case RecoveryPolicy::resubmit: return "resubmit";
  }
  return "?";
}

sim::Duration saturating_sum(sim::Duration a, sim::Duration b) {
  return b > sim::Duration::max() - a ? sim::Duration::max() : a + b;
}

sim::Time saturating_at(sim::Time t, sim::Duration d) {
  return d > sim::Time::max() - t ? sim::Time::max() : t + d;
}

bool needs_spare(ComponentClass c) {
  return c == ComponentClass::gpu || c == ComponentClass::hbm || c == ComponentClass::nic ||
         c == ComponentClass::node;
}

sim::Duration SparePool::take(sim::Time now, sim::Duration repair) {
  // Repaired nodes that are back by now rejoin the pool.
  auto back = std::partition(returning_.begin(), returning_.end(),
                             [now](sim::Time t) { return t > now; });
  free_ += static_cast<int>(returning_.end() - back);
  returning_.erase(back, returning_.end());

  // The failed node goes to repair now; the job takes a free spare, or
  // else waits for the first node back from repair (perhaps its own).
  returning_.push_back(saturating_at(now, repair));
  if (free_ > 0) {
    --free_;
    return sim::Duration::zero();
  }
  auto first = std::min_element(returning_.begin(), returning_.end());
  const sim::Duration wait = *first - now;
  returning_.erase(first);
  ++waits_;
  return wait;
}

}  // namespace gcsim::workloads::failures
