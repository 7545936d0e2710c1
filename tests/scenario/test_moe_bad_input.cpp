// Bad `moe` graph ops through the command line: each key's mistake ends with
// exit status 2, a message naming the file, the line and the key, and no
// summary.json.
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

// 2 nodes x 2 H100s; the moe op's keys start on line 7, one per line, after
// the defaults below (a valid op when `extra` is empty).
const char* kHead =
    "cluster: {gpu: h100-sxm, nodes: 2, gpus_per_node: 2}\n"
    "workload:\n"
    "  kind: graph\n"
    "  ops:\n"
    "    - name: moe\n"
    "      op: moe\n";

std::string op(const std::string& extra, bool with_defaults = true) {
  std::string s = extra;
  if (with_defaults) {
    s += "      tokens: 1024\n      hidden: 1024\n      expert_ffn: 512\n      experts: 8\n";
  }
  return s;
}

void expect_bad(const std::string& keys, int line, const std::string& key,
                const std::vector<std::string>& also) {
  TempDir tmp;
  const fs::path config = tmp / "bad.yaml";
  write_text(config, std::string(kHead) + keys);
  const fs::path out = tmp / "out";
  const GcsimResult r = run_gcsim({"run", config.string(), "-o", out.string(), "-q"});
  INFO("op keys:\n" << keys << "\nstderr: " << r.err);
  CHECK(r.exit_status == 2);
  CHECK(contains(r.err, config.string() + ":" + std::to_string(line) + ":"));
  CHECK(contains(r.err, "'workload.ops[0]." + key + "'"));
  for (const auto& a : also) CHECK(contains(r.err, a));
  CHECK_FALSE(contains(r.err, "internal error"));
  CHECK_FALSE(fs::exists(out / "summary.json"));
}

}  // namespace

TEST_CASE("moe bad input: sizes", "[cli][moe]") {
  expect_bad("      tokens: 0\n", 7, "tokens", {});
  expect_bad("      tokens: 8\n      hidden: -4\n", 8, "hidden", {});
  expect_bad("      tokens: 8\n      hidden: 64\n      expert_ffn: 0\n", 9, "expert_ffn", {});
  expect_bad(op("      experts: 6\n", false) + "      tokens: 8\n      hidden: 64\n      expert_ffn: 64\n",
             7, "experts", {"multiple of the EP group's 4 ranks"});
  expect_bad(op("      top_k: 9\n"), 7, "top_k", {});
  expect_bad(op("      ranks: [0, 9]\n"), 7, "ranks", {"rank 9"});
}

TEST_CASE("moe bad input: routing keys", "[cli][moe]") {
  expect_bad(op("      skew: -1\n"), 7, "skew", {"between 0 and 10"});
  expect_bad(op("      skew: 1\n      expert_tokens: [1, 2]\n"), 8, "expert_tokens",
             {"skew or expert_tokens"});
  expect_bad(op("      expert_tokens: [1, 2]\n"), 7, "expert_tokens", {"lists 2 experts"});
  // 4 ranks x 1024 tokens x top-2 = 8192 copies; these sum to 8.
  expect_bad(op("      expert_tokens: [1, 1, 1, 1, 1, 1, 1, 1]\n"), 7, "expert_tokens",
             {"sum to 8 copies", "8192"});
  expect_bad(op("      expert_tokens: oops\n"), 7, "expert_tokens", {"list of integers"});
  expect_bad(op("      placement: random\n"), 7, "placement", {"permuted"});
  expect_bad(op("      sample: maybe\n"), 7, "sample", {"true or false"});
  expect_bad(op("      balance: 1.5\n"), 7, "balance", {"between 0 and 1"});
  expect_bad(op("      capacity_factor: -1\n"), 7, "capacity_factor", {});
  expect_bad(op("      pad_to_capacity: true\n"), 7, "pad_to_capacity", {"capacity_factor"});
  expect_bad(op("      layer: -1\n"), 7, "layer", {});
  expect_bad(op("      micro_batch: x\n"), 7, "micro_batch", {});
  // Ranks 0, 1 on node 0 and 2 on node 1: not the same count per node.
  expect_bad("      max_route_nodes: 1\n      ranks: [0, 1, 2]\n      tokens: 64\n"
             "      hidden: 64\n      expert_ffn: 64\n      experts: 6\n",
             7, "max_route_nodes", {"same number of EP ranks on every node"});
}

