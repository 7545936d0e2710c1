// Bad `collective` workloads through the command line: each class of
// mistake ends with exit status 2, a message naming the file, the line and
// the key, and no summary.json.
#include <filesystem>
#include <string>
#include <vector>

#include "catch.h"
#include "scenario/run_gcsim.h"

namespace fs = std::filesystem;
using gcsim::test::GcsimResult;
using gcsim::test::run_gcsim;
using gcsim::test::TempDir;
using gcsim::test::write_text;

using gcsim::test::contains;

namespace {

// One node of 8 H100s; the workload's keys follow from line 4 on.
const char* kHead =
    "cluster: {gpu: h100-sxm, nodes: 2, gpus_per_node: 8, scale_out: {topology: fat-tree}}\n"
    "workload:\n"
    "  kind: collective\n";

// Writes kHead + `workload` (lines 4...), runs it, checks the contract:
// exit 2, "file:line:" and 'key' in the message, plus `also`.
void expect_bad(const std::string& workload, int line, const std::string& key,
                const std::vector<std::string>& also, const char* gpu = nullptr) {
  TempDir tmp;
  const fs::path config = tmp / "bad.yaml";
  std::string head = kHead;
  if (gpu != nullptr) head.replace(head.find("h100-sxm"), 8, gpu);
  write_text(config, head + workload);
  const fs::path out = tmp / "out";
  const GcsimResult r = run_gcsim({"run", config.string(), "-o", out.string(), "-q"});
  INFO("workload:\n" << workload << "\nstderr: " << r.err);
  CHECK(r.exit_status == 2);
  CHECK(contains(r.err, config.string() + ":" + std::to_string(line) + ":"));
  CHECK(contains(r.err, "'" + key + "'"));
  for (const auto& a : also) CHECK(contains(r.err, a));
  CHECK_FALSE(contains(r.err, "internal error"));
  CHECK_FALSE(fs::exists(out / "summary.json"));
}

}  // namespace

TEST_CASE("collective bad input: unknown op", "[cli]") {
  expect_bad("  op: allreduce\n  bytes: 1MiB\n", 4, "workload.op", {"all_reduce"});
}

TEST_CASE("collective bad input: ranks out of range", "[cli]") {
  expect_bad("  op: all_reduce\n  bytes: 1MiB\n  ranks: [0, 1, 16]\n", 6, "workload.ranks",
             {"rank 16 does not exist", "0..15"});
  expect_bad("  op: all_reduce\n  bytes: 1MiB\n  ranks: [-1, 2]\n", 6, "workload.ranks",
             {"rank -1"});
}

TEST_CASE("collective bad input: duplicated ranks", "[cli]") {
  expect_bad("  op: all_gather\n  bytes: 1MiB\n  ranks: [0, 3, 3]\n", 6, "workload.ranks",
             {"rank 3 appears twice"});
}

TEST_CASE("collective bad input: a group of one rank", "[cli]") {
  expect_bad("  op: all_reduce\n  bytes: 1MiB\n  ranks: [5]\n", 6, "workload.ranks",
             {"at least two ranks"});
}

TEST_CASE("collective bad input: bytes zero, negative, missing or not a size", "[cli]") {
  expect_bad("  op: all_reduce\n  bytes: 0B\n", 5, "workload.bytes", {"at least one byte"});
  expect_bad("  op: all_reduce\n  bytes: [1MiB, -4KiB]\n", 5, "workload.bytes", {"-4KiB"});
  expect_bad("  op: all_reduce\n  bytes: lots\n", 5, "workload.bytes", {"lots"});
  expect_bad("  op: all_reduce\n  bytes: []\n", 5, "workload.bytes", {"empty"});
}

TEST_CASE("collective bad input: an algorithm that does not implement the op", "[cli]") {
  expect_bad("  op: all_gather\n  bytes: 1MiB\n  algorithm: tree\n", 6, "workload.algorithm",
             {"tree does not implement all_gather", "valid: auto, ring"});
  expect_bad("  op: all_to_all\n  bytes: 1MiB\n  algorithm: ring\n", 6, "workload.algorithm",
             {"valid: auto, direct, pairwise"});
  expect_bad("  op: all_reduce\n  bytes: 1MiB\n  algorithm: fastest\n", 6, "workload.algorithm",
             {"ring"});
}

TEST_CASE("collective bad input: an algorithm that does not fit the cluster or group", "[cli]") {
  // NVLS reduces in one NVSwitch: not across two nodes, not on an A100.
  expect_bad("  op: all_reduce\n  bytes: 1MiB\n  algorithm: nvls\n", 6, "workload.algorithm",
             {"spans 2 nodes"});
  expect_bad("  op: all_reduce\n  bytes: 1MiB\n  ranks: [0, 1]\n  algorithm: nvls\n", 7,
             "workload.algorithm", {"NVLink SHARP"}, "a100-sxm-80gb");
  // Hierarchical needs the same number of members on every node.
  expect_bad("  op: all_reduce\n  bytes: 1MiB\n  ranks: [0, 1, 8]\n  algorithm: hierarchical\n",
             7, "workload.algorithm", {"same number of group members"});
  // NVLS is Simple only.
  expect_bad(
      "  op: all_reduce\n  bytes: 1MiB\n  ranks: [0, 1]\n  algorithm: nvls\n  protocol: LL\n", 8,
      "workload.protocol", {"Simple"});
}

TEST_CASE("collective bad input: a root outside the group, an unknown protocol", "[cli]") {
  expect_bad("  op: broadcast\n  bytes: 1MiB\n  ranks: [0, 1]\n  root: 4\n", 7, "workload.root",
             {"not one of the group's ranks"});
  expect_bad("  op: all_reduce\n  bytes: 1MiB\n  protocol: LL256\n", 6, "workload.protocol",
             {"LL128"});
}
