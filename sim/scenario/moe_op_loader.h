// The graph workload's `moe` op: one expert-parallel MoE layer on a group
// of ranks, read from its YAML keys into a routing (workloads/moe/
// moe_routing.h) and the per-rank ops of workloads/moe/moe_layer.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/config/config_reader.h"
#include "models/gpu/gpu_spec.h"
#include "sim/engine/ir.h"
#include "workloads/moe/moe_layer.h"

namespace gcsim::cli {

struct MoeOpRead {
  std::vector<int> ranks;                      // the EP group, sorted
  std::vector<std::vector<workloads::Op>> ops;  // per EP rank, deps local to the list
  workloads::moe::MoeLayerInfo info;
};

// Reads the op's keys (its `name` and `op` already read) and builds its
// ops; fails at the key at fault. `gpus_per_node` places ranks on nodes
// (node-limited routing), `seed` is the run's seed (placement, sampling);
// the host's launch delays go on `host_stream`; `gpu` sets the eager
// kernels' efficiencies (EagerKernelEfficiency::on_gpu); `host` is the
// machine's host (cluster.host), which the op's `host: none` turns off.
MoeOpRead read_moe_op(sim::config::ConfigReader& r, const std::string& name, int num_ranks,
                      int gpus_per_node, uint64_t seed, workloads::WorkloadGraph& g,
                      uint16_t compute_stream, uint16_t comm_stream, uint16_t host_stream,
                      const models::gpu::GpuSpec& gpu,
                      const workloads::moe::EagerHostCost& host);

}  // namespace gcsim::cli
