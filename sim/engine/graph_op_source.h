// A WorkloadGraph as an OpSource: each rank's program op by op, ids being
// op indices, slots resolved through the rank's binding. Streaming a graph
// gives the same run as the whole-graph Replayer
// (tests/unit/test_streaming_replayer.cpp).
#pragma once

#include <vector>

#include "sim/engine/op_source.h"

namespace gcsim::sim {

class GraphOpSource : public OpSource {
 public:
  // `graph` must outlive the source.
  explicit GraphOpSource(const workloads::WorkloadGraph& graph);

  int num_ranks() const override { return graph_.num_ranks(); }
  bool next(int rank, SourcedOp& out) override;
  size_t stream_count() const override { return graph_.stream_count(); }
  const std::string& stream_name(uint16_t s) const override { return graph_.stream(s); }
  const std::vector<int>& communicator(uint32_t id) const override {
    return graph_.communicator(id);
  }
  std::string origin(int rank) const override { return "rank " + std::to_string(rank); }

 private:
  const workloads::WorkloadGraph& graph_;
  std::vector<uint32_t> next_;  // next op index per rank
};

}  // namespace gcsim::sim
