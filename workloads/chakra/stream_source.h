// A Chakra trace as an OpSource (sim/engine/op_source.h): each rank's file is read
// node by node as the streaming replayer asks, so a trace of any length
// replays in the replayer's bounded window. Nodes convert exactly as the
// whole-trace loader converts them (node_converter.h). Memory besides the
// window: one open file and one parsed node per rank, one op object per
// distinct kernel shape, the stream names and the communicators.
//
// What the whole-trace loader refuses up front, a stream finds as it reads
// or at the end of the replay: a truncated message or a duplicate id when
// it is read, a dependency on a node the file lacks at the end of that
// file, a SEND without its RECV and a dependency cycle when the replay
// stalls (the replayer names them).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/engine/op_source.h"
#include "workloads/chakra/node_converter.h"
#include "workloads/chakra/trace_file.h"

namespace gcsim::workloads::chakra {

class ChakraStreamSource : public sim::OpSource {
 public:
  // Checks the rank files and opens them (one descriptor per rank); throws
  // TraceError or std::invalid_argument (a bad comm group).
  ChakraStreamSource(std::string prefix, ImportOptions options);
  ~ChakraStreamSource() override;

  int num_ranks() const override { return static_cast<int>(readers_.size()); }
  bool next(int rank, sim::SourcedOp& out) override;
  size_t stream_count() const override { return streams_.size(); }
  const std::string& stream_name(uint16_t s) const override { return streams_.at(s); }
  const std::vector<int>& communicator(uint32_t id) const override { return *communicators_.at(id); }
  std::string origin(int rank) const override;

  const ImportStats& stats() const { return converter_.stats(); }
  size_t kernel_shapes() const { return kernels_.size(); }

 private:
  uint16_t stream_id(const std::string& name);
  std::string prefix_;
  NodeConverter converter_;
  std::vector<std::unique_ptr<TraceReader>> readers_;
  std::vector<std::string> streams_;
  std::unordered_map<std::string, uint16_t> stream_ids_;
  std::vector<const std::vector<int>*> communicators_;  // owned by converter_
  std::map<const std::vector<int>*, uint32_t> communicator_ids_;
  std::unordered_map<std::string, std::unique_ptr<Op>> kernels_;  // by shape
  ChakraProtoMsg::Node node_;
  ImportedNode in_;
};

}  // namespace gcsim::workloads::chakra
