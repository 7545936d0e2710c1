#include "workloads/training/host_issue.h"

namespace gcsim::workloads::training {

bool host_launches(const Op& op) {
  return op.kind == OpKind::compute || is_communication(op.kind);
}

std::vector<int64_t> host_issue_times(const RankProgram& program, sim::Duration per_kernel) {
  std::vector<int64_t> out;
  if (per_kernel <= sim::Duration::zero()) return out;
  out.reserve(program.ops.size());
  sim::Duration host = sim::Duration::zero();
  for (const Op& op : program.ops) {
    if (host_launches(op)) host += per_kernel;
    out.push_back(host.ps());
  }
  return out;
}

}  // namespace gcsim::workloads::training
