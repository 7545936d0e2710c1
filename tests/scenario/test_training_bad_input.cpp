// Impossible training strategies through the real command line: each ends
// with exit status 2 and one message naming the file, the line, the key and
// the constraint broken, and writes no summary.json (DESIGN.md, command
// line contract). Configs are in tests/data/bad/train_*.yaml, each with a
// header saying what is wrong and where.
#include <filesystem>
#include <string>
#include <vector>

#include "catch.h"
#include "scenario/run_gcsim.h"

namespace fs = std::filesystem;
using gcsim::test::run_gcsim;
using gcsim::test::source_path;
using gcsim::test::TempDir;

namespace {

struct Expect {
  const char* file;
  int line;
  const char* key;
  std::vector<const char*> also;  // fragments naming the constraint
};

void expect_bad(const Expect& e) {
  TempDir tmp;
  const std::string config = source_path(std::string("tests/data/bad/") + e.file);
  const auto r = run_gcsim({"run", config, "-o", (tmp / "out").string(), "-q"});
  INFO("gcsim run " << e.file << "\nstderr: " << r.err);
  CHECK(r.exit_status == 2);
  CHECK(r.err.find(config + ":" + std::to_string(e.line) + ":") != std::string::npos);
  CHECK(r.err.find(std::string("'") + e.key + "'") != std::string::npos);
  for (const char* f : e.also) CHECK(r.err.find(f) != std::string::npos);
  CHECK(r.err.find("internal error") == std::string::npos);
  CHECK_FALSE(fs::exists(tmp / "out" / "summary.json"));
}

}  // namespace

TEST_CASE("training bad input: TP must divide the heads", "[cli][training]") {
  expect_bad({"train_tp_heads.yaml", 12, "workload.parallelism.tp", {"tp (3)", "heads (32)"}});
}

TEST_CASE("training bad input: PP must divide the layers without a remainder policy",
          "[cli][training]") {
  expect_bad({"train_pp_layers.yaml", 14, "workload.parallelism.pp",
              {"pp (5)", "layers (32)", "layer_split: fewer_at_ends"}});
}

TEST_CASE("training bad input: EP must divide the experts", "[cli][training]") {
  expect_bad({"train_ep_experts.yaml", 15, "workload.parallelism.ep", {"ep (3)", "experts (8)"}});
  expect_bad({"train_ep_dense.yaml", 13, "workload.parallelism.ep", {"no experts"}});
}

TEST_CASE("training bad input: tp x cp x pp x dp must equal the GPUs", "[cli][training]") {
  expect_bad({"train_product.yaml", 11, "workload.parallelism", {"= 32", "16 GPUs"}});
}

TEST_CASE("training bad input: the batch must split into micro-batches per replica",
          "[cli][training]") {
  expect_bad({"train_batch.yaml", 11, "workload.batch.global", {"global batch (10)", "dp (4)"}});
}

TEST_CASE("training bad input: schedule constraints", "[cli][training]") {
  expect_bad({"train_interleaved.yaml", 15, "workload.parallelism.virtual_stages",
              {"pp x virtual_stages (12)", "layers (32)"}});
  expect_bad({"train_dualpipe_odd.yaml", 13, "workload.parallelism.pp", {"even pp", "got 3"}});
}

TEST_CASE("training bad input: model and precision", "[cli][training]") {
  expect_bad({"train_fp8_a100.yaml", 11, "workload.precision", {"fp8", "a100-sxm-80gb"}});
  expect_bad({"train_unknown_preset.yaml", 9, "workload.model.preset",
              {"llama3-9b", "did you mean 'llama3-8b'?"}});
  expect_bad({"train_kv_heads.yaml", 12, "workload.model.kv_heads", {"kv_heads (5)", "heads (32)"}});
}

TEST_CASE("training bad input: unknown keys and placement", "[cli][training]") {
  expect_bad({"train_unknown_key.yaml", 12, "workload.parallelism.tensor_parallel", {"unknown key"}});
  expect_bad({"train_order.yaml", 12, "workload.parallelism.order", {"'xp'"}});
}

