// Turns one Chakra node into the op gcsim runs, before its dependencies and
// communication slots are bound (those need the rest of the trace). Shared
// by the whole-trace loader (trace_loader.h) and the streaming source
// (stream_source.h), so both read a node the same way:
//
// - COMP_NODE: a fixed-duration op on the `compute` stream (`cpu` when
//   is_cpu_op) lasting duration_micros, as ASTRA-sim replays it. With
//   `compute: model` the GPU model times it instead: from its gcsim_kernel
//   shape when gcsim wrote the trace (the exact kernel, sharing SMs and HBM
//   with its neighbours), else from num_ops (flops) and tensor_size (HBM
//   bytes) as a tensor-core roofline kernel over all SMs, timed alone
//   (kernel_cost_model's isolated_time; it does not share SMs), else from
//   its recorded duration.
// - COMM_COLL_NODE: a collective of comm_type and comm_size bytes (the
//   IR's nccl-tests convention) on the group named by pg_name: a
//   `comm_groups` entry, or every rank when pg_name is absent, empty or an
//   undeclared "0" (ASTRA-sim's default group). Optional `root` (a global
//   rank) for broadcast and reduce. Stream `comm`.
// - COMM_SEND_NODE / COMM_RECV_NODE: p2p of comm_size bytes between
//   comm_src and comm_dst (the own rank where omitted), matched on
//   (src, dst, comm_tag). Streams `send` and `recv`, so that a rank's sends
//   do not wait behind its receives (NCCL groups them).
// - METADATA_NODE, INVALID_NODE: zero-length, on stream `metadata`; with
//   gcsim_memory_delta, an HBM allocation (> 0) or free (< 0) on `compute`.
// - MEM_LOAD_NODE, MEM_STORE_NODE: their recorded duration on `memory`
//   (gcsim has no model of remote memory); STORAGE, BATCH and CHECKPOINT
//   nodes: their recorded duration on `host`.
// A node's `stream` attribute (a string) overrides the stream.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "models/gpu/gpu_spec.h"
#include "workloads/chakra/et_def.pb.h"
#include "sim/engine/ir.h"

namespace gcsim::workloads::chakra {

enum class ComputeTiming { trace, model };

struct ImportOptions {
  int num_ranks = 0;
  // pg_name -> global ranks (ASTRA-sim's communicator-group file).
  std::map<std::string, std::vector<int>> comm_groups;
  ComputeTiming compute = ComputeTiming::trace;
  gcsim::models::gpu::GpuSpec gpu;  // times kernels under ComputeTiming::model
};

// How many nodes were timed which way (for the run's notes).
struct ImportStats {
  uint64_t nodes = 0;
  uint64_t recorded_duration = 0;  // fixed durations from the trace
  uint64_t kernel_shape = 0;       // gcsim_kernel shapes on the GPU model
  uint64_t roofline = 0;           // num_ops/tensor_size roofline kernels
  uint64_t communication = 0;
  uint64_t other = 0;              // metadata, memory ledger
};

// A node as gcsim will run it.
struct ImportedNode {
  uint64_t id = 0;
  OpKind kind = OpKind::delay;
  std::string stream;
  OpPayload payload;            // CollectiveOp::comm and P2pOp::peer are not bound yet
  std::vector<uint64_t> deps;   // ctrl_deps and data_deps, each id once
  const std::vector<int>* group = nullptr;  // collective: its ranks, ascending
  std::string group_name;       // collective: pg_name as written ("" for every rank)
  int peer = -1;                // send: destination, recv: source
  int64_t tag = 0;              // send/recv: comm_tag
};

class NodeConverter {
 public:
  // Checks the comm_groups (ranks in range, no repeats); throws
  // std::invalid_argument naming the group.
  explicit NodeConverter(ImportOptions options);

  // Converts `node`, read from `file` (rank `rank`); throws TraceError
  // naming the file, the rank and the node.
  void convert(int rank, const std::string& file, const ChakraProtoMsg::Node& node,
               ImportedNode& out);

  const ImportOptions& options() const { return options_; }
  const ImportStats& stats() const { return stats_; }
  // Every rank, ascending: the default group.
  const std::vector<int>& world() const { return world_; }

 private:
  void convert_compute(const ChakraProtoMsg::Node& node, ImportedNode& out);
  void convert_collective(int rank, const ChakraProtoMsg::Node& node, ImportedNode& out);
  void convert_p2p(int rank, const ChakraProtoMsg::Node& node, ImportedNode& out);
  ImportOptions options_;
  std::map<std::string, std::vector<int>> groups_;  // sorted members
  std::vector<int> world_;
  ImportStats stats_;
};

// The ASTRA-sim name of a collective (ALL_REDUCE, ...) and back.
int comm_type_of(CollectiveKind k);

}  // namespace gcsim::workloads::chakra
