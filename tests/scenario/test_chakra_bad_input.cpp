// Bad Chakra traces through `gcsim run`: exit status 2, one message naming
// the config (file, line, workload.prefix or workload.comm_groups), the
// trace file, the rank, the node id and the problem; no summary.json.
// Config-level mistakes live in tests/data/bad/chakra_*.yaml; broken traces
// are built here with the generated protobuf classes.
#ifndef GCSIM_NO_CHAKRA

#include <filesystem>

#include "catch.h"
#include "scenario/run_gcsim.h"
#include "unit/chakra_trace_builder.h"
#include "workloads/chakra/attributes.h"

namespace fs = std::filesystem;
using gcsim::test::ChakraTraceBuilder;
using gcsim::test::GcsimResult;
using gcsim::test::run_gcsim;
using gcsim::test::source_path;
using gcsim::test::TempDir;

using gcsim::test::contains;

namespace {

void expect_exit2(const std::string& config, const TempDir& tmp, int line, const std::string& key,
                  const std::vector<std::string>& fragments) {
  const GcsimResult r = run_gcsim({"run", config, "-o", (tmp / "out").string(), "-q"});
  INFO("stderr: " << r.err);
  CHECK(r.exit_status == 2);
  CHECK(contains(r.err, config + ":" + std::to_string(line) + ":"));
  CHECK(contains(r.err, "'" + key + "'"));
  for (const auto& f : fragments) CHECK(contains(r.err, f));
  CHECK_FALSE(contains(r.err, "internal error"));
  CHECK_FALSE(fs::exists(tmp / "out" / "summary.json"));
}

// Two ranks: a compute chain, a send/recv pair and an all-reduce on group
// "1", broken by `mutate` and `after_write`; returns the config that runs it.
std::string write_trace(const TempDir& tmp, const std::function<void(ChakraTraceBuilder&)>& mutate,
                        const std::function<void(const std::string& prefix)>& after_write = {}) {
  ChakraTraceBuilder b(2);
  b.comp(0, 1, "fwd", 10);
  b.send(0, 2, "act", 1, 1 << 20, 0, {1});
  b.coll(0, 3, "grads", 0, 1 << 24, "1", {2});
  b.recv(1, 1, "act", 0, 1 << 20, 0);
  b.comp(1, 2, "fwd", 10, {1});
  b.coll(1, 3, "grads", 0, 1 << 24, "1", {2});
  if (mutate) mutate(b);
  b.write((tmp / "trace").string());
  if (after_write) after_write((tmp / "trace").string());
  gcsim::test::write_text(tmp / "run.yaml",
                          "cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 2, scale_up: {kind: nvswitch}, "
                          "scale_out: {topology: none}}\n"
                          "workload:\n"
                          "  kind: chakra\n"
                          "  comm_groups: {\"1\": [0, 1]}\n"
                          "  prefix: trace\n");
  return (tmp / "run.yaml").string();
}

void expect_bad_trace(const std::function<void(ChakraTraceBuilder&)>& mutate,
                      const std::vector<std::string>& fragments,
                      const std::function<void(const std::string& prefix)>& after_write = {}) {
  TempDir tmp;
  expect_exit2(write_trace(tmp, mutate, after_write), tmp, 5, "workload.prefix", fragments);
}

}  // namespace

TEST_CASE("chakra bad input: the trace these tests break runs when intact", "[cli][chakra]") {
  TempDir tmp;
  const GcsimResult r = run_gcsim({"run", write_trace(tmp, {}), "-o", (tmp / "out").string(), "-q"});
  INFO(r.err);
  CHECK(r.exit_status == 0);
}

TEST_CASE("chakra bad input: a missing rank file", "[cli][chakra]") {
  expect_bad_trace([](ChakraTraceBuilder&) {}, {"trace.1.et: missing: the cluster has 2 GPUs"},
                   [](const std::string& prefix) { fs::remove(gcsim::workloads::chakra::rank_file(prefix, 1)); });
}

TEST_CASE("chakra bad input: a truncated message", "[cli][chakra]") {
  expect_bad_trace([](ChakraTraceBuilder&) {},
                   {"trace.0.et: message 4 (the node after node 2 ('act')) is truncated or malformed"},
                   [](const std::string& prefix) {
                     const auto f = gcsim::workloads::chakra::rank_file(prefix, 0);
                     fs::resize_file(f, fs::file_size(f) - 5);
                   });
}

TEST_CASE("chakra bad input: an unknown pg_name", "[cli][chakra]") {
  expect_bad_trace(
      [](ChakraTraceBuilder& b) { b.rank(1).back().mutable_attr(2)->set_string_val("7"); },
      {"trace.1.et: rank 1, node 3 ('grads'): pg_name '7' is not in workload.comm_groups (declared: '1')"});
}

TEST_CASE("chakra bad input: a dependency on a missing node", "[cli][chakra]") {
  expect_bad_trace([](ChakraTraceBuilder& b) { b.rank(0)[0].add_data_deps(42); },
                   {"trace.0.et: rank 0: node 1 ('fwd') depends on node 42, which is not in the file"});
}

TEST_CASE("chakra bad input: a dependency cycle", "[cli][chakra]") {
  expect_bad_trace([](ChakraTraceBuilder& b) { b.rank(1)[0].add_ctrl_deps(2); },
                   {"trace.1.et: rank 1: dependency cycle: node 1 ('act') -> node 2 ('fwd') -> node 1 ('act')"});
}

TEST_CASE("chakra bad input: a SEND without its RECV", "[cli][chakra]") {
  expect_bad_trace(
      [](ChakraTraceBuilder& b) {
        b.rank(1).erase(b.rank(1).begin());  // rank 1's RECV
        b.rank(1)[0].clear_data_deps();
      },
      {"trace.0.et: rank 0: SEND node 2 ('act') (tag 0, 1048576 B) to rank 1 has no matching RECV in",
       "trace.1.et"});
}

TEST_CASE("chakra bad input: send and receive disagree on the tag", "[cli][chakra]") {
  expect_bad_trace([](ChakraTraceBuilder& b) { b.rank(1)[0].mutable_attr(3)->set_int64_val(9); },
                   {"SEND node 2 ('act') (tag 0, 1048576 B)", "(tag 9, 1048576 B)", "tags and sizes must agree"});
}

TEST_CASE("chakra bad input: configs naming traces and groups wrongly", "[cli][chakra]") {
  TempDir tmp;
  auto bad = [](const char* f) { return source_path(std::string("tests/data/bad/") + f); };
  expect_exit2(bad("chakra_unknown_pg.yaml"), tmp, 10, "workload.prefix",
               {"two_ranks.0.et: rank 0, node", "pg_name '1' is not in workload.comm_groups (declared: '2')"});
  expect_exit2(bad("chakra_missing_rank.yaml"), tmp, 6, "workload.prefix",
               {"two_ranks.2.et: missing: the cluster has 4 GPUs"});
  expect_exit2(bad("chakra_group_rank.yaml"), tmp, 7, "workload.comm_groups",
               {"comm group '1' names rank 5, but the cluster has ranks 0..1"});
  expect_exit2(bad("chakra_groups_file.yaml"), tmp, 7, "workload.comm_groups",
               {"cannot read the comm-group file", "no_such_groups.json"});
}

#endif  // GCSIM_NO_CHAKRA
