// Where a streaming replay gets its ops: each rank's program delivered one
// op at a time, in program order, so that a replay can hold a bounded
// window of it instead of the whole graph. A Chakra trace read node by node
// (workloads/chakra/stream_source.h) is one; a WorkloadGraph
// (sim/engine/graph_op_source.h) is another, which proves the streaming replayer
// equal to the whole-graph one.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "sim/engine/ir.h"

namespace gcsim::sim {

// One op as a source delivers it, with its links already global.
struct SourcedOp {
  uint64_t id = 0;               // unique within its rank; deps name these ids
  std::string name;              // for traces and messages
  workloads::Op op;              // kind, stream (an OpSource stream id), payload;
                                 // op.deps and op.name are not used
  std::vector<uint64_t> deps;    // ids of ops of the same rank (earlier or later)
  uint32_t communicator = 0;     // collective: OpSource::communicator(id) are its ranks
  int peer = -1;                 // send: destination rank; recv: source rank
  int64_t tag = 0;               // send/recv: the n-th send from a to b with a tag
                                 // meets the n-th receive at b from a with that tag
  // Compute: the op to hand the executor. Executors may cache per op
  // address (the cluster model does), so a source gives equal kernels one
  // op object that lives as long as the source. Null for other kinds.
  const workloads::Op* kernel = nullptr;
};

class OpSource {
 public:
  virtual ~OpSource() = default;
  virtual int num_ranks() const = 0;
  // The next op of `rank` into `out`; false when the rank has no more.
  // Throws std::exception on bad input (the message says where).
  virtual bool next(int rank, SourcedOp& out) = 0;
  // Stream ids handed out so far and their names (new ones may appear as
  // ops are read).
  virtual size_t stream_count() const = 0;
  virtual const std::string& stream_name(uint16_t stream) const = 0;
  virtual const std::vector<int>& communicator(uint32_t id) const = 0;
  // Where `rank`'s ops come from, for messages ("traces/llama.3.et").
  virtual std::string origin(int rank) const = 0;
};

}  // namespace gcsim::sim
