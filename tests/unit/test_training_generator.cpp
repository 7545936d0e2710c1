// The training generator end to end on the cluster model: the programs are
// valid IR, the mirrored shortcut gives the full per-rank simulation's
// result to the picosecond, and with free communication the simulated
// bubble matches the schedules' closed forms.
#include <memory>

#include "catch.h"
#include "gpu_test_specs.h"
#include "sim/scenario/model_spec_loader.h"
#include "training_replay.h"
#include "workloads/models/model_formulas.h"
#include "workloads/training/memory_model.h"
#include "workloads/training/step_breakdown.h"
#include "workloads/training/symmetric_executor.h"
#include "workloads/training/training_generator.h"

using namespace gcsim;
using namespace gcsim::workloads::training;

namespace {

struct Run : test::TrainingStep {
  BreakdownResult breakdown;
};

// Replays the step on `nodes` x 8 H100-like GPUs. `free_comm`: zero
// latency and unbounded bandwidth, collectives hold no SMs. `one_queue`:
// Megatron's one launch queue (NCCL kernels take SMs in issue order).
Run run(const TrainingConfig& c, bool mirror, bool free_comm = false, int gpus_per_node = 8,
        bool one_queue = false) {
  Run out;
  GeneratorOptions o;
  o.mirror = mirror;
  o.gpus_per_node = gpus_per_node;
  out.w = generate_training(c, o);
  INFO(workloads::validate(*out.w.graph));
  REQUIRE(workloads::validate(*out.w.graph).empty());
  models::cluster::ClusterModelConfig cfg;
  cfg.gpu = test::h100_datasheet();
  cfg.num_ranks = c.gpus();
  cfg.fabric.gpus_per_node = gpus_per_node;
  cfg.fabric.scale_up_bandwidth = sim::Bandwidth::gb_per_s(free_comm ? 1e12 : 450);
  cfg.fabric.scale_up_latency = free_comm ? sim::Duration::zero() : sim::ns(int64_t{600});
  cfg.fabric.scale_out_bandwidth = sim::Bandwidth::gb_per_s(free_comm ? 1e12 : 50);
  cfg.fabric.scale_out_latency = free_comm ? sim::Duration::zero() : sim::us(int64_t{2});
  cfg.collective_sms = free_comm ? 0 : 16;
  cfg.serial_launch_queue = one_queue;
  test::replay_training(out, cfg);
  std::vector<int> observed;
  for (int r : out.w.simulated) {
    if (!out.w.graph->program(r).ops.empty()) observed.push_back(r);
  }
  // The ranks the mirrored run keeps are the representatives either way.
  GeneratorOptions mo;
  mo.gpus_per_node = gpus_per_node;
  std::vector<int> reps = generate_training(c, mo).simulated;
  out.breakdown = step_breakdown(*out.w.graph, out.w, out.records, reps, out.end,
                                  cfg.gpu.kernel_launch_latency);
  return out;
}

}  // namespace

TEST_CASE("training: mirrored ranks give the full simulation's step exactly",
          "[training][generator]") {
  // 16 GPUs on 2 nodes: TP 2 x CP 2 x PP 2 x DP 2, SP, ZeRO-1, 1F1B.
  TrainingConfig c;
  c.model = test::small_llama(4);
  c.parallel.tp = 2;
  c.parallel.cp = 2;
  c.parallel.pp = 2;
  c.parallel.dp = 2;
  c.parallel.sequence_parallel = true;
  c.batch = {8, 1};
  c.optimizer.zero_stage = 1;
  REQUIRE(!check_strategy(c, 16));
  // Under CUDA's many launch queues and Megatron's one (each NCCL kernel
  // holding its SMs from its rank's issue, p2p included, either way).
  for (const bool one_queue : {false, true}) {
    INFO("one launch queue: " << one_queue);
    const Run mirrored = run(c, true, false, 8, one_queue);
    const Run full = run(c, false, false, 8, one_queue);
    CHECK(mirrored.w.mirrored);
    CHECK(mirrored.w.simulated.size() == 2);
    CHECK(full.w.simulated.size() == 16);
    CHECK(mirrored.end == full.end);
    // Every op of the representatives ran at the same picoseconds.
    std::map<std::pair<int, uint32_t>, std::pair<sim::Time, sim::Time>> want;
    for (const auto& r : full.records) want[{r.rank, r.op}] = {r.start, r.end};
    size_t compared = 0;
    for (const auto& r : mirrored.records) {
      auto it = want.find({r.rank, r.op});
      REQUIRE(it != want.end());
      CHECK(it->second.first == r.start);
      CHECK(it->second.second == r.end);
      ++compared;
    }
    CHECK(compared > 500);
    for (size_t k = 0; k < kCategories; ++k) {
      CHECK(mirrored.breakdown.mean.seconds[k] == Approx(full.breakdown.mean.seconds[k]));
    }
  }
}

