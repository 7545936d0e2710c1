// How long the communication of one serving step takes: the TP all-reduces
// and all-gathers of a forward pass and the pipeline-stage sends. Serving
// runs millions of these with only a few hundred distinct sizes, so each
// distinct one is run once, alone, as an IR op through an OpExecutor (the
// ClusterModel: NCCL-like collectives on the configured fabric and network
// model) on a simulator of its own, and its time is reused.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <tuple>
#include <vector>

#include "sim/engine/replayer.h"
#include "sim/engine/simulator.h"
#include "sim/engine/ir.h"

namespace gcsim::workloads::inference {

class CommTimer {
 public:
  virtual ~CommTimer() = default;
  // One collective among `ranks` (nccl-tests' bytes: the per-rank buffer).
  virtual sim::Duration collective(CollectiveKind kind, sim::Bytes bytes,
                                   const std::vector<int>& ranks) = 0;
  // One send of `bytes` from `src` to `dst`.
  virtual sim::Duration p2p(int src, int dst, sim::Bytes bytes) = 0;
};

class ExecutorCommTimer : public CommTimer {
 public:
  // `scratch` must have nothing scheduled but what this timer runs;
  // `executor` runs on it. Groups with the same shape relative to the node
  // boundaries (offsets from their first rank, first rank's slot in its
  // node) share results: the fabric is symmetric across nodes.
  ExecutorCommTimer(sim::Simulator& scratch, sim::OpExecutor& executor, int gpus_per_node);

  sim::Duration collective(CollectiveKind kind, sim::Bytes bytes,
                           const std::vector<int>& ranks) override;
  sim::Duration p2p(int src, int dst, sim::Bytes bytes) override;
  int64_t runs() const { return runs_; }

 private:
  sim::Duration run(const Op& op, const std::vector<int>& ranks);
  std::vector<int> shape_of(const std::vector<int>& ranks) const;

  sim::Simulator& sim_;
  sim::OpExecutor& executor_;
  int gpus_per_node_;
  std::deque<Op> ops_;  // executors may key caches by an op's address: keep them alive
  std::map<std::tuple<int, int64_t, std::vector<int>>, sim::Duration> cache_;
  int64_t runs_ = 0;
};

}  // namespace gcsim::workloads::inference
