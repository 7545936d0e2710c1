// Builds small Chakra traces node by node with the generated protobuf
// classes, for tests: each helper adds one node to a rank and returns it for
// further attributes; write() produces PREFIX.<rank>.et files.
#pragma once

#ifndef GCSIM_NO_CHAKRA

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "workloads/chakra/attributes.h"
#include "workloads/chakra/et_def.pb.h"
#include "workloads/chakra/trace_file.h"

namespace gcsim::test {

class ChakraTraceBuilder {
 public:
  explicit ChakraTraceBuilder(int ranks) : nodes_(static_cast<size_t>(ranks)) {}

  ChakraProtoMsg::Node& node(int rank, uint64_t id, const std::string& name,
                             ChakraProtoMsg::NodeType type, std::initializer_list<uint64_t> deps) {
    auto& n = nodes_.at(static_cast<size_t>(rank)).emplace_back();
    n.set_id(id);
    n.set_name(name);
    n.set_type(type);
    for (uint64_t d : deps) n.add_data_deps(d);
    return n;
  }
  ChakraProtoMsg::Node& comp(int rank, uint64_t id, const std::string& name, uint64_t micros,
                             std::initializer_list<uint64_t> deps = {}) {
    auto& n = node(rank, id, name, ChakraProtoMsg::COMP_NODE, deps);
    n.set_duration_micros(micros);
    return n;
  }
  // comm_type: Chakra's CollectiveCommType (ALL_REDUCE = 0, ...).
  ChakraProtoMsg::Node& coll(int rank, uint64_t id, const std::string& name, int64_t comm_type,
                             uint64_t bytes, const std::string& pg_name,
                             std::initializer_list<uint64_t> deps = {}) {
    auto& n = node(rank, id, name, ChakraProtoMsg::COMM_COLL_NODE, deps);
    workloads::chakra::add_int(n, "comm_type", comm_type);
    workloads::chakra::add_uint(n, "comm_size", bytes);
    if (!pg_name.empty()) workloads::chakra::add_string(n, "pg_name", pg_name);
    return n;
  }
  ChakraProtoMsg::Node& send(int rank, uint64_t id, const std::string& name, int dst,
                             uint64_t bytes, int64_t tag, std::initializer_list<uint64_t> deps = {}) {
    auto& n = node(rank, id, name, ChakraProtoMsg::COMM_SEND_NODE, deps);
    workloads::chakra::add_int(n, "comm_src", rank);
    workloads::chakra::add_int(n, "comm_dst", dst);
    workloads::chakra::add_uint(n, "comm_size", bytes);
    workloads::chakra::add_int(n, "comm_tag", tag);
    return n;
  }
  ChakraProtoMsg::Node& recv(int rank, uint64_t id, const std::string& name, int src,
                             uint64_t bytes, int64_t tag, std::initializer_list<uint64_t> deps = {}) {
    auto& n = node(rank, id, name, ChakraProtoMsg::COMM_RECV_NODE, deps);
    workloads::chakra::add_int(n, "comm_src", src);
    workloads::chakra::add_int(n, "comm_dst", rank);
    workloads::chakra::add_uint(n, "comm_size", bytes);
    workloads::chakra::add_int(n, "comm_tag", tag);
    return n;
  }
  std::vector<ChakraProtoMsg::Node>& rank(int r) { return nodes_.at(static_cast<size_t>(r)); }

  // PREFIX.<rank>.et for every rank.
  void write(const std::string& prefix) const {
    ChakraProtoMsg::GlobalMetadata meta;
    meta.set_version("0.0.4");
    for (size_t r = 0; r < nodes_.size(); ++r) {
      workloads::chakra::TraceWriter w(workloads::chakra::rank_file(prefix, static_cast<int>(r)),
                                       meta);
      for (const auto& n : nodes_[r]) w.write(n);
      w.close();
    }
  }

 private:
  std::vector<std::vector<ChakraProtoMsg::Node>> nodes_;
};

}  // namespace gcsim::test

#endif  // GCSIM_NO_CHAKRA
