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

// The hand-built four-rank trace of test_chakra_trace.cpp ("a hand-built
// trace replays with hand-computed times": makespan 1642 us), written under
// `prefix`:
//   rank 0: A (10 us), B (20 us, after A), S: send 40 MB to rank 1 (after
//           B), AR: all-reduce of 400 MB over group "1" (after S)
//   rank 1: C (50 us), R: recv 40 MB from rank 0, D (5 us, after R),
//           AR (after D)
//   ranks 2, 3: AR
inline void write_hand_built_trace(const std::string& prefix) {
  ChakraTraceBuilder b(4);
  b.comp(0, 1, "A", 10);
  b.comp(0, 2, "B", 20).add_ctrl_deps(1);
  b.send(0, 3, "S", 1, 40'000'000, 0, {2});
  b.coll(0, 4, "AR", 0, 400'000'000, "1", {3});
  b.comp(1, 10, "C", 50);
  b.recv(1, 11, "R", 0, 40'000'000, 0);
  b.comp(1, 12, "D", 5, {11});
  b.coll(1, 13, "AR", 0, 400'000'000, "1", {12});
  b.coll(2, 0, "AR", 0, 400'000'000, "1");
  b.coll(3, 0, "AR", 0, 400'000'000, "1");
  b.write(prefix);
}

}  // namespace gcsim::test

#endif  // GCSIM_NO_CHAKRA
