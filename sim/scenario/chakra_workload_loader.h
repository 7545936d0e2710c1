// The `chakra` workload: a Chakra execution trace, one file per rank, as
// ASTRA-sim reads it, replayed on gcsim's GPU and network models.
//
//   workload:
//     kind: chakra
//     prefix: traces/llama          # traces/llama.0.et .. traces/llama.<n-1>.et
//     comm_groups: {"1": [0, 1, 2, 3]}   # pg_name -> ranks, or a path to
//                                        # ASTRA-sim's comm-group JSON
//     compute: trace                # trace: recorded durations; model: the GPU model
//
// Relative paths are relative to the config file's directory. The cluster
// must have one GPU per rank file. workloads/chakra/node_converter.h says
// how each node type runs; a bad trace stops at load time with exit status
// 2, naming the trace file, the rank, the node id and the problem.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "models/gpu/gpu_spec.h"
#include "sim/scenario/resource_budget.h"
#include "sim/config/config_reader.h"
#include "sim/engine/ir.h"

namespace gcsim::cli {

// Trace files larger than `limits` allow are refused before they are read.
std::unique_ptr<workloads::WorkloadGraph> load_chakra_workload(
    sim::config::ConfigReader& workload, int num_ranks, const models::gpu::GpuSpec& gpu,
    std::vector<std::string>& notes, const ResourceLimits& limits);

}  // namespace gcsim::cli
