// Spreads arriving requests over replicas: round robin; least outstanding
// (fewest requests assigned and not finished, lowest index on ties); or
// prefix affinity (requests sharing a prefix id go where the first of them
// went, so they hit that replica's prefix cache; others least outstanding),
// the policy of prefix-aware routers such as vLLM's production stack.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "workloads/inference/request.h"
#include "workloads/inference/serving_config.h"

namespace gcsim::workloads::inference {

class Router {
 public:
  Router(RouterKind kind, int replicas);
  // Chooses a replica for `r` given each replica's outstanding requests.
  int pick(const Request& r, const std::vector<int64_t>& outstanding);

 private:
  int least(const std::vector<int64_t>& outstanding) const;
  RouterKind kind_;
  int replicas_;
  int next_ = 0;
  std::unordered_map<int64_t, int> prefix_home_;
};

}  // namespace gcsim::workloads::inference
