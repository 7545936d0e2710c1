// The `graph` workload: ops written by hand in YAML, turned into the IR.
// Each op names its rank (or src/dst, or ranks for a collective), its kind
// and shape, and the ops it runs `after`. Dependencies bind to the instance
// on the same rank; ranks synchronise only through p2p and collectives, so
// a compute op cannot wait on an op of another rank.
#pragma once

#include <memory>
#include <vector>

#include "models/gpu/gpu_spec.h"
#include "sim/scenario/resource_budget.h"
#include "sim/config/config_reader.h"
#include "sim/engine/ir.h"
#include "workloads/moe/moe_layer.h"

namespace gcsim::cli {

// Every compute op is also costed once on `gpu`, so that a shape the GPU
// cannot run (fp8 on an A100) is refused at load time with its line. A
// graph whose ops would exceed `limits` is refused before any op is read.
// `moe` ops need the node size (`gpus_per_node`, node-limited routing) and
// the run's `seed` and the machine's host (cluster.host), and report each
// layer they build into `moe_layers`. A moe op `after` another moe op on
// the same ranks continues that op's host timeline (one Python thread: its
// first launch follows the other's last), while its GPU work follows the
// other's; its layer time is counted from the other's end on the GPU.
std::unique_ptr<workloads::WorkloadGraph> load_graph_workload(
    sim::config::ConfigReader& workload, int num_ranks, const models::gpu::GpuSpec& gpu,
    const ResourceLimits& limits, int gpus_per_node = 0, uint64_t seed = 1,
    std::vector<workloads::moe::MoeLayerInfo>* moe_layers = nullptr,
    const workloads::moe::EagerHostCost& host = workloads::moe::eager_host_cost());

}  // namespace gcsim::cli
