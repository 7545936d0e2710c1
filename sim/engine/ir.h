// The workload-graph IR: per rank, a DAG of ops on named streams. Training
// generators, the Chakra importer and the hand-written `graph` workload all
// emit it; the replayer (sim/engine/replayer.h) runs it. Ops on one stream run in
// program order; `deps` are data dependencies within the rank; ranks meet
// only through communication ops.
//
// Symmetric ranks share one program: a program names its communicators and
// peers by slot, and each rank's RankBinding maps the slots to global
// communicators and ranks. Collectives match as NCCL's do, by order on a
// communicator (the n-th collective a rank issues on a communicator meets
// the n-th of every other member); p2p ops match by order per (src, dst)
// pair. So 100K data-parallel ranks running the same step cost one program
// plus 100K small bindings, not 100K copies.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "models/collectives/collective.h"
#include "models/gpu/kernel.h"
#include "sim/engine/time.h"
#include "sim/config/units.h"

namespace gcsim::workloads {

enum class OpKind : uint8_t { compute, collective, send, recv, memory, delay };
// Collectives and point-to-point sends and receives: ops that meet other ranks.
inline bool is_communication(OpKind k) {
  return k == OpKind::collective || k == OpKind::send || k == OpKind::recv;
}

enum class CollectiveKind : uint8_t {
  all_reduce, all_gather, reduce_scatter, broadcast, reduce, all_to_all
};

const char* collective_name(CollectiveKind k);
// The collectives library's name for the same operation.
models::collectives::CollectiveOp collective_op(CollectiveKind k);

struct ComputeOp {
  std::variant<models::gpu::GemmShape, models::gpu::AttentionShape, models::gpu::MemoryOpShape>
      shape;
};
struct CollectiveOp {
  CollectiveKind kind = CollectiveKind::all_reduce;
  sim::Bytes bytes;     // nccl-tests convention: the per-rank buffer size
  uint16_t comm = 0;    // communicator slot in the rank's binding
  int root = 0;         // broadcast / reduce root, as an index into the communicator
  // all_to_all with uneven splits (all_to_all_single): bytes per (source,
  // destination) in the communicator's order, shared by every member's op;
  // `bytes` is then the largest send buffer. Null: even, bytes/n each.
  models::collectives::SplitMatrixPtr splits;
};
struct P2pOp {
  uint16_t peer = 0;    // peer slot in the rank's binding
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
  uint32_t name = 0;     // index into WorkloadGraph names (shared by a collective's ranks)
  OpKind kind = OpKind::compute;
  uint16_t stream = 0;   // index into WorkloadGraph streams
  std::vector<uint32_t> deps;  // indices of other ops of the same program
  OpPayload payload;
};

struct RankProgram {
  std::vector<Op> ops;
};

// What a program's slots mean for one rank.
struct RankBinding {
  std::vector<uint32_t> comms;  // communicator slot -> global communicator id
  std::vector<int> peers;       // peer slot -> global rank
};

class WorkloadGraph {
 public:
  // `num_ranks` ranks, each with its own empty program and binding.
  explicit WorkloadGraph(int num_ranks = 0);

  int num_ranks() const { return static_cast<int>(program_of_rank_.size()); }
  size_t program_count() const { return programs_.size(); }

  // The program `rank` runs. Mutating it changes every rank that shares it.
  RankProgram& program(int rank) { return programs_.at(program_of_rank_.at(rank)); }
  const RankProgram& program(int rank) const {
    return programs_.at(program_of_rank_.at(static_cast<size_t>(rank)));
  }
  uint32_t program_id(int rank) const { return program_of_rank_.at(static_cast<size_t>(rank)); }
  const RankProgram& program_by_id(uint32_t id) const { return programs_.at(id); }
  // Adds a program and returns its id; assign() makes ranks run it.
  uint32_t add_program(RankProgram program);
  void assign(int rank, uint32_t program_id, RankBinding binding);

  // Communicators are deduplicated: the same rank list gives the same id.
  uint32_t add_communicator(std::vector<int> ranks);
  const std::vector<int>& communicator(uint32_t id) const { return communicators_.at(id); }
  size_t communicator_count() const { return communicators_.size(); }

  const RankBinding& binding(int rank) const { return bindings_.at(static_cast<size_t>(rank)); }
  // The slot of a communicator / peer in `rank`'s binding, added if new.
  uint16_t comm_slot(int rank, uint32_t communicator);
  uint16_t peer_slot(int rank, int peer);

  // Global communicator of a collective and global rank of a p2p peer.
  uint32_t communicator_of(int rank, const CollectiveOp& c) const;
  int peer_of(int rank, const P2pOp& p) const;
  // Ranks that take part in a communication op seen from `rank`.
  std::vector<int> participants(int rank, const Op& op) const;
  size_t participant_count(int rank, const Op& op) const;

  uint32_t intern_name(const std::string& name);
  uint16_t intern_stream(const std::string& stream);
  const std::string& name(uint32_t id) const { return names_.at(id); }
  const std::string& stream(uint16_t id) const { return streams_.at(id); }
  size_t stream_count() const { return streams_.size(); }

  // Ops summed over ranks (what the replayer will run).
  size_t total_ops() const;

 private:
  std::vector<RankProgram> programs_;
  std::vector<uint32_t> program_of_rank_;
  std::vector<RankBinding> bindings_;
  std::vector<std::vector<int>> communicators_;
  std::map<std::vector<int>, uint32_t> communicator_ids_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t> name_ids_;
  std::vector<std::string> streams_;
};

// Checks what a builder could get wrong: slots bound, ranks in range, deps
// in range and acyclic, communicators non-empty and containing their
// members, every member issuing the same number of collectives on each
// communicator, and every (src, dst) pair's sends matched by as many
// receives. Returns "" when valid, else the first problem.
std::string validate(const WorkloadGraph& graph);

}  // namespace gcsim::workloads