namespace {

// Four layers per pipeline stage of a 4096-wide model, a vocabulary of 8 so
// that the embedding and head add little to the first and last stages.
TrainingConfig bubble_config(Schedule s, int pp, int v, int m) {
  TrainingConfig c;
  c.model = test::small_llama(4 * pp * v);
  c.model.hidden = 4096;
  c.model.heads = 32;
  c.model.kv_heads = 8;
  c.model.ffn_hidden = 11008;
  c.model.vocab = 8;
  c.parallel.pp = pp;
  c.parallel.schedule = s;
  c.parallel.virtual_stages = v;
  c.batch = {m, 1};
  REQUIRE(!check_strategy(c, pp));
  return c;
}

// Bubble over compute (the ideal time), mean over pipeline ranks.
double bubble_ratio(const Run& r) {
  return r.breakdown.mean.bubble_s() / r.breakdown.mean.of(OpCategory::compute);
}

}  // namespace

TEST_CASE("training: simulated bubbles with free communication match the closed forms",
          "[training][generator]") {
  SECTION("1F1B: (p-1)/m") {
    for (int m : {8, 16}) {
      const Run r = run(bubble_config(Schedule::one_f_one_b, 4, 1, m), false, true);
      INFO("m " << m);
      CHECK(bubble_ratio(r) == Approx(3.0 / m).epsilon(0.02));
    }
  }
  SECTION("GPipe: (p-1)/m, as 1F1B") {
    const Run r = run(bubble_config(Schedule::gpipe, 4, 1, 8), false, true);
    CHECK(bubble_ratio(r) == Approx(3.0 / 8).epsilon(0.02));
  }
  SECTION("interleaved: (p-1)/(v m)") {
    const Run r = run(bubble_config(Schedule::interleaved, 4, 2, 8), false, true);
    CHECK(bubble_ratio(r) == Approx(3.0 / (2 * 8)).epsilon(0.03));
  }
  SECTION("ZB1P and DualPipe against (p-1)(F+B-2W) and (p/2-1)(F&B+B-3W)") {
    // F, B (full backward) and W (its weight GEMMs) of one micro-batch on
    // one stage, measured in 1F1B, each kernel with its launch latency.
    const int p = 4, m = 8;
    const Run base = run(bubble_config(Schedule::one_f_one_b, p, 1, m), false, true);
    const int rank = base.w.simulated[1];
    double f_first = 1e30, f_last = 0, b_first = 1e30, b_last = 0, w = 0;
    for (const auto& rec : base.records) {
      if (rec.rank != rank) continue;
      const auto& op = base.w.graph->program(rank).ops[rec.op];
      if (op.kind != workloads::OpKind::compute) continue;
      const std::string& name = base.w.graph->name(op.name);
      const double start = rec.start.seconds() - 2e-6, end = rec.end.seconds();
      if (name.rfind("F m0 ", 0) == 0) {
        f_first = std::min(f_first, start);
        f_last = std::max(f_last, end);
      }
      if (name.rfind("B m0 ", 0) == 0) {
        b_first = std::min(b_first, start);
        b_last = std::max(b_last, end);
        if (name.find("wgrad") != std::string::npos) w += end - start;
      }
    }
    const double f = f_last - f_first, b = b_last - b_first;
    REQUIRE(w > 0);
    CHECK(f + b == Approx(base.breakdown.mean.of(OpCategory::compute) / m).epsilon(0.01));
    const Run zb = run(bubble_config(Schedule::zb1p, p, 1, m), false, true);
    CHECK(zb.breakdown.mean.bubble_s() == Approx((p - 1) * (f + b - 2 * w)).epsilon(0.04));
    // DualPipe runs a forward and a backward at once on two streams, which
    // share the GPU: F&B is what one such pair took, from the busy time of
    // a middle rank less its single passes.
    const Run dual = run(bubble_config(Schedule::dualpipe, p, 1, m), false, true);
    const int r1 = 1;
    double singles = 0;
    int pairs = 0;
    for (const Pass& x : dual.w.plan.passes[r1]) {
      switch (x.kind) {
        case PassKind::forward: singles += f; break;
        case PassKind::backward: singles += b; break;
        case PassKind::backward_input: singles += b - w; break;
        case PassKind::weight: singles += w; break;
        case PassKind::forward_backward: ++pairs; break;
      }
    }
    const double busy = dual.breakdown.per_rank[r1].of(OpCategory::compute);
    const double f_and_b = (busy - singles) / pairs;
    // Overlapping the two never costs; it gains only where a kernel leaves
    // SMs idle. On this datasheet GPU the pair took F + B less a little
    // until the GEMM tiles' arithmetic and loads overlapped as a p-norm
    // (2026-11-28); since, F + B to 1e-9 (not established why: README,
    // "GEMM tiles' overlap").
    CHECK(f_and_b <= (f + b) * (1.0 + 1e-9));
    CHECK(f_and_b > 0.8 * (f + b));
    // DeepSeek's (p/2-1)(F&B+B-3W) assumes an input-gradient half as long
    // as the forward (exact then: test_training_pipeline.cpp); here B - W
    // exceeds F, so the simulated bubble is checked against the same
    // schedule run with the measured pass costs and free communication.
    const PassCosts measured{f, b - w, w, f_and_b};
    const Evaluation e = evaluate(dual.w.plan, measured);
    CHECK(dual.breakdown.per_rank[r1].bubble_s() == Approx(e.idle[r1]).epsilon(0.03));
    CHECK(dual.breakdown.per_rank[r1].bubble_s() <= (p / 2 - 1) * (f_and_b + b - 3 * w));
    // Both beat 1F1B's (p-1)(F+B).
    CHECK(zb.breakdown.mean.bubble_s() < base.breakdown.mean.bubble_s());
    CHECK(dual.breakdown.mean.bubble_s() < zb.breakdown.mean.bubble_s());
  }
}

