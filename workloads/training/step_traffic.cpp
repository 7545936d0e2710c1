#include "workloads/training/step_traffic.h"

#include <variant>

namespace gcsim::workloads::training {

namespace {

// Share of the buffer each rank sends in NCCL's ring algorithm.
double ring_factor(CollectiveKind k, double n) {
  if (n <= 1) return 0.0;
  switch (k) {
    case CollectiveKind::all_reduce: return 2.0 * (n - 1) / n;
    case CollectiveKind::all_gather:
    case CollectiveKind::reduce_scatter:
    case CollectiveKind::all_to_all: return (n - 1) / n;
    case CollectiveKind::broadcast:
    case CollectiveKind::reduce: return 1.0;  // pipelined chain: each rank forwards S once
  }
  return 0.0;
}

}  // namespace

StepTraffic bytes_sent(const WorkloadGraph& g, const TrainingWorkload& w, int rank) {
  StepTraffic out;
  const RankProgram& prog = g.program(rank);
  const auto& cats = w.categories.at(g.program_id(rank));
  for (size_t i = 0; i < prog.ops.size(); ++i) {
    const Op& op = prog.ops[i];
    double bytes = 0.0;
    if (const auto* c = std::get_if<CollectiveOp>(&op.payload)) {
      const auto& members = g.communicator(g.communicator_of(rank, *c));
      // A mirrored rank's collective stands for its whole group.
      size_t n = members.size();
      const auto it = w.widened_groups.find(static_cast<uint64_t>(members.front()) << 16 | c->comm);
      if (it != w.widened_groups.end()) n = it->second.size();
      bytes = ring_factor(c->kind, static_cast<double>(n)) * c->bytes.as_double();
      if (c->comm == kSlotEmbedding) {
        out.embedding += bytes;
        continue;
      }
    } else if (op.kind == OpKind::send) {
      bytes = std::get<P2pOp>(op.payload).bytes.as_double();
    }
    out.by_category[static_cast<size_t>(cats.at(i))] += bytes;
  }
  return out;
}

}  // namespace gcsim::workloads::training
