// `gcsim plan` through the real command line on a small training config
// (Llama 3 8B cut to 4 layers of 2048 tokens on two 8-GPU H100 nodes): the
// files it writes and their contract keys, the counts adding up, the winner
// at least as fast as every layout simulated beside it (the config's own
// included), best.yaml reproducing the winner's step to the last digit, and
// bad input ending with exit status 2 and the key named.
#include <filesystem>
#include <string>

#include "catch.h"
#include "scenario/run_gcsim.h"
#include "scenario/small_training.h"

namespace fs = std::filesystem;
using gcsim::test::read_json;
using gcsim::test::small_training_config;
using gcsim::test::read_text;
using gcsim::test::run_gcsim;
using gcsim::test::TempDir;
using gcsim::test::write_text;

TEST_CASE("plan: a small training config, its files and a best.yaml that reproduces the winner",
          "[scenario][plan]") {
  TempDir tmp;
  write_text(tmp / "small.yaml", small_training_config("analytical"));
  const fs::path out = tmp / "plan";
  const auto r = run_gcsim({"plan", (tmp / "small.yaml").string(), "-o", out.string(), "-j", "2",
                            "--top", "3"});
  INFO(r.err);
  REQUIRE(r.exit_status == 0);
  const auto plan = read_json(out / "plan.json");

  // Every candidate is pruned by one rule or scored.
  const size_t evaluated = plan["candidates_evaluated"].get<size_t>();
  size_t pruned = 0;
  for (const auto& [rule, n] : plan["pruned"].items()) {
    pruned += n.get<size_t>();
    CHECK(plan["pruned_examples"].contains(rule));
  }
  CHECK(pruned + plan["candidates_scored"].get<size_t>() == evaluated);
  CHECK(plan["pruned"].contains("batch.global"));  // e.g. micro 16 x dp 16 > 32 sequences
  CHECK(plan["wall_time_s"].get<double>() > 0);

  // plan.csv: a header and one row per candidate.
  const std::string csv = read_text(out / "plan.csv");
  CHECK(static_cast<size_t>(std::count(csv.begin(), csv.end(), '\n')) == evaluated + 1);
  CHECK(csv.rfind("candidate,tp,cp,pp,virtual_stages,dp,ep,micro_batch,schedule,", 0) == 0);

  // The best: every chosen value, simulated, fits, and no simulated layout
  // that fits is faster (the config's own TP8 PP2 among them).
  const auto& best = plan["best"];
  REQUIRE(best.is_object());
  for (const char* k : {"tp", "cp", "pp", "virtual_stages", "dp", "ep", "micro_batch", "schedule",
                        "recompute", "zero_stage", "sequence_parallel", "step_time_s", "tokens_per_s"}) {
    CHECK(best.contains(k));
  }
  CHECK(best["fits"].get<bool>());
  CHECK(best["tp"].get<int>() * best["cp"].get<int>() * best["pp"].get<int>() * best["dp"].get<int>() == 16);
  const double step = best["step_time_s"].get<double>();
  // 32 sequences of 2048 tokens per step.
  CHECK(best["tokens_per_s"].get<double>() == Approx(32.0 * 2048.0 / step).epsilon(1e-9));
  bool own = false, across = false;
  for (const auto& l : plan["simulated"]) {
    if (l["status"] == "ok" && l["fits"].get<bool>()) CHECK(step <= l["step_time_s"].get<double>());
    const std::string as = l.value("known_as", "");
    if (as.find("the config's own layout") != std::string::npos) {
      own = true;
      CHECK(l["tp"] == 8);
      CHECK(l["pp"] == 2);
      CHECK(l["status"] == "ok");
    }
    if (as.find("TP across two nodes") != std::string::npos) {
      across = true;
      CHECK(l["tp"] == 16);
    }
  }
  CHECK(own);
  CHECK(across);
  const std::string md = read_text(out / "plan.md");
  CHECK(md.find("## Why the well-known layouts lose") != std::string::npos);
  CHECK(md.find("TP16 spans 2 nodes") != std::string::npos);
  CHECK(r.out.find("## Simulated layouts, fastest first") != std::string::npos);

  // best.yaml, run on its own, gives the winner's step exactly.
  const auto rerun = run_gcsim({"run", (out / "best.yaml").string(), "-o", (tmp / "rerun").string(), "-q"});
  INFO(rerun.err);
  REQUIRE(rerun.exit_status == 0);
  const auto summary = read_json(tmp / "rerun" / "summary.json");
  CHECK(summary["step_time_s"].get<double>() == step);
  CHECK(summary["parallelism"]["tp"] == best["tp"]);
}

