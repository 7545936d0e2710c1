// Bad inference configs through the real command line: exit status 2, one
// message naming the file, the line and the key (a trace's own file and
// line for a malformed trace), and no summary.json. Each config lives in
// tests/data/bad/infer_*.yaml with a header saying what is wrong.
#include <filesystem>
#include <string>
#include <vector>

#include "catch.h"
#include "scenario/run_gcsim.h"

namespace fs = std::filesystem;
using gcsim::test::GcsimResult;
using gcsim::test::run_gcsim;
using gcsim::test::source_path;
using gcsim::test::TempDir;

namespace {

struct BadInference {
  const char* file;   // under tests/data/bad/
  const char* where;  // "file:line" the message must start with, relative to tests/data/bad/
  const char* key;    // dotted key the message must name
  std::vector<const char*> also;
};

void expect_bad(const BadInference& e) {
  TempDir tmp;
  const std::string dir = source_path("tests/data/bad/");
  const fs::path out = tmp / "out";
  const GcsimResult r = run_gcsim({"run", dir + e.file, "-o", out.string(), "-q"});
  INFO("gcsim run " << e.file << "\nstderr: " << r.err);
  CHECK(r.exit_status == 2);
  CHECK(r.err.find(dir + e.where + ":") != std::string::npos);
  CHECK(r.err.find(std::string("'") + e.key + "'") != std::string::npos);
  for (const char* f : e.also) CHECK(r.err.find(f) != std::string::npos);
  CHECK(r.err.find("internal error") == std::string::npos);
  CHECK_FALSE(fs::exists(out / "summary.json"));
}

}  // namespace

TEST_CASE("bad inference input: unknown arrival process", "[cli][inference]") {
  expect_bad({"infer_unknown_arrival.yaml", "infer_unknown_arrival.yaml:10",
              "workload.requests.arrival.kind", {"did you mean 'poisson'?"}});
}

TEST_CASE("bad inference input: negative rate", "[cli][inference]") {
  expect_bad({"infer_negative_rate.yaml", "infer_negative_rate.yaml:10",
              "workload.requests.arrival.rate", {"must be positive"}});
}

TEST_CASE("bad inference input: block_size not a power of two, or zero", "[cli][inference]") {
  expect_bad({"infer_block_size.yaml", "infer_block_size.yaml:9",
              "workload.serving.scheduler.block_size", {"power of two", "24"}});
  expect_bad({"infer_block_size_zero.yaml", "infer_block_size_zero.yaml:9",
              "workload.serving.scheduler.block_size", {"power of two", "got 0"}});
}

TEST_CASE("bad inference input: V0 budget below max_model_len without chunking",
          "[cli][inference]") {
  expect_bad({"infer_v0_budget.yaml", "infer_v0_budget.yaml:12",
              "workload.serving.scheduler.max_num_batched_tokens", {"4096", "8192"}});
}

TEST_CASE("bad inference input: the model does not fit at the chosen TP", "[cli][inference]") {
  expect_bad({"infer_model_too_big.yaml", "infer_model_too_big.yaml:8", "workload.serving.tp",
              {"does not fit in GPU memory", "131.42 GiB of weights", "raise tp or pp"}});
}

TEST_CASE("bad inference input: one max_model_len request cannot fit in the KV cache",
          "[cli][inference]") {
  expect_bad({"infer_kv_too_small.yaml", "infer_kv_too_small.yaml:10",
              "workload.serving.scheduler.max_model_len", {"125000 KV blocks", "28068"}});
}

TEST_CASE("bad inference input: trace file missing or malformed", "[cli][inference]") {
  expect_bad({"infer_trace_missing.yaml", "infer_trace_missing.yaml:9", "workload.requests.trace",
              {"no_such_trace.csv"}});
  // The malformed line is named in the trace file itself.
  expect_bad({"infer_trace_bad.yaml", "infer_trace_bad.csv:4", "workload.requests.trace",
              {"prompt_tokens 'lots' is not a number"}});
}

TEST_CASE("bad inference input: more GPUs than the cluster, bad TP, swap on V1, search without SLO",
          "[cli][inference]") {
  expect_bad({"infer_too_many_replicas.yaml", "infer_too_many_replicas.yaml:8",
              "workload.serving.replicas", {"needs 12 GPUs", "has 8"}});
  expect_bad({"infer_tp_heads.yaml", "infer_tp_heads.yaml:9", "workload.serving.tp",
              {"32 attention heads"}});
  expect_bad({"infer_swap_v1.yaml", "infer_swap_v1.yaml:9",
              "workload.serving.scheduler.preemption", {"recompute only"}});
  expect_bad({"infer_search_no_slo.yaml", "infer_search_no_slo.yaml:4", "workload.slo",
              {"needs at least one SLO"}});
}

TEST_CASE("bad inference input: attention_kernel not a family", "[cli][inference][attention]") {
  expect_bad({"infer_attention_kernel.yaml", "infer_attention_kernel.yaml:6",
              "workload.attention_kernel", {"fa2", "cudnn"}});
}

TEST_CASE("bad inference input: workload.framework and host_overhead", "[cli][inference]") {
  expect_bad({"infer_framework.yaml", "infer_framework.yaml:5", "workload.framework",
              {"'megatron' is not one of vllm | pytorch-eager"}});
  expect_bad({"infer_framework_moe.yaml", "infer_framework_moe.yaml:5", "workload.framework",
              {"pytorch-eager", "experts"}});
  expect_bad({"infer_framework_mla.yaml", "infer_framework_mla.yaml:5", "workload.framework",
              {"pytorch-eager", "MLA"}});
  expect_bad({"infer_host_overhead.yaml", "infer_host_overhead.yaml:6", "workload.host_overhead",
              {"must not be negative"}});
  expect_bad({"infer_elementwise_bandwidth.yaml", "infer_elementwise_bandwidth.yaml:6",
              "workload.elementwise_bandwidth", {"must be in (0, 1]"}});
}
