// gcsim quiz (issue 9): the generator is a pure function of topic and seed,
// different seeds give different scenarios, and the worked answers equal
// hand computations from the published formulas. No simulation here (the
// scenario tests in tests/scenario/test_quiz_cli.cpp run it).
#include <set>
#include <string>

#include "catch.h"
#include "sim/cli/quiz_command.h"
#include "workloads/quiz/quiz.h"
#include "workloads/quiz/quiz_grader.h"

namespace wq = gcsim::workloads::quiz;

namespace {

const wq::PresetBook& book() {
  static const wq::PresetBook b = gcsim::cli::load_preset_book();
  return b;
}

double estimate_of(const wq::Quiz& q, const std::string& key) {
  for (const auto& x : q.quantities) {
    if (x.key == key) return x.estimate;
  }
  FAIL("no quantity " << key);
  return 0;
}

const wq::Topic kTopics[] = {wq::Topic::training, wq::Topic::inference, wq::Topic::network,
                             wq::Topic::reliability};

}  // namespace

TEST_CASE("quiz: the same topic and seed give byte-identical quizzes", "[quiz]") {
  for (wq::Topic t : kTopics) {
    for (uint64_t seed : {0ULL, 1ULL, 7ULL, 123456789ULL}) {
      const std::string a = wq::render_quiz(wq::make_quiz(t, seed, book()));
      const std::string b = wq::render_quiz(wq::make_quiz(t, seed, book()));
      CHECK(a == b);
    }
  }
}

TEST_CASE("quiz: different seeds draw different scenarios", "[quiz]") {
  for (wq::Topic t : kTopics) {
    std::set<std::string> scenarios;
    for (uint64_t seed = 1; seed <= 12; ++seed) {
      const wq::Quiz q = wq::make_quiz(t, seed, book());
      scenarios.insert(q.question);
    }
    INFO(wq::topic_name(t));
    // 12 draws from at least 3 x 3 x 2 choices: a generator stuck on one
    // scenario, or ignoring the seed, gives 1.
    CHECK(scenarios.size() >= 6);
  }
}

TEST_CASE("quiz: network worked answer equals the alpha-beta ring by hand", "[quiz]") {
  // Seed 1 draws 2 HGX nodes of h800-sxm (NVLink 200 GB/s), 400 Gb/s NICs,
  // 1 MiB, 8 flows on 8 uplinks.
  const wq::Quiz q = wq::make_quiz(wq::Topic::network, 1, book());
  REQUIRE(q.title == "All-reduce of 1 MiB on 16 h800-sxm over 400G NICs");
  // Ring (Thakur, Rabenseifner & Gropp 2005): 2(n-1) alpha + 2(n-1)/n S/B,
  // n 16, alpha 4 links x 0.5 us = 2 us, B = min(200, 8 x 50) GB/s:
  //   60 us + 2 x 15/16 x 1048576 / 200e9 s = 60 + 9.8304 us = 0.0698304 ms.
  CHECK(estimate_of(q, "ring_time_ms") == Approx(0.0698304).epsilon(1e-9));
  // nccl-tests PERFORMANCE.md: busbw = S/t x 2(n-1)/n = 28.155 GB/s.
  CHECK(estimate_of(q, "ring_busbw_gbps") == Approx(28.155072862).epsilon(1e-9));
  // Tree: 2 (1 x 2 us + 7 x 0.6 us) + 2 S / 200 GB/s = 12.4 + 10.48576 us.
  CHECK(estimate_of(q, "tree_time_ms") == Approx(0.02288576).epsilon(1e-9));
  // Birthday problem: 1 - 8!/8^8 = 1 - 40320/16777216; 1 - (7/8)^7.
  CHECK(estimate_of(q, "ecmp_collision_probability") == Approx(0.99759674072).epsilon(1e-9));
  CHECK(estimate_of(q, "ecmp_shared_fraction") == Approx(0.60730409622).epsilon(1e-9));
  // The Monte Carlo of the same hashing agrees within its noise (100k trials).
  for (const auto& x : q.quantities) {
    if (x.check_value) CHECK(*x.check_value == Approx(x.estimate).epsilon(0.01));
  }
}

TEST_CASE("quiz: inference KV bytes per token equal vLLM's arithmetic by hand", "[quiz]") {
  // Seed 1 draws qwen2.5-72b (80 layers, 8 KV heads of 128) on h100-sxm TP4.
  const wq::Quiz q = wq::make_quiz(wq::Topic::inference, 1, book());
  REQUIRE(q.title == "Serving qwen2.5-72b on h100-sxm TP4");
  // REFERENCE.md: 2 x layers x kv_heads x head_dim x 2 B = 2*80*8*128*2.
  CHECK(estimate_of(q, "kv_bytes_per_token") == 327680);
  // TP4 keeps 8/4 = 2 KV heads per GPU: 2*80*2*128*2.
  CHECK(estimate_of(q, "kv_bytes_per_token_per_gpu") == 81920);
  // A 4096-token request takes 4096/16 = 256 blocks.
  CHECK(estimate_of(q, "max_concurrent_4k") ==
        std::floor(estimate_of(q, "kv_blocks") / 256.0));
}