TEST_CASE("plan: a serving config, deployments ranked by goodput per GPU", "[scenario][plan]") {
  TempDir tmp;
  const fs::path out = tmp / "plan";
  // Llama 3 8B on a node of two GPUs, 40 requests at 4 per second.
  const std::vector<std::string> sets{"-s", "cluster.gpus_per_node=2", "-s", "workload.requests.count=40"};
  std::vector<std::string> args{"plan", gcsim::test::source_path("configs/examples/inference_llama3_8b.yaml"), "-o",
                                out.string(), "-j", "2", "-q"};
  args.insert(args.end(), sets.begin(), sets.end());
  const auto r = run_gcsim(args);
  INFO(r.err);
  REQUIRE(r.exit_status == 0);
  const auto plan = read_json(out / "plan.json");
  CHECK(plan["kind"] == "inference");
  // (TP, PP, replicas) on 2 GPUs: (1,1,1), (1,1,2), (2,1,1), (1,2,1); x 3
  // max_num_seqs x 2 budgets x chunked prefill on and off = 48. The 12
  // without chunking at a 2048-token budget cannot hold an 8192-token
  // request in one step: vLLM refuses them, and so does the loader.
  CHECK(plan["candidates_evaluated"] == 48);
  CHECK(plan["pruned"]["workload.serving.scheduler.max_num_batched_tokens"] == 12);
  CHECK(plan["candidates_simulated"] == 36);
  const auto& best = plan["best"];
  REQUIRE(best.is_object());
  CHECK(best["slo_attainment"].get<double>() >= 0.9);
  CHECK(best["goodput_per_gpu"].get<double>() ==
        Approx(best["goodput_requests_per_s"].get<double>() / best["gpus_used"].get<int>()).epsilon(1e-12));
  for (const auto& d : plan["ranked"]) {
    if (d["slo_attainment"].get<double>() >= 0.9) CHECK(best["goodput_per_gpu"].get<double>() >= d["goodput_per_gpu"].get<double>());
  }
  const std::string csv = read_text(out / "plan.csv");
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 49);  // a header and 48 rows
  // best.yaml, run on its own, serves with the winner's goodput.
  const auto rerun = run_gcsim({"run", (out / "best.yaml").string(), "-o", (tmp / "rerun").string(), "-q"});
  INFO(rerun.err);
  REQUIRE(rerun.exit_status == 0);
  CHECK(read_json(tmp / "rerun" / "summary.json")["goodput_requests_per_s"].get<double>() ==
        best["goodput_requests_per_s"].get<double>());
  CHECK(fs::exists(out / "report.html"));
}

TEST_CASE("plan: bad input names the key and ends with exit status 2", "[cli][plan]") {
  TempDir tmp;
  write_text(tmp / "small.yaml", small_training_config("analytical"));
  const std::string config = (tmp / "small.yaml").string();
  SECTION("--gpus that is not a whole number of nodes") {
    const auto r = run_gcsim({"plan", config, "--gpus", "12", "-o", (tmp / "o").string()});
    CHECK(r.exit_status == 2);
    CHECK(r.err.find("'--gpus'") != std::string::npos);
    CHECK(r.err.find("gpus_per_node") != std::string::npos);
  }
  SECTION("a workload that is not training") {
    write_text(tmp / "graph.yaml", R"(cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 1}
workload:
  kind: graph
  ops:
    - {name: g, rank: 0, op: gemm, m: 64, n: 64, k: 64}
)");
    const auto r = run_gcsim({"plan", (tmp / "graph.yaml").string(), "-o", (tmp / "o").string()});
    CHECK(r.exit_status == 2);
    CHECK(r.err.find("graph.yaml:3: key 'workload.kind'") != std::string::npos);
  }
  SECTION("a serving config without SLOs") {
    write_text(tmp / "serve.yaml", R"(cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 1, scale_out: {topology: none}}
workload:
  kind: inference
  model: {preset: llama3-8b}
  requests: {count: 10, arrival: {kind: poisson, rate: 1}, prompt_len: 128, output_len: 16}
)");
    const auto r = run_gcsim({"plan", (tmp / "serve.yaml").string(), "-o", (tmp / "o").string()});
    CHECK(r.exit_status == 2);
    CHECK(r.err.find("key 'workload.slo'") != std::string::npos);
    CHECK(r.err.find("goodput") != std::string::npos);
  }
  SECTION("an unknown key in the config") {
    const auto r = run_gcsim({"plan", config, "-s", "workload.batch.globl=64", "-o", (tmp / "o").string()});
    CHECK(r.exit_status == 2);
    CHECK(r.err.find("globl") != std::string::npos);
    CHECK(r.err.find("global") != std::string::npos);  // the suggestion
  }
  SECTION("options out of range") {
    CHECK(run_gcsim({"plan", config, "-j", "0"}).exit_status == 2);
    CHECK(run_gcsim({"plan", config, "--top", "0"}).exit_status == 2);
    CHECK(run_gcsim({"plan"}).exit_status == 2);
    CHECK(run_gcsim({"plan", (tmp / "missing.yaml").string()}).exit_status == 2);
  }
  CHECK_FALSE(fs::exists(tmp / "o" / "plan.json"));
}
