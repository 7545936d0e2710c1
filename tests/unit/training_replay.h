// Replays a generated training step on a ClusterModel through the
// SymmetricExecutor (as `gcsim run` does), for the training unit tests.
#pragma once

#include <vector>

#include "catch.h"
#include "models/cluster/cluster_model.h"
#include "sim/engine/recorder.h"
#include "sim/engine/replayer.h"
#include "sim/engine/simulator.h"
#include "workloads/training/symmetric_executor.h"
#include "workloads/training/training_generator.h"

namespace gcsim::test {

struct TrainingStep {
  workloads::training::TrainingWorkload w;
  std::vector<sim::OpRecord> records;
  sim::Time end;
};

// Runs `step.w` to its end on a cluster built from `cfg`; fills the records
// and the makespan. Requires the replay to complete.
inline void replay_training(TrainingStep& step, const models::cluster::ClusterModelConfig& cfg) {
  sim::Simulator simulator(1);
  models::cluster::ClusterModel cluster(simulator, cfg);
  workloads::training::SymmetricExecutor executor(cluster, step.w);
  sim::Recorder recorder(*step.w.graph, "", "test");
  sim::Replayer replayer(simulator, *step.w.graph, executor, recorder);
  replayer.start();
  simulator.run();
  const auto outcome = replayer.outcome();
  INFO(outcome.stuck);
  REQUIRE(outcome.complete);
  step.records = recorder.sorted_records();
  step.end = outcome.makespan;
}

}  // namespace gcsim::test
