// gcsim plan's search (workloads/plan): the candidates it enumerates, counted
// by hand; the verdict of each rule (a broken constraint, memory, the
// estimate); and the thread-spread scoring with its shared pipeline plans
// equal to scoring each candidate alone.
#include "catch.h"
#include "gpu_test_specs.h"
#include "preset_fixtures.h"
#include "workloads/estimate/time_estimate.h"
#include "workloads/plan/search_space.h"
#include "workloads/plan/strategy_score.h"

using namespace gcsim;
namespace wp = gcsim::workloads::plan;
namespace wt = gcsim::workloads::training;
namespace est = gcsim::workloads::estimate;

namespace {

// Llama 3 8B cut to 4 layers, global batch 16.
wt::TrainingConfig small_base() {
  wt::TrainingConfig c;
  c.model = test::model_preset("llama3-8b");
  c.model.layers = 4;
  c.batch.global = 16;
  return c;
}

est::LinkRates hgx_links() {
  est::LinkRates l;
  l.scale_up_bytes_per_s = 450e9;
  l.scale_out_bytes_per_s = 50e9;
  l.gpus_per_node = 8;
  return l;
}

}  // namespace

TEST_CASE("plan: the candidates of 8 GPUs in one node, counted by hand", "[plan]") {
  // TP 1, 2, 4, 8 (powers of two up to the GPUs); CP 1, 2, 4, 8; PP divides
  // 8 / (TP CP) and is at most the 4 layers. (TP, CP, PP) with TP CP | 8:
  //   TP1: CP1 PP{1,2,4}, CP2 PP{1,2,4}, CP4 PP{1,2}, CP8 PP{1}: 4 with PP 1, 5 with PP > 1
  //   TP2: CP1 PP{1,2,4}, CP2 PP{1,2}, CP4 PP{1}:                3 with PP 1, 3 with PP > 1
  //   TP4: CP1 PP{1,2}, CP2 PP{1}:                               2 with PP 1, 1 with PP > 1
  //   TP8: CP1 PP{1}:                                            1 with PP 1
  // Schedules: PP 1 runs 1f1b only; PP > 1 gpipe, 1f1b, zb1p, dualpipe and
  // interleaved with one virtual-stage count (PP 2: 2 layers a stage, v 2;
  // PP 4: one layer a stage, v 2 tried and pruned) = 5.
  // Each (TP, CP, PP, schedule) x 5 micro-batches x 3 recompute x 4 ZeRO x
  // SP (off only at TP 1, on and off above): TP1 (4 + 25) x 60 = 1740,
  // TP2 (3 + 15) x 120 = 2160, TP4 (2 + 5) x 120 = 840, TP8 1 x 120 = 120.
  const wt::TrainingConfig base = small_base();
  const auto space = wp::default_search_space(base, 8, 8);
  CHECK(space.tp == std::vector<int>{1, 2, 4, 8});
  CHECK(space.cp == std::vector<int>{1, 2, 4, 8});
  const auto all = wp::enumerate_strategies(space, base, 8);
  CHECK(all.size() == 1740u + 2160u + 840u + 120u);
  for (const auto& s : all) {
    REQUIRE(s.tp * s.cp * s.pp * s.dp == 8);
    if (s.schedule != wt::Schedule::interleaved) REQUIRE(s.virtual_stages == 1);
    if (s.tp == 1) REQUIRE_FALSE(s.sequence_parallel);
  }
  // 16 GPUs in two nodes: TP goes to 16, across the two.
  CHECK(wp::default_search_space(base, 16, 8).tp == std::vector<int>{1, 2, 4, 8, 16});
}