TEST_CASE("quiz: reliability MTBF and Daly interval equal the formulas by hand", "[quiz]") {
  // Seed 1 draws llama3-70b (70,553,706,496 parameters) on 16,384 GPUs in
  // the Llama 3 shape (3 tiers), storage 5 GB/s per node, 250 GB/s in all.
  const wq::Quiz q = wq::make_quiz(wq::Topic::reliability, 1, book());
  REQUIRE(q.title == "Checkpointing llama3-70b on 16384 GPUs");
  // Dubey et al. 2024: 419 unexpected interruptions in 54 x 24 = 1296 h on
  // this very shape: M = 1296/419 h = 3.09308 h = 11135.08 s.
  CHECK(estimate_of(q, "job_mtbf_h") == Approx(1296.0 / 419.0).epsilon(1e-6));
  CHECK(estimate_of(q, "interruptions_per_week") == Approx(168.0 * 419.0 / 1296.0).epsilon(1e-6));
  // delta = 14 P / N / 25 GB/s + 14 P / min(250, 2048 x 5) GB/s
  //       = 60,287,591 / 25e9 + 987,751,890,944 / 250e9 = 0.0024115 + 3.9510076 s.
  CHECK(estimate_of(q, "checkpoint_cost_s") == Approx(3.95341907).epsilon(1e-6));
  // Young sqrt(2 delta M) = 296.72 s; Daly (REFERENCE.md)
  // sqrt(2 delta M)[1 + sqrt(delta/2M)/3 + (delta/2M)/9] - delta = 294.09 s.
  CHECK(estimate_of(q, "young_interval_min") == Approx(296.7209179 / 60).epsilon(1e-6));
  CHECK(estimate_of(q, "daly_interval_min") == Approx(294.0911579 / 60).epsilon(1e-6));
  // Daly 2006 with R = 120 + 600 + 3.953 s: tau / (M e^(R/M)(e^((tau+delta)/M) - 1)).
  CHECK(estimate_of(q, "useful_fraction") == Approx(0.9123041920).epsilon(1e-6));
}

TEST_CASE("quiz: training communication per dimension equals Megatron's counts by hand",
          "[quiz]") {
  // Seed 1 draws GPT-3 175B (96 layers, h 12288, s 2048) on 256 A100, batch
  // 512; the worked layout is TP 8, PP 2, DP 16, 32 micro-batches.
  const wq::Quiz q = wq::make_quiz(wq::Topic::training, 1, book());
  REQUIRE(q.title == "Train gpt3-175b on 256 a100-sxm-80gb");
  // REFERENCE.md: TP moves 8 b s h (t-1)/t elements per layer per
  // micro-batch (SP's all-gather + reduce-scatter the same total), 2 B
  // each; Megatron-LM with SP also re-gathers the sequence-sharded inputs
  // of the QKV and FC1 GEMMs in the backward for their weight gradients
  // (2 more all-gathers of b s h): 10 b s h (t-1)/t per layer. 48 layers
  // per stage, 32 micro-batches:
  //   10 x 2048 x 12288 x 7/8 x 2 x 48 x 32 = 676,457,349,120 B.
  CHECK(estimate_of(q, "tp_bytes_per_step") == Approx(676457349120.0).epsilon(1e-9));
  // PP with SP: b s h / t x 2 B = 6,291,456 B per send. Each micro-batch
  // crosses the one stage boundary forward (stage 0 sends) and backward
  // (stage 1 sends): 2 (p - 1) / p = 1 send per GPU per micro-batch,
  // 32 x 6,291,456 = 201,326,592 B.
  CHECK(estimate_of(q, "pp_bytes_per_step") == Approx(201326592.0).epsilon(1e-9));
  // ZeRO-1 (Rajbhandari et al.): reduce-scatter of the gradients and
  // all-gather of the weights, each (d-1)/d x 2 B x the stage's parameters:
  // 2 x 15/16 x 2 x P_stage, P_stage ~ 175e9 / 16 ~ 10.98e9 -> ~4.1e10 B.
  CHECK(estimate_of(q, "dp_bytes_per_step") == Approx(2 * 15.0 / 16 * 2 * 10.98e9).epsilon(0.01));
  // The worked layout fits; TP 1 x PP 1 x DP 256 (175B x 16 B / 256 of
  // states alone plus 2 x 2 x 175e9 B of weights and gradients) does not.
  REQUIRE(q.judge);
  CHECK(q.judge({{"tp", 8}, {"pp", 2}, {"dp", 16}}) == "");
  CHECK(q.judge({{"tp", 1}, {"pp", 1}, {"dp", 256}}) != "");
  CHECK(q.judge({{"tp", 8}, {"pp", 2}, {"dp", 8}}) != "");  // 128 GPUs, not 256
}

TEST_CASE("quiz: grading counts answers within tolerance of either reference", "[quiz]") {
  const wq::Quiz q = wq::make_quiz(wq::Topic::network, 1, book());
  wq::Answers right, wrong;
  for (const auto& x : q.quantities) {
    right[x.key] = x.estimate * (1 + 0.5 * x.tolerance);  // inside the band
    wrong[x.key] = x.estimate * 2;                          // far outside
  }
  const wq::Grade good = wq::grade(q, right);
  CHECK(good.points == good.total);
  CHECK(good.total == static_cast<int>(q.quantities.size()));
  const wq::Grade bad = wq::grade(q, wrong);
  CHECK(bad.points == 0);
  CHECK(wq::render_grade(q, bad).find("Score: 0 / 6") != std::string::npos);
  // Unanswered keys score nothing but are listed.
  const wq::Grade none = wq::grade(q, {});
  CHECK(none.points == 0);
  CHECK(wq::render_grade(q, none).find("not answered") != std::string::npos);
  // within(): |answer - ref| <= tol |ref|.
  CHECK(wq::within(110, 100, 0.10));
  CHECK_FALSE(wq::within(110.01, 100, 0.10));
}
