#include "workloads/training/symmetric_executor.h"

#include <algorithm>

namespace gcsim::workloads::training {

SymmetricExecutor::SymmetricExecutor(sim::OpExecutor& inner, const TrainingWorkload& workload,
                                     const WorkloadGraph* graph, sim::Simulator* sim)
    : inner_(inner), w_(workload), graph_(graph), sim_(sim) {}

void SymmetricExecutor::run_compute(int rank, const Op& op, sim::OpDone done) {
  if (sim_ != nullptr && graph_ != nullptr) {
    const uint32_t program = graph_->program_id(rank);
    const std::vector<int64_t>* issue =
        program < w_.host_issue_ps.size() ? &w_.host_issue_ps[program] : nullptr;
    const auto& ops = graph_->program(rank).ops;
    // The replayer hands ops out of the program itself: the index follows.
    const auto index = static_cast<size_t>(&op - ops.data());
    if (issue != nullptr && index < issue->size() &&
        sim::Time::from_ps((*issue)[index]) > sim_->now()) {
      sim_->call_at(sim::Time::from_ps((*issue)[index]),
                    [this, rank, &op, done = std::move(done)]() mutable {
                      inner_.run_compute(rank, op, std::move(done));
                    });
      return;
    }
  }
  inner_.run_compute(rank, op, std::move(done));
}

void SymmetricExecutor::run_communication(const Op& op, const std::vector<int>& ranks,
                                          sim::OpDone done) {
  if (const auto* c = std::get_if<CollectiveOp>(&op.payload)) {
    if (const std::vector<int>* group = w_.widened_group(ranks.front(), c->comm)) {
      inner_.run_communication(op, *group, std::move(done));
      return;
    }
  } else if (const auto* p = std::get_if<P2pOp>(&op.payload);
             p != nullptr && ranks.size() == 2 && ranks.front() == ranks.back()) {
    if (const int* peer = w_.widened_peer(ranks.front(), p->peer)) {
      // Every rank of the ring passes a block to its next at once; this
      // rank waits for the one from its previous rank, so that hop stands
      // for all (ranks sorted, as the cluster model takes a pair).
      std::vector<int> hop{ranks.front(), *peer};
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
