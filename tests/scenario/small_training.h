// The small training config the sweep, plan, MPI and report.html scenario
// tests share: Llama 3 8B cut to 4 layers of 2048 tokens on two 8-GPU H100
// nodes (TP 8, PP 2, 1F1B, full recompute, ZeRO-1), global batch 32. Runs in
// well under a second on either network model.
#pragma once

#include <string>

namespace gcsim::test {

inline std::string small_training_config(const std::string& network_model) {
  return R"(
cluster:
  gpu: h100-sxm
  nodes: 2
  gpus_per_node: 8
  scale_out: {topology: fat-tree, nic_bandwidth: 400Gbps}
network: {model: )" + network_model + R"(}
workload:
  kind: training
  model: {preset: llama3-8b, layers: 4, seq_len: 2048}
  batch: {global: 32, micro: 1}
  parallelism: {tp: 8, pp: 2, schedule: 1f1b}
  recompute: full
  optimizer: {zero_stage: 1}
)";
}

}  // namespace gcsim::test
