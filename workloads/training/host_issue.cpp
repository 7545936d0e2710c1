#include "workloads/training/host_issue.h"

#include <stdexcept>

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

namespace gcsim::workloads::training {

std::vector<Op> with_host_timeline(const std::vector<Op>& ops, uint16_t host_stream,
                                   const HostLaunchCost& cost, const std::vector<HostSync>& syncs,
                                   uint32_t launch_name, uint32_t sync_name) {
  std::vector<HostCallCost> launch;
  launch.reserve(ops.size());
  for (const Op& op : ops) {
    launch.push_back({is_communication(op.kind) ? cost.collective : cost.kernel, launch_name});
  }
  return with_host_calls(ops, host_stream, launch, syncs, sync_name);
}

std::vector<Op> with_host_calls(const std::vector<Op>& ops, uint16_t host_stream,
                                const std::vector<HostCallCost>& launch,
                                const std::vector<HostSync>& syncs, uint32_t sync_name) {
  if (launch.size() != ops.size()) throw std::logic_error("with_host_calls: one launch cost per op");
  std::vector<Op> out;
  out.reserve(ops.size() * 2 + syncs.size());
  std::vector<uint32_t> moved(ops.size(), 0);  // old index -> new
  int64_t previous = -1;  // the host's last delay: one thread, each after the one before
  const auto host_op = [&](uint32_t name, sim::Duration d) {
    Op h;
    h.kind = OpKind::delay;
    h.stream = host_stream;
    h.name = name;
    h.payload = DelayOp{d};
    if (previous >= 0) h.deps.push_back(static_cast<uint32_t>(previous));
    out.push_back(std::move(h));
    previous = static_cast<int64_t>(out.size() - 1);
    return static_cast<uint32_t>(previous);
  };
  for (size_t i = 0; i < ops.size(); ++i) {
    Op op = ops[i];
    for (uint32_t& d : op.deps) {
      if (d >= i) throw std::logic_error("with_host_calls: a dependency on a later op");
      d = moved[d];
    }
    if (host_launches(op)) {
      op.deps.push_back(host_op(launch[i].name, launch[i].cost));
    }
    out.push_back(std::move(op));
    moved[i] = static_cast<uint32_t>(out.size() - 1);
    for (const HostSync& s : syncs) {
      if (s.after == i) out[host_op(sync_name, s.cost)].deps.push_back(moved[i]);
    }
  }
  return out;
}

}  // namespace gcsim::workloads::training
