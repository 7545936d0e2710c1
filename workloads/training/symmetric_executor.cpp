#include "workloads/training/symmetric_executor.h"

#include <algorithm>

namespace gcsim::workloads::training {

SymmetricExecutor::SymmetricExecutor(sim::OpExecutor& inner, const TrainingWorkload& workload)
    : inner_(inner), w_(workload) {}

void SymmetricExecutor::run_compute(int rank, const Op& op, sim::OpDone done) {
  inner_.run_compute(rank, op, std::move(done));
}

void SymmetricExecutor::run_communication(const Op& op, const std::vector<int>& ranks,
                                          sim::OpDone done) {
  if (const auto* c = std::get_if<CollectiveOp>(&op.payload)) {
    auto it = w_.widened_groups.find(static_cast<uint64_t>(ranks.front()) << 16 | c->comm);
    if (it != w_.widened_groups.end()) {
      inner_.run_communication(op, it->second, std::move(done));
      return;
    }
  } else if (const auto* p = std::get_if<P2pOp>(&op.payload);
             p != nullptr && ranks.size() == 2 && ranks.front() == ranks.back()) {
    auto it = w_.widened_peers.find(static_cast<uint64_t>(ranks.front()) << 16 | p->peer);
    if (it != w_.widened_peers.end()) {
      // Every rank of the ring passes a block to its next at once; this
      // rank waits for the one from its previous rank, so that hop stands
      // for all (ranks sorted, as the cluster model takes a pair).
      std::vector<int> hop{ranks.front(), it->second};
      std::sort(hop.begin(), hop.end());
      inner_.run_communication(op, hop, std::move(done));
      return;
    }
  }
  inner_.run_communication(op, ranks, std::move(done));
}

sim::OpExecutor::MemoryResult SymmetricExecutor::apply_memory(int rank, sim::Bytes delta) {
  return inner_.apply_memory(rank, delta);
}

}  // namespace gcsim::workloads::training