TEST_CASE("moe bad input: pass, activation, dtype, unknown key", "[cli][moe]") {
  expect_bad(op("      pass: both\n"), 7, "pass", {"fwd_bwd"});
  expect_bad(op("      activation: relu\n"), 7, "activation", {"swiglu"});
  expect_bad(op("      dtype: bf17\n"), 7, "dtype", {"bf16"});
  expect_bad(op("      skwe: 1\n"), 7, "skwe", {"skew"});
}

TEST_CASE("moe bad input: host keys", "[cli][moe]") {
  expect_bad(op("      host: python\n"), 7, "host", {"eager", "none"});
  // The per-call costs are the machine's (cluster.host), not the op's.
  expect_bad(op("      host_overhead: 10us\n"), 7, "host_overhead", {});
}

// cluster.host: a profile name or a map of a profile and per-call costs,
// each within its physical range.
static void expect_bad_host(const std::string& host, int line, const std::string& key,
                     const std::vector<std::string>& also) {
  TempDir tmp;
  const fs::path config = tmp / "bad.yaml";
  write_text(config, "cluster:\n  gpu: h100-sxm\n  gpus_per_node: 2\n  host:" + host +
                         "workload:\n  kind: graph\n  ops:\n"
                         "    - {name: moe, op: moe, tokens: 64, hidden: 64, expert_ffn: 64, experts: 2}\n");
  const fs::path out = tmp / "out";
  const GcsimResult r = run_gcsim({"run", config.string(), "-o", out.string(), "-q"});
  INFO("host:" << host << "\nstderr: " << r.err);
  CHECK(r.exit_status == 2);
  CHECK(contains(r.err, config.string() + ":" + std::to_string(line) + ":"));
  CHECK(contains(r.err, "'cluster.host" + key + "'"));
  for (const auto& a : also) CHECK(contains(r.err, a));
  CHECK_FALSE(contains(r.err, "internal error"));
  CHECK_FALSE(fs::exists(out / "summary.json"));
}

TEST_CASE("moe bad input: cluster.host", "[cli][moe]") {
  expect_bad_host(" h300\n", 4, "", {"h200", "h100x4-20261126-2313", "host profile file"});
  expect_bad_host(" [1, 2]\n", 4, "", {"a profile name, a host profile file or a map"});
  expect_bad_host("\n    profile: h900\n", 5, ".profile", {"h100x4-20261126-2212"});
  // The names the two 4-H100 machines' profiles had: each was one machine.
  expect_bad_host(" h100\n", 4, "", {"one 4x H100 machine's host, now named h100x4-20261126-2313",
                                      "gcsim calibrate --host-fit"});
  expect_bad_host("\n    profile: h100-fast\n", 5, ".profile", {"now named h100x4-20261126-2212"});
  expect_bad_host("\n    router: 1us\n", 5, ".router", {"between 3 and 200 us"});
  expect_bad_host("\n    profile: h100x4-20261126-2313\n    launch: 2ms\n", 6, ".launch", {"between 3 and 200 us"});
  expect_bad_host("\n    nccl: fast\n", 5, ".nccl", {});
  expect_bad_host("\n    sync: 500us\n", 5, ".sync", {"between 2 and 200 us"});
  expect_bad_host("\n    lanuch: 20us\n", 5, ".lanuch", {"unknown key"});
  expect_bad_host("\n    profile: h200\n    expert: 1us\n", 6, ".expert", {"between 3 and 200 us"});
  expect_bad_host("\n    loop_fwd: 2ms\n", 5, ".loop_fwd", {"between 0 and 1000 us"});
  expect_bad_host("\n    loop_bwd: slow\n", 5, ".loop_bwd", {});
  expect_bad_host("\n    profile: h100x4-20261126-2313\n    slowest_rank: 0.8\n", 6, ".slowest_rank",
                  {"between 1 and 2"});
  expect_bad_host("\n    slowest_rank: 3\n", 5, ".slowest_rank", {"between 1 and 2"});
  expect_bad_host("\n    slowest_rank: fast\n", 5, ".slowest_rank", {});
}
