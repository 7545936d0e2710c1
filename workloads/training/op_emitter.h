// Appends a training rank's ops to an IR program: kernels on the compute
// stream, collectives on one stream per parallel dimension, p2p on one
// stream per peer, each op tagged with the category the step breakdown
// charges its time to. A chain cursor makes each op depend on the previous
// one of the same chain when they sit on different streams (on one stream,
// program order already orders them).
//
// Two lanes: DualPipe overlaps the forward of one micro-batch with the
// backward of another (DeepSeek-V3, 3.2.1); lane 1 has its own compute and
// communication streams, and its collectives their own communicators, as
// the overlapped chunks use separate CUDA streams there.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/engine/ir.h"

namespace gcsim::workloads::training {

// What a step's time is charged to (summary.json `breakdown`).
enum class OpCategory : uint8_t { compute, optimizer, tp, cp, ep, pp, dp, memory };
const char* category_name(OpCategory c);
inline constexpr int kCategories = 8;

// Communicator slots of every training program's binding.
enum CommSlot : uint16_t {
  kSlotTp = 0,       // + lane
  kSlotEp = 2,       // + lane
  kSlotDp = 4,
  kSlotExpertDp = 5,
  kSlotEmbedding = 6,
  kSlotModelParallel = 7,  // the optimizer's scalar all-reduces (optimizer_step.h)
  kCommSlots = 8,
};
// Peer slots: pipeline neighbours and context-parallel ring neighbours.
enum PeerSlot : uint16_t { kPeerPpNext = 0, kPeerPpPrev = 1, kPeerCpNext = 2, kPeerCpPrev = 3, kPeerSlots = 4 };

inline constexpr uint32_t kNoOp = UINT32_MAX;

using KernelShape = decltype(ComputeOp::shape);

struct TrainingStreams {
  uint16_t compute[2], tp[2], ep[2], cp_send[2], cp_recv[2], dp;
  uint16_t pp_send[2], pp_recv[2];  // by peer slot (next, prev)
  static TrainingStreams intern(WorkloadGraph& g);
};

class OpEmitter {
 public:
  OpEmitter(WorkloadGraph& g, RankProgram& program, std::vector<OpCategory>& categories,
            const TrainingStreams& streams);

  // The chain new ops join (kNoOp: none).
  uint32_t cursor() const { return cursor_; }
  void set_cursor(uint32_t op) { cursor_ = op; }
  int lane() const { return lane_; }
  void set_lane(int lane) { lane_ = lane; }
  const TrainingStreams& streams() const { return streams_; }
  uint32_t size() const { return static_cast<uint32_t>(program_.ops.size()); }
  const Op& op(uint32_t i) const { return program_.ops[i]; }

  // A kernel on this lane's compute stream, after the cursor and `extra`.
  uint32_t kernel(const std::string& name, KernelShape shape, OpCategory category,
                  std::vector<uint32_t> extra = {});
  // A collective on `stream` over communicator slot `slot`, after the
  // cursor and `extra`. With `chain` the chain continues from it; without,
  // it runs beside the chain (an async collective the caller waits for
  // later through depend()).
  uint32_t collective(const std::string& name, CollectiveKind kind, int64_t bytes, uint16_t slot,
                      uint16_t stream, OpCategory category, std::vector<uint32_t> extra = {},
                      bool chain = true);
  // An uneven all-to-all (all_to_all_single with split sizes): `splits` in
  // the communicator's order, `largest` its largest send buffer (the
  // collective's size); otherwise as collective().
  uint32_t all_to_all_v(const std::string& name, models::collectives::SplitMatrixPtr splits,
                        int64_t largest, uint16_t slot, uint16_t stream, OpCategory category,
                        std::vector<uint32_t> extra = {}, bool chain = true);
  // A p2p op off the chain (the cursor does not move).
  uint32_t send(const std::string& name, uint16_t peer_slot, uint16_t stream, int64_t bytes,
                OpCategory category, std::vector<uint32_t> deps);
  uint32_t recv(const std::string& name, uint16_t peer_slot, uint16_t stream, int64_t bytes,
                OpCategory category, std::vector<uint32_t> deps);
  // An HBM allocation (> 0) or free on the compute stream, after `deps`.
  uint32_t memory(const std::string& name, int64_t delta, std::vector<uint32_t> deps);
  // Adds a dependency to an existing op.
  void depend(uint32_t op, uint32_t on);
  // Appends a finished op as it is (deps already final); returns its index.
  uint32_t append_op(Op op, OpCategory category);

  // Marks an op index as belonging to another program (a staging emitter
  // naming ops of the program it will be merged into).
  static constexpr uint32_t kExternal = 0x80000000u;

 private:
  uint32_t append(Op op, OpCategory category, std::vector<uint32_t> deps, bool chain);

  WorkloadGraph& g_;
  RankProgram& program_;
  std::vector<OpCategory>& categories_;
  TrainingStreams streams_;
  uint32_t cursor_ = kNoOp;
  int lane_ = 0;
};

}  // namespace gcsim::workloads::training
