// Times the collectives of mirrored ranks over the whole group they stand
// for. A training step with mirrored TP/CP/DP ranks (training_generator.h)
// simulates one rank per symmetric set; its collectives rendezvous among
// the simulated members only, and this executor hands the inner one (the
// cluster model) every rank of the real group, so that their time, SM
// holds and links are those of the full group. A self-addressed p2p (a
// mirrored CP ring) is timed as the hop from the real previous rank. Where
// the inner executor loads siblings (flow and packet models on a fabric
// with oversubscribed links), every communication also names the
// instances it stands for (mirror_siblings.h), so that their traffic loads
// the links it shares with them.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "sim/engine/replayer.h"
#include "workloads/training/training_generator.h"

namespace gcsim::workloads::training {

class SymmetricExecutor : public sim::OpExecutor {
 public:
  // `workload` and `graph` (the workload's, wherever it lives now) must
  // outlive the executor; `sim` schedules the held-back launches (null: no
  // host model).
  SymmetricExecutor(sim::OpExecutor& inner, const TrainingWorkload& workload,
                    const WorkloadGraph* graph = nullptr, sim::Simulator* sim = nullptr);

  void run_compute(int rank, const Op& op, sim::OpDone done) override;
  void run_communication(const Op& op, const std::vector<int>& ranks, sim::OpDone done) override;
  // Passed on: a simulated rank's NCCL kernel holds SMs from its own issue.
  void communication_issued(int rank, const Op& op, int peer) override;
  void communication_met(int rank, const Op& op) override { inner_.communication_met(rank, op); }
  MemoryResult apply_memory(int rank, sim::Bytes delta) override;

 private:
  sim::OpExecutor& inner_;
  const TrainingWorkload& w_;
  const WorkloadGraph* graph_;
  sim::Simulator* sim_;
  // Sibling instances by slot_key (| kP2pKey for a p2p's peer slot), found
  // on first use: only when the inner executor loads them.
  static constexpr uint64_t kP2pKey = uint64_t{1} << 62;
  std::unordered_map<uint64_t, sim::SiblingGroups> siblings_;
  const sim::SiblingGroups& siblings_of(uint64_t key, const std::vector<int>& ranks,
                                                   const Op& op);
};

}  // namespace gcsim::workloads::training
