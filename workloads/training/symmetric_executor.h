// Times the collectives of mirrored ranks over the whole group they stand
// for. A training step with mirrored TP/CP/DP ranks (training_generator.h)
// simulates one rank per symmetric set; its collectives rendezvous among
// the simulated members only, and this executor hands the inner one (the
// cluster model) every rank of the real group, so that their time, SM
// holds and links are those of the full group. A self-addressed p2p (a
// mirrored CP ring) is timed as the hop from the real previous rank.
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
  MemoryResult apply_memory(int rank, sim::Bytes delta) override;

 private:
  sim::OpExecutor& inner_;
  const TrainingWorkload& w_;
  const WorkloadGraph* graph_;
  sim::Simulator* sim_;
};

}  // namespace gcsim::workloads::training
