// Replays a generated training step on a ClusterModel through the
// SymmetricExecutor (as `gcsim run` does), for the training unit tests.
#pragma once

#include <vector>

#include "catch.h"
#include "models/cluster/cluster_model.h"
#include "models/network/alpha_beta.h"
#include "sim/engine/recorder.h"
#include "sim/engine/replayer.h"
#include "sim/engine/simulator.h"
#include "workloads/training/symmetric_executor.h"
#include "workloads/training/training_generator.h"

namespace gcsim::test {

// A Llama-like model (hidden 2048, 16 heads, 4 KV heads, SwiGLU 5632, 2048
// tokens, vocab 32000) with `layers` layers: the training tests' small model.
inline workloads::models::ModelSpec small_llama(int layers) {
  workloads::models::ModelSpec m;
  m.name = "test";
  m.layers = layers;
  m.hidden = 2048;
  m.heads = 16;
  m.kv_heads = 4;
  m.head_dim = 128;
  m.ffn_hidden = 5632;
  m.vocab = 32000;
  m.seq_len = 2048;
  m.attention = workloads::models::AttentionKind::gqa;
  m.mlp = workloads::models::MlpKind::swiglu;
  m.norm = workloads::models::NormKind::rms_norm;
  m.position = workloads::models::PositionKind::rotary;
  return m;
}

struct TrainingStep {
  workloads::training::TrainingWorkload w;
  std::vector<sim::OpRecord> records;
  sim::Time end;
};

// One node of 8 GPUs on an alpha-beta fabric: NVLink 450 GB/s and 0.6 us,
// 50 GB/s and 2 us between nodes (the EP tests' fabric).
inline models::network::AlphaBetaFabric ep_node_fabric() {
  models::network::AlphaBetaFabric f;
  f.gpus_per_node = 8;
  f.scale_up_bandwidth = sim::Bandwidth::gb_per_s(450);
  f.scale_up_latency = sim::ns(int64_t{600});
  f.scale_out_bandwidth = sim::Bandwidth::gb_per_s(50);
  f.scale_out_latency = sim::us(int64_t{2});
  return f;
}

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