TEST_CASE("plan: each verdict and its rule", "[plan]") {
  const models::gpu::GpuSpec gpu = test::h100_datasheet();
  const wp::PlanCluster cluster{&gpu, hgx_links(), 8};
  wt::TrainingConfig base = small_base();

  SECTION("a broken constraint is pruned under its config key") {
    wp::Strategy s;
    s.tp = 8;
    s.pp = 1;
    s.dp = 1;
    s.micro = 3;  // 16 sequences over dp 1 in micro-batches of 3
    const auto e = wp::score_strategy(wp::apply(base, s), cluster);
    CHECK(e.verdict == wp::StrategyScore::Verdict::pruned);
    CHECK(e.rule == "batch.global");
    CHECK(e.reason.find("multiple of micro (3)") != std::string::npos);
  }
  SECTION("memory: the full 8B model unsharded on each GPU does not fit 80 GB") {
    // Llama 3 8B has 8.03e9 parameters; weights 2 B, gradients 2 B and Adam
    // 12 B each: 16 B x 8.03e9 = 128 GB per GPU at DP 8, ZeRO-0, before any
    // activation.
    base.model = test::model_preset("llama3-8b");
    wp::Strategy s;
    s.dp = 8;
    s.micro = 2;
    const auto e = wp::score_strategy(wp::apply(base, s), cluster);
    CHECK(e.verdict == wp::StrategyScore::Verdict::out_of_memory);
    CHECK(e.rule == "memory");
    CHECK(e.memory_bytes > 16.0 * 8.0e9);
    // ZeRO-3 shards all 16 B over the 8: 16 GB of states, and it fits.
    s.zero_stage = 3;
    s.recompute = wt::Recompute::full;
    const auto z3 = wp::score_strategy(wp::apply(base, s), cluster);
    CHECK(z3.verdict == wp::StrategyScore::Verdict::scored);
  }
  SECTION("a scored candidate carries the estimate's step and its parts") {
    wp::Strategy s;
    s.tp = 2;
    s.pp = 2;
    s.dp = 2;
    s.schedule = wt::Schedule::one_f_one_b;
    const wt::TrainingConfig c = wp::apply(base, s);
    const auto e = wp::score_strategy(c, cluster);
    REQUIRE(e.verdict == wp::StrategyScore::Verdict::scored);
    const auto t = est::estimate_training_time(c, gpu, est::estimate_training_comm(c, hgx_links()));
    CHECK(e.step_s == t.step.value);
    CHECK(e.bubble_s == t.bubble.value);
    double exposed = 0;
    for (double x : e.exposed_s) exposed += x;
    CHECK(e.step_s == Approx(e.compute_s + e.bubble_s + e.optimizer_s + exposed).epsilon(1e-12));
    // 16 sequences of 8192 tokens.
    CHECK(e.tokens_per_s == Approx(16.0 * 8192.0 / e.step_s).epsilon(1e-12));
  }
}

TEST_CASE("plan: threads and shared pipeline plans give each candidate's own score", "[plan]") {
  const models::gpu::GpuSpec gpu = test::h100_datasheet();
  const wp::PlanCluster cluster{&gpu, hgx_links(), 8};
  const wt::TrainingConfig base = small_base();
  const auto all = wp::enumerate_strategies(wp::default_search_space(base, 8, 8), base, 8);
  const auto one = wp::score_strategies(base, all, cluster, 1, [](size_t) { return true; });
  const auto three = wp::score_strategies(base, all, cluster, 3, [](size_t) { return true; });
  // Half of them, as a rank of two would: the rest stay unscored.
  const auto half = wp::score_strategies(base, all, cluster, 2, [](size_t i) { return i % 2 == 0; });
  size_t scored = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    const auto alone = wp::score_strategy(wp::apply(base, all[i]), cluster);
    REQUIRE(one[i].verdict == alone.verdict);
    REQUIRE(one[i].step_s == alone.step_s);
    REQUIRE(one[i].memory_bytes == alone.memory_bytes);
    REQUIRE(three[i].step_s == alone.step_s);
    REQUIRE(three[i].rule == alone.rule);
    if (i % 2 == 0) REQUIRE(half[i].step_s == alone.step_s);
    if (i % 2 == 1) REQUIRE(half[i].rule.empty());
    scored += alone.verdict == wp::StrategyScore::Verdict::scored;
  }
  CHECK(scored > 0);
}
