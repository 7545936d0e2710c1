#include "workloads/training/step_traffic.h"

#include <variant>

namespace gcsim::workloads::training {

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
      const std::vector<int>* group = w.widened_group(members.front(), c->comm);
      const int n = static_cast<int>(group != nullptr ? group->size() : members.size());
      // NCCL's ring: each rank sends the bus-bandwidth share of the buffer.
      bytes = n <= 1 ? 0.0
                     : models::collectives::bus_bandwidth_factor(collective_op(c->kind), n) *
                           c->bytes.as_double();
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
