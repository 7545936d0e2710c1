#include "workloads/inference/router.h"

namespace gcsim::workloads::inference {

const char* router_name(RouterKind k) {
  switch (k) {
    case RouterKind::round_robin: return "round_robin";
    case RouterKind::least_outstanding: return "least_outstanding";
    case RouterKind::prefix_affinity: return "prefix_affinity";
  }
  return "?";
}

const char* spec_method_name(SpecMethod m) {
  switch (m) {
    case SpecMethod::none: return "none";
    case SpecMethod::draft_model: return "draft_model";
    case SpecMethod::mtp: return "mtp";
    case SpecMethod::ngram: return "ngram";
  }
  return "?";
}

Router::Router(RouterKind kind, int replicas) : kind_(kind), replicas_(replicas) {}

int Router::least(const std::vector<int64_t>& outstanding) const {
  int best = 0;
  for (int i = 1; i < replicas_; ++i) {
    if (outstanding[static_cast<size_t>(i)] < outstanding[static_cast<size_t>(best)]) best = i;
  }
  return best;
}

int Router::pick(const Request& r, const std::vector<int64_t>& outstanding) {
  switch (kind_) {
    case RouterKind::round_robin: {
      const int i = next_;
      next_ = (next_ + 1) % replicas_;
      return i;
    }
    case RouterKind::least_outstanding: return least(outstanding);
    case RouterKind::prefix_affinity: {
      if (r.prefix_id < 0) return least(outstanding);
      auto it = prefix_home_.find(r.prefix_id);
      if (it != prefix_home_.end()) return it->second;
      const int home = least(outstanding);
      prefix_home_.emplace(r.prefix_id, home);
      return home;
    }
  }
  return 0;
}

}  // namespace gcsim::workloads::inference
