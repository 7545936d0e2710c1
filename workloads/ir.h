// The workload-graph IR: per rank, a DAG of ops on named streams. Training
// generators, the Chakra importer and the hand-written `graph` workload all
// emit it; the replayer (sim/replayer.h) runs it. Ops on one stream run in
// program order; `deps` are data dependencies within the rank; ranks meet
// only through communication ops that share a rendezvous `match` key.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "models/gpu/kernel.h"
#include "sim/time.h"
#include "sim/units.h"

namespace gcsim::workloads {

enum class OpKind : uint8_t { compute, collective, send, recv, memory, delay };

enum class CollectiveKind : uint8_t {
  all_reduce, all_gather, reduce_scatter, broadcast, reduce, all_to_all
};

const char* collective_name(CollectiveKind k);

struct ComputeOp {
  std::variant<models::gpu::GemmShape, models::gpu::AttentionShape, models::gpu::MemoryOpShape>
      shape;
};
struct CollectiveOp {
  CollectiveKind kind = CollectiveKind::all_reduce;
  sim::Bytes bytes;     // nccl-tests convention: the per-rank buffer size
  uint32_t group = 0;   // index into WorkloadGraph::groups
  int root = 0;         // broadcast / reduce root (a global rank)
};
struct P2pOp {
  int peer = 0;         // global rank of the other side
  sim::Bytes bytes;
};
struct MemoryOp {
  sim::Bytes delta;     // > 0 allocates, < 0 frees
};
struct DelayOp {
  sim::Duration duration;
};

using OpPayload = std::variant<ComputeOp, CollectiveOp, P2pOp, MemoryOp, DelayOp>;

struct Op {
  uint32_t name = 0;     // index into WorkloadGraph::names (shared by a collective's ranks)
  OpKind kind = OpKind::compute;
  uint16_t stream = 0;   // index into WorkloadGraph::streams
  uint64_t match = 0;    // communication ops: rendezvous key common to all parties
  std::vector<uint32_t> deps;  // indices of earlier-or-later ops of the same rank
  OpPayload payload;
};

struct RankProgram {
  std::vector<Op> ops;
};

class WorkloadGraph {
 public:
  explicit WorkloadGraph(int num_ranks = 0) : programs_(static_cast<size_t>(num_ranks)) {}

  int num_ranks() const { return static_cast<int>(programs_.size()); }
  RankProgram& program(int rank) { return programs_.at(static_cast<size_t>(rank)); }
  const RankProgram& program(int rank) const { return programs_.at(static_cast<size_t>(rank)); }

  uint32_t intern_name(const std::string& name);
  uint16_t intern_stream(const std::string& stream);
  uint32_t add_group(std::vector<int> ranks);

  const std::string& name(uint32_t id) const { return names_.at(id); }
  const std::string& stream(uint16_t id) const { return streams_.at(id); }
  size_t stream_count() const { return streams_.size(); }
  const std::vector<int>& group(uint32_t id) const { return groups_.at(id); }

  // Ranks that take part in a communication op seen from `rank`.
  std::vector<int> participants(int rank, const Op& op) const;
  size_t total_ops() const;

 private:
  std::vector<RankProgram> programs_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t> name_ids_;
  std::vector<std::string> streams_;
  std::vector<std::vector<int>> groups_;
};

// Checks what a builder could get wrong: ranks in range, deps in range and
// acyclic, groups non-empty, every rendezvous key met by the same number of
// ops as it has participants. Returns "" when valid, else the first problem.
std::string validate(const WorkloadGraph& graph);

}  // namespace gcsim::workloads
