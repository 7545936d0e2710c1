#include "workloads/training/symmetric_executor.h"

#include <algorithm>

#include "workloads/training/mirror_siblings.h"

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
  // The ranks the op really runs among, and the key of its siblings.
  const std::vector<int>* real = &ranks;
  std::vector<int> hop;
  uint64_t key = 0;
  bool keyed = false;
  if (const auto* c = std::get_if<CollectiveOp>(&op.payload)) {
    if (const std::vector<int>* group = w_.widened_group(ranks.front(), c->comm)) real = group;
    key = TrainingWorkload::slot_key(ranks.front(), c->comm);
    keyed = true;
  } else if (const auto* p = std::get_if<P2pOp>(&op.payload)) {
    if (const int* peer = w_.widened_peer(ranks.front(), p->peer);
        peer != nullptr && ranks.size() == 2 && ranks.front() == ranks.back()) {
      // Every rank of the ring passes a block to its next at once; this
      // rank waits for the one from its previous rank, so that hop stands
      // for all (ranks sorted, as the cluster model takes a pair).
      hop = {ranks.front(), *peer};
      std::sort(hop.begin(), hop.end());
      real = &hop;
    }
    // The op is the lower rank's half: its peer slot names the pair.
    key = TrainingWorkload::slot_key(ranks.front(), p->peer) | kP2pKey;
    keyed = true;
  }
  if (w_.mirrored && w_.grid && keyed && inner_.loads_siblings()) {
    inner_.run_communication_beside(op, *real, siblings_of(key, *real, op), std::move(done));
    return;
  }
  inner_.run_communication(op, *real, std::move(done));
}

void SymmetricExecutor::communication_issued(int rank, const Op& op, int peer) {
  // A self-addressed p2p (a mirrored CP ring) runs as the hop from the
  // real previous rank (run_communication).
  if (const auto* p = std::get_if<P2pOp>(&op.payload); p != nullptr && peer == rank) {
    if (const int* real = w_.widened_peer(rank, p->peer)) peer = *real;
  }
  inner_.communication_issued(rank, op, peer);
}

const sim::SiblingGroups& SymmetricExecutor::siblings_of(uint64_t key,
                                                        const std::vector<int>& ranks,
                                                        const Op& op) {
  auto [it, fresh] = siblings_.try_emplace(key);
  if (fresh) {
    const bool collective = op.kind == workloads::OpKind::collective;
    it->second = mirror_siblings(*w_.grid, w_.mirrored_axis, ranks, !collective);
    if (collective) {
      // As the replayer hands a group over: in rank order.
      for (auto& s : it->second.groups) std::sort(s.begin(), s.end());
    }
  }
  return it->second;
}

sim::OpExecutor::MemoryResult SymmetricExecutor::apply_memory(int rank, sim::Bytes delta) {
  return inner_.apply_memory(rank, delta);
}

}  // namespace gcsim::workloads::training
