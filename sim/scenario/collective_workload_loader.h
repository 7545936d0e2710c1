// The `collective` workload: one NCCL collective over a group of ranks at
// one or more message sizes, as nccl-tests runs it, turned into the IR (one
// collective op per size on every member, in size order; send/recv as a
// ring shift of p2p pairs posted together, as a grouped ncclSend/ncclRecv).
//
//   workload:
//     kind: collective
//     op: all_reduce          # all_reduce | all_gather | reduce_scatter | all_to_all
//                             # | broadcast | reduce | send_recv
//     bytes: [1MiB, 1GiB]     # a size or a list (all_gather: the output, as nccl-tests)
//     ranks: all              # or a list
//     algorithm: auto         # auto | ring | tree | direct | pairwise | hierarchical | nvls
//     protocol: auto          # auto | LL | LL128 | Simple
//     dtype: bf16
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "models/collectives/collective.h"
#include "models/gpu/dtype.h"
#include "models/gpu/gpu_spec.h"
#include "sim/config/config_reader.h"
#include "sim/engine/ir.h"

namespace gcsim::cli {

struct CollectiveWorkload {
  models::collectives::CollectiveOp op = models::collectives::CollectiveOp::all_reduce;
  std::vector<sim::Bytes> sizes;
  std::vector<int> ranks;  // as listed (send_recv: rank i sends to rank i+1)
  int root = 0;            // broadcast / reduce: a global rank of the group
  std::optional<models::collectives::Algorithm> algorithm;  // nullopt: the tuner's
  std::optional<models::collectives::Protocol> protocol;
  models::gpu::Dtype dtype = models::gpu::Dtype::bf16;
  bool nvls = false;  // NVLink SHARP allowed (the preset has it and the config did not refuse)
  std::vector<uint32_t> op_names;  // the IR name id of each size's op, in size order
};

// Reads the workload's keys (every bad value fails naming its key) and
// builds the IR for a cluster of `num_ranks` GPUs, `gpus_per_node` per host.
std::unique_ptr<workloads::WorkloadGraph> load_collective_workload(
    sim::config::ConfigReader& workload, int num_ranks, int gpus_per_node,
    const models::gpu::GpuSpec& gpu, CollectiveWorkload& out);

// Writes the sizes and ranks (read raw, so not recorded by the reader) into
// the resolved config's `workload` object.
void add_resolved(const CollectiveWorkload& c, sim::config::Json& workload);

}  // namespace gcsim::cli
