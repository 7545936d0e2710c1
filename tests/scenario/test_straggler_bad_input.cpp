// Bad `cluster.stragglers` through the real command line: each ends with
// exit status 2 and a message naming the file, the line and the key, and
// writes no summary.json (DESIGN.md, command line contract).
#include <filesystem>
#include <string>
#include <vector>

#include "catch.h"
#include "scenario/run_gcsim.h"

namespace fs = std::filesystem;
using gcsim::test::run_gcsim;
using gcsim::test::TempDir;
using gcsim::test::write_text;

namespace {

// A one-node, 8-GPU graph run; `entry` is the stragglers list on line 6.
std::string config_with(const std::string& entry, const std::string& kind = "graph") {
  std::string workload =
      kind == "graph"
          ? "workload:\n  kind: graph\n  ops:\n    - {name: g, rank: 0, op: gemm, m: 256, n: 256, "
            "k: 256, dtype: bf16}\n"
          : "workload:\n  kind: inference\n  model: {preset: llama3-8b}\n";
  return "cluster:\n"        // 1
         "  gpu: h100-sxm\n"  // 2
         "  nodes: 1\n"       // 3
         "  gpus_per_node: 8\n"  // 4
         "  stragglers:\n"    // 5
         "    - " + entry + "\n" +  // 6
         workload;
}

void expect_bad(const std::string& entry, const std::string& key,
                std::vector<std::string> also, const std::string& kind = "graph",
                int line = 6) {
  TempDir tmp;
  const std::string config = (tmp / "c.yaml").string();
  write_text(config, config_with(entry, kind));
  const auto r = run_gcsim({"run", config, "-o", (tmp / "out").string(), "-q"});
  INFO("stragglers: " << entry << "\nstderr: " << r.err);
  CHECK(r.exit_status == 2);
  CHECK(r.err.find(config + ":" + std::to_string(line) + ":") != std::string::npos);
  CHECK(r.err.find("'" + key + "'") != std::string::npos);
  for (const auto& a : also) CHECK(r.err.find(a) != std::string::npos);
  CHECK(r.err.find("internal error") == std::string::npos);
  CHECK_FALSE(fs::exists(tmp / "out" / "summary.json"));
}

}  // namespace

TEST_CASE("straggler bad input: speed outside [1e-6, 1]", "[cli][straggler]") {
  expect_bad("{rank: 1, speed: 0}", "cluster.stragglers[0].speed", {"[1e-06, 1]", "got 0"});
  expect_bad("{rank: 1, speed: 1.5}", "cluster.stragglers[0].speed", {"[1e-06, 1]", "got 1.5"});
  expect_bad("{rank: 1, speed: 0.5, memory_speed: -0.1}", "cluster.stragglers[0].memory_speed",
             {"[1e-06, 1]"});
  // 1e-300 made the GPU model's per-wave overheads unrepresentable (exit 1).
  expect_bad("{rank: 1, speed: 1e-300}", "cluster.stragglers[0].speed", {"[1e-06, 1]", "got 1e-300"});
}

TEST_CASE("straggler bad input: a GPU outside the cluster", "[cli][straggler]") {
  expect_bad("{rank: 8, speed: 0.5}", "cluster.stragglers[0].rank", {"8 GPUs", "0 to 7"});
  expect_bad("{rank: -1, speed: 0.5}", "cluster.stragglers[0].rank", {"outside"});
  expect_bad("{node: 1, gpu: 0, speed: 0.5}", "cluster.stragglers[0].node", {"1 nodes"});
  expect_bad("{node: 0, gpu: 8, speed: 0.5}", "cluster.stragglers[0].gpu", {"8 GPUs"});
}

TEST_CASE("straggler bad input: ambiguous, repeated or misspelt entries", "[cli][straggler]") {
  expect_bad("{rank: 1, node: 0, gpu: 1, speed: 0.5}", "cluster.stragglers[0].rank",
             {"either rank or node and gpu"});
  expect_bad("{rank: 1, speed: 0.5}\n    - {node: 0, gpu: 1, speed: 0.7}",
             "cluster.stragglers[1].gpu", {"rank 1 is listed twice"}, "graph", 7);
  expect_bad("{rank: 1, sped: 0.5}", "cluster.stragglers[0].sped", {"speed"});
  expect_bad("{speed: 0.5}", "rank", {"missing"});
}

TEST_CASE("straggler bad input: not modelled for inference", "[cli][straggler]") {
  expect_bad("{rank: 1, speed: 0.5}", "cluster.stragglers", {"inference"}, "inference", 5);
}
