#include "sim/engine/graph_op_source.h"

namespace gcsim::sim {

GraphOpSource::GraphOpSource(const workloads::WorkloadGraph& graph)
    : graph_(graph), next_(static_cast<size_t>(graph.num_ranks()), 0) {}

bool GraphOpSource::next(int rank, SourcedOp& out) {
  const auto& ops = graph_.program(rank).ops;
  uint32_t& i = next_[static_cast<size_t>(rank)];
  if (i >= ops.size()) return false;
  const workloads::Op& op = ops[i];
  out.id = i;
  out.name = graph_.name(op.name);
  out.op = op;
  out.deps.assign(op.deps.begin(), op.deps.end());
  out.kernel = op.kind == workloads::OpKind::compute ? &op : nullptr;
  if (const auto* c = std::get_if<workloads::CollectiveOp>(&op.payload)) {
    out.communicator = graph_.communicator_of(rank, *c);
  } else if (const auto* p = std::get_if<workloads::P2pOp>(&op.payload)) {
    out.peer = graph_.peer_of(rank, *p);
    // The IR matches messages by order per pair: one tag for all.
    out.tag = 0;
  }
  ++i;
  return true;
}

}  // namespace gcsim::sim