TEST_CASE("training: uneven expert load mirrors EP on the hot rank and still equals the full run",
          "[training][generator]") {
  // A 4-layer MoE (8 experts, top 2) on 16 GPUs: TP 2, PP 2, DP 4 with EP 2
  // (expert data parallel 2), routing skewed Zipf 1.5.
  TrainingConfig c;
  c.model = test::small_llama(4);
  c.model.moe = {8, 2, 2816, 1, 1, 0, 1.5};
  c.parallel.tp = 2;
  c.parallel.pp = 2;
  c.parallel.dp = 4;
  c.parallel.ep = 2;
  c.batch = {8, 1};
  REQUIRE(!check_strategy(c, 16));
  // Zipf 1.5 over 8 experts, 4 per EP rank: rank 0 gets the hot ones.
  // Expert 0's share 1/1.92668 = 0.519 exceeds 1/top_k = 0.5 (a token
  // cannot pick it twice): capped at 0.5, the other half spread as the
  // weights of experts 1-7 (sum 0.92668), of which 1-3 hold 0.67100:
  // rank 0's share 0.5 + 0.5 x 0.67100 / 0.92668 = 0.86205, load x2.
  // Counted in whole rows of a 2048-token micro-batch (4096 copies per
  // source): within 1/4096 of the shares.
  const auto loads = expert_loads(c);
  CHECK(loads[0] == Approx(2 * (0.5 + 0.5 * 0.67100 / 0.92668)).epsilon(5e-4));
  CHECK(loads[0] + loads[1] == Approx(2.0));
  const Run mirrored = run(c, true);
  const Run full = run(c, false);
  // The mirrored EP rank runs the hot rank's experts (index placement: EP
  // rank 0 in every layer), so the step is the full run's to the picosecond.
  CHECK(mirrored.w.mirrored_axes.find("ep") != std::string::npos);
  CHECK(mirrored.w.simulated.size() == 2);  // one per pipeline rank
  CHECK(mirrored.end == full.end);
  // Balanced routing is faster: the hot rank's experts set the pace.
  c.model.moe.skew = 0;
  const Run balanced = run(c, true);
  CHECK(balanced.w.simulated.size() == 2);
  CHECK(balanced.end < mirrored.end);
}

