// `workload.kind: training` through the gcsim command: the summary.json
// contract (DESIGN.md: step_time_s, tokens_per_s, tflops_per_gpu, mfu, hfu,
// bubble_fraction, memory.{peak_bytes_per_gpu, fits, breakdown}, breakdown),
// its internal consistency (parts sum to the whole, tokens/s from the batch),
// preset overrides, a config that does not fit still getting its step time,
// the trace's streams, determinism, and a sweep with an impossible point.
#include <filesystem>
#include <string>

#include "catch.h"
#include "scenario/run_gcsim.h"

namespace fs = std::filesystem;
using gcsim::test::read_json;
using gcsim::test::read_text;
using gcsim::test::run_gcsim;
using gcsim::test::run_summary;
using gcsim::test::TempDir;
using gcsim::test::write_text;

namespace {

// Llama 3 8B cut to 4 layers and 1024 tokens on 2 HGX H100 nodes.
const char* kSmall = R"(
cluster: {gpu: h100-sxm, nodes: 2, gpus_per_node: 8, scale_out: {topology: fat-tree, nic_bandwidth: 400Gbps}}
workload:
  kind: training
  model: {preset: llama3-8b, layers: 4, seq_len: 1024}
  batch: {global: 16, micro: 1}
  parallelism: {tp: 4, pp: 2, dp: 2, sequence_parallel: true}
  optimizer: {zero_stage: 1}
)";

}  // namespace

TEST_CASE("training run: summary.json has the contract's figures, consistent",
          "[scenario][training]") {
  const auto s = run_summary(kSmall);
  CHECK(s["kind"] == "training");
  const double step = s["step_time_s"].get<double>();
  CHECK(step > 0);
  CHECK(step == s["simulated_time_s"].get<double>());
  // 16 sequences of 1024 tokens per step.
  CHECK(s["tokens_per_s"].get<double>() == Approx(16 * 1024 / step));
  CHECK(s["model"]["tokens_per_step"] == 16 * 1024);
  CHECK(s["model"]["name"] == "llama3-8b");
  const double mfu = s["mfu"].get<double>(), hfu = s["hfu"].get<double>();
  CHECK(mfu > 0.0);
  CHECK(mfu < 1.0);
  CHECK(hfu == Approx(mfu));  // no recompute: hardware FLOPs are the model's
  // TFLOP/s per GPU = MFU x the bf16 peak (989.4 TF/s).
  CHECK(s["tflops_per_gpu"].get<double>() == Approx(mfu * 989.4).epsilon(1e-6));
  const double bubble = s["bubble_fraction"].get<double>();
  CHECK(bubble > 0.0);
  CHECK(bubble < 0.5);
  // The breakdown charges every picosecond of the step once.
  const auto& b = s["breakdown"];
  double sum = b["compute_s"].get<double>() + b["optimizer_s"].get<double>() +
               b["bubble_s"].get<double>();
  for (const char* d : {"tp", "cp", "ep", "pp", "dp"}) sum += b["exposed_comm_s"][d].get<double>();
  CHECK(sum == Approx(step).epsilon(1e-9));
  CHECK(b["bubble_s"].get<double>() / step == Approx(bubble));
  CHECK(b["exposed_comm_s"]["tp"].get<double>() > 0);
  // Memory: the parts add up, it fits, and the simulated HBM ledger reached
  // the analytical peak.
  const auto& m = s["memory"];
  CHECK(m["fits"] == true);
  int64_t parts = 0;
  for (const auto& [k, v] : m["breakdown"].items()) parts += v.get<int64_t>();
  CHECK(std::abs(parts - m["peak_bytes_per_gpu"].get<int64_t>()) <= 8);
  CHECK(std::abs(m["simulated_peak_bytes"].get<int64_t>() - m["peak_bytes_per_gpu"].get<int64_t>()) <=
        64);
  CHECK(s["simulation"]["simulated_ranks"] == 2);  // one per pipeline stage
  CHECK(s["per_rank"].size() == 2);
}

TEST_CASE("training run: a preset's fields can be overridden beside it", "[scenario][training]") {
  const auto s = run_summary(kSmall, {"-s", "workload.model.seq_len=2048"});
  CHECK(s["config"]["workload"]["model"]["preset"] == "llama3-8b");
  CHECK(s["config"]["workload"]["model"]["seq_len"] == 2048);
  CHECK(s["model"]["tokens_per_step"] == 16 * 2048);
  // Llama 3 8B's attention is GQA 32/8 from the preset.
  CHECK(s["config"]["workload"]["model"]["kv_heads"] == 8);
}