TEST_CASE("training bad input: optimizer settings", "[cli][training]") {
  expect_bad({"train_grad_clip.yaml", 14, "workload.optimizer.grad_clip", {"must be >= 0"}});
  expect_bad({"train_overlap_zero2.yaml", 11, "workload.parallelism.overlap_grad_reduce",
              {"zero_stage 0 or 1", "ZeRO-2/3"}});
  expect_bad({"train_optimizer_step_word.yaml", 14, "workload.optimizer.step",
              {"expected true or false", "'sometimes'"}});
  expect_bad({"train_optimizer_step_zero.yaml", 14, "workload.optimizer.step",
              {"zero_stage: 0"}});
}

TEST_CASE("training bad input: DP gradient bucket size", "[cli][training][buckets]") {
  expect_bad({"train_dp_bucket_zero.yaml", 10, "workload.parallelism.dp_bucket",
              {"must be positive", "auto"}});
  expect_bad({"train_dp_bucket_negative.yaml", 10, "workload.parallelism.dp_bucket",
              {"must not be negative"}});
  expect_bad({"train_dp_bucket_word.yaml", 10, "workload.parallelism.dp_bucket",
              {"'big' is not a byte size"}});
  // Set from the command line: the message names the -s option.
  TempDir tmp;
  const auto r = run_gcsim({"run", source_path("calibration/validation/strategy_step/dp4.yaml"), "-s",
                            "workload.parallelism.dp_bucket=0B", "-o", (tmp / "out").string(), "-q"});
  INFO(r.err);
  CHECK(r.exit_status == 2);
  CHECK(r.err.find("-s workload.parallelism.dp_bucket=0B") != std::string::npos);
  CHECK(r.err.find("must be positive") != std::string::npos);
  CHECK_FALSE(fs::exists(tmp / "out" / "summary.json"));
}

TEST_CASE("training bad input: framework profile", "[cli][training][framework]") {
  expect_bad({"train_framework.yaml", 11, "workload.framework",
              {"pytorch", "megatron", "pytorch-eager", "torch-compile"}});
  expect_bad({"train_elementwise_bandwidth.yaml", 12, "workload.elementwise_bandwidth",
              {"(0, 1]"}});
  expect_bad({"train_host_overhead.yaml", 12, "workload.host_overhead", {"fast"}});
  expect_bad({"train_generic_ops.yaml", 12, "workload.generic_ops_per_element",
              {"(0, 10000]"}});
  expect_bad({"train_reduction_ops.yaml", 12, "workload.reduction_ops_per_element",
              {"(0, 10000]"}});
  expect_bad({"train_reduction_cycles.yaml", 12, "workload.reduction_cycles_per_row",
              {"[0, 1000000]"}});
  expect_bad({"train_sfu_rate.yaml", 4, "cluster.gpu.sfu_per_clock_per_sm", {"(0, 128]"}});
}

TEST_CASE("training bad input: GEMM split-K slice and eager softmax terms", "[cli][training]") {
  expect_bad({"train_split_k_slice.yaml", 4, "cluster.gpu.efficiency.gemm_split_k_min_slice", {"[0, "}});
  expect_bad({"train_softmax_cycles.yaml", 4, "cluster.gpu.efficiency.softmax.block_cycles_per_element",
              {"[0, 64]"}});
  expect_bad({"train_softmax_reads.yaml", 4, "cluster.gpu.efficiency.softmax.multipass_reads", {"[1, 3]"}});
}

TEST_CASE("training bad input: attention_kernel not a family, or not on this GPU",
          "[cli][training][attention]") {
  expect_bad({"train_attention_kernel.yaml", 13, "workload.attention_kernel",
              {"flash4", "flash2", "flash3", "cudnn", "unfused"}});
  expect_bad({"train_attention_flash3_a100.yaml", 13, "workload.attention_kernel",
              {"flash3 does not run on a100-sxm-80gb", "needs a Hopper GPU"}});
}