TEST_CASE("training: layers per stage with the fewer_at_ends remainder policy",
          "[training][generator]") {
  // Llama 3 405B: 126 layers on 16 stages, one fewer on the first and last
  // (Llama 3 Herd of Models, 3.3.2).
  TrainingConfig c;
  c.model = test::small_llama(126);
  c.parallel.pp = 16;
  c.parallel.layer_split = LayerSplit::fewer_at_ends;
  const auto split = split_layers(c.model.layers, c.parallel.pp);
  CHECK(split.front() == 7);
  CHECK(split.back() == 7);
  for (size_t s = 1; s + 1 < split.size(); ++s) CHECK(split[s] == 8);
  c.model.layers = 61;  // DeepSeek-V3 on 16: three stages of 3
  const auto ds = split_layers(c.model.layers, c.parallel.pp);
  CHECK(std::count(ds.begin(), ds.end(), 3) == 3);
  CHECK(ds[0] == 3);
  CHECK(ds[15] == 3);
  CHECK(ds[1] == 3);
}

TEST_CASE("training: interleaved schedule with an uneven layer split", "[training][generator]") {
  // 30 layers over pp 4 x v 2 = 8 model chunks: ceil(30/8) = 4 each, the
  // two missing taken from the first and last chunks: 3 4 4 4 4 4 4 3.
  // Rank r holds chunks r and r + 4: rank 0 and rank 3 hold 7 layers,
  // ranks 1 and 2 hold 8.
  TrainingConfig c;
  c.model = test::small_llama(30);
  c.parallel.pp = 4;
  c.parallel.schedule = Schedule::interleaved;
  c.parallel.virtual_stages = 2;
  c.batch = {8, 1};
  CHECK(check_strategy(c, 4).key == "parallelism.pp");  // the even split is refused
  c.parallel.layer_split = LayerSplit::fewer_at_ends;
  REQUIRE(!check_strategy(c, 4));
  CHECK(split_layers(30, 8) == std::vector<int>{3, 4, 4, 4, 4, 4, 4, 3});
  const PipelinePlan plan = build_pipeline(c.parallel.schedule, 4, 2, 8);
  const auto stages = model_stage_layers(c, plan);
  REQUIRE(stages.size() == 8);
  CHECK(stages[4].first == 15);  // rank 0's second chunk starts after 3 + 4 x 3 layers
  CHECK(stages[7].count == 3);
  // Per-rank parameters follow the layers: rank 1 (8 layers, no
  // embedding) holds 8/7 of rank 0's layers, less rank 0's embedding.
  const auto counts = workloads::models::count_params(c.model);
  const double layer = counts.dense_layer.total();
  CHECK(rank_params(c, plan, 1).total() == Approx(8 * layer));
  CHECK(rank_params(c, plan, 0).total() == Approx(7 * layer + counts.embedding + counts.position));
  // The step runs with free communication; compute per rank follows its
  // layers: ranks 1 and 2 run 8 layers each, rank 0 runs 7 (plus the
  // embedding lookup, a few tiny kernels), rank 3 runs 7 plus the output head.
  const Run r = run(c, true, true);
  REQUIRE(r.breakdown.per_rank.size() == 4);
  const auto compute = [&](int rank) { return r.breakdown.per_rank[static_cast<size_t>(rank)].of(OpCategory::compute); };
  CHECK(compute(1) == Approx(compute(2)));
  CHECK(compute(0) / compute(1) == Approx(7.0 / 8).epsilon(0.01));
  CHECK(compute(3) > compute(1));  // the head (32000 x 2048) outweighs a layer
}