TEST_CASE("training run: a config that does not fit reports so, with its step time",
          "[scenario][training]") {
  // Llama 3 70B on 8 H100s with TP 8 alone: 141 GB of bf16 weights plus
  // gradients and Adam states (~1.1 TB) cannot fit in 8 x 80 GB.
  const char* big = R"(
cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 8}
workload:
  kind: training
  model: {preset: llama3-70b, layers: 8, seq_len: 1024}
  batch: {global: 1}
  parallelism: {tp: 8}
)";
  const auto s = run_summary(big, {"-s", "workload.model.layers=80"});
  CHECK(s["memory"]["fits"] == false);
  CHECK(s["memory"]["peak_bytes_per_gpu"].get<double>() > s["memory"]["capacity_bytes"].get<double>());
  CHECK(s["memory"]["breakdown"]["optimizer_states"].get<double>() > 80e9);
  CHECK(s["step_time_s"].get<double>() > 0);
  CHECK(!s.contains("simulated_peak_bytes"));
}

TEST_CASE("training run: the trace shows each rank's compute and communication streams",
          "[scenario][training]") {
  TempDir tmp;
  write_text(tmp / "c.yaml", kSmall);
  const auto r = run_gcsim({"run", (tmp / "c.yaml").string(), "-o", (tmp / "out").string(), "-q",
                            "--trace"});
  REQUIRE(r.exit_status == 0);
  const std::string trace = read_text(tmp / "out" / "trace.json");
  for (const char* stream : {"\"compute\"", "\"tp\"", "\"dp\"", "\"pp send next\"", "\"pp recv prev\""}) {
    CHECK(trace.find(stream) != std::string::npos);
  }
  CHECK(trace.find("F m0 L0 qkv") != std::string::npos);
  CHECK(trace.find("B m7 L3 fc1 wgrad") != std::string::npos);
}

TEST_CASE("training run: same config, same output", "[scenario][training]") {
  auto a = run_summary(kSmall), b = run_summary(kSmall);
  a.erase("wall_time_s");
  b.erase("wall_time_s");
  CHECK(a.dump() == b.dump());
}

TEST_CASE("sweep: axes crossed, impossible points skipped with the reason, ranked table",
          "[scenario][training]") {
  TempDir tmp;
  // 24 GPUs, dp derived from tp x pp.
  write_text(tmp / "base.yaml", R"(
cluster: {gpu: h100-sxm, nodes: 3, gpus_per_node: 8, scale_out: {topology: fat-tree, nic_bandwidth: 400Gbps}}
workload:
  kind: training
  model: {preset: llama3-8b, layers: 4, seq_len: 1024}
  batch: {global: 24, micro: 1}
  parallelism: {tp: 4, pp: 2}
)");
  write_text(tmp / "study.yaml", R"(
name: tiny
base: base.yaml
axes:
  workload.parallelism.tp: [4, 3]
  workload.batch.micro: [1, 2]
)");
  const auto r = run_gcsim({"sweep", (tmp / "study.yaml").string(), "-o", (tmp / "out").string(),
                            "-j", "2"});
  INFO(r.err);
  REQUIRE(r.exit_status == 0);
  const std::string csv = read_text(tmp / "out" / "results.csv");
  // tp 4 (dp 3) runs with either micro-batch; tp 3 does not divide 32 heads.
  CHECK(csv.find("point,case,workload.parallelism.tp,workload.batch.micro,status") == 0);
  CHECK(csv.find(",4,1,ok,") != std::string::npos);
  CHECK(csv.find(",4,2,ok,") != std::string::npos);
  CHECK(csv.find(",3,1,skipped,") != std::string::npos);
  CHECK(csv.find(",3,2,skipped,") != std::string::npos);
  CHECK(csv.find("must divide the attention heads") != std::string::npos);
  const std::string md = read_text(tmp / "out" / "results.md");
  CHECK(md.find("| 1 | tp=4, micro=") != std::string::npos);
  CHECK(md.find("| 2 | tp=4, micro=") != std::string::npos);
  CHECK(md.find("Not run:") != std::string::npos);
  CHECK(r.err.find("[sweep] 4/4") != std::string::npos);
}
