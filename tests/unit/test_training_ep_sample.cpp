// A training step's MoE layers with `moe.sample`: each (MoE layer,
// micro-batch) is its own draw of the graph `moe` op's routing under the
// run's seed (workloads/training/ep_routing.h), and `moe.capacity_factor`
// drops copies as the op does. Without sample every micro-batch keeps the
// expected counts it had before.
#include <cmath>
#include <string>

#include "catch.h"
#include "gpu_test_specs.h"
#include "models/network/alpha_beta.h"
#include "training_replay.h"
#include "workloads/moe/moe_layer.h"
#include "workloads/training/training_generator.h"

using namespace gcsim;
using namespace gcsim::workloads::training;
namespace moe = gcsim::workloads::moe;

namespace {

// A 3-layer MoE (layer 0 dense; 16 experts of 1408, top 2) with EP 8 on
// one node (DP 8), 4 micro-batches of one 2048-token sequence per rank.
TrainingConfig sample_config(double skew, bool sample, uint64_t seed = 1) {
  TrainingConfig c;
  c.model = test::small_llama(3);
  c.model.moe.experts = 16;
  c.model.moe.top_k = 2;
  c.model.moe.expert_ffn_hidden = 1408;
  c.model.moe.dense_layers = 1;
  c.model.moe.skew = skew;
  c.model.moe.sample = sample;
  c.parallel.dp = 8;
  c.parallel.ep = 8;
  c.batch = {32, 1};
  c.routing_seed = seed;
  REQUIRE(!check_strategy(c, 8));
  REQUIRE(c.micro_batches() == 4);
  return c;
}

// The moe op's routing config for the same layers.
moe::RoutingConfig op_routing(const TrainingConfig& c) {
  moe::RoutingConfig rc;
  rc.experts = c.model.moe.experts;
  rc.top_k = c.model.moe.top_k;
  rc.ranks = c.parallel.ep;
  rc.tokens = c.model.seq_len;
  rc.skew = c.model.moe.skew;
  rc.sample = c.model.moe.sample;
  rc.capacity_factor = c.model.moe.capacity_factor;
  rc.seed = c.routing_seed;
  return rc;
}

// The split matrix of the one op named `name` in program 0.
models::collectives::SplitMatrixPtr split_of(const TrainingWorkload& w, const std::string& name) {
  models::collectives::SplitMatrixPtr out;
  for (const auto& op : w.graph->program(0).ops) {
    if (w.graph->name(op.name) != name) continue;
    REQUIRE(!out);
    out = std::get<workloads::CollectiveOp>(op.payload).splits;
  }
  REQUIRE(out);
  return out;
}

// The op's dispatch matrix (bf16 rows of the model's hidden width) for one
// (layer, micro-batch).
models::collectives::SplitMatrixPtr op_dispatch(const TrainingConfig& c, int layer, int micro) {
  const moe::Routing r = moe::route(op_routing(c), layer, micro);
  moe::MoeLayerSpec spec;
  const auto legs = moe::dispatch_legs(r, spec);
  REQUIRE(legs.size() == 1);
  return moe::leg_bytes(legs[0], r.ranks(), c.model.hidden * 2, false);
}

// One node of 8 H100s (datasheet) on an alpha-beta NVLink fabric.
models::cluster::ClusterModelConfig ep8_cluster() {
  models::cluster::ClusterModelConfig cfg;
  cfg.gpu = test::h100_datasheet();
  cfg.num_ranks = 8;
  cfg.fabric = test::ep_node_fabric();
  return cfg;
}

int64_t sum(const std::vector<int64_t>& v) {
  int64_t s = 0;
  for (int64_t x : v) s += x;
  return s;
}

}  // namespace

TEST_CASE("training EP sample off: every micro-batch has the expected counts of micro-batch 0",
          "[training][moe][sample]") {
  const TrainingConfig c = sample_config(1.2, false);
  const EpRouting ep(c, 0);
  CHECK(ep.draws_per_layer() == 1);
  const TrainingWorkload w = generate_training(c, GeneratorOptions{});
  const auto want = op_dispatch(c, 1, 0);
  for (int mb = 0; mb < 4; ++mb) {
    for (int l = 1; l < 3; ++l) {
      CHECK(*split_of(w, "F m" + std::to_string(mb) + " L" + std::to_string(l) + " dispatch") ==
            *want);
      // Index placement: one draw for every layer and micro-batch.
      CHECK(&ep.draw(l, mb) == &ep.draw(1, 0));
    }
  }
}

TEST_CASE("training EP sample on: each micro-batch is its own draw of the op's routing",
          "[training][moe][sample]") {
  const TrainingConfig c = sample_config(1.2, true, 7);
  const EpRouting ep(c, 0);
  REQUIRE(ep.draws_per_layer() == 4);
  const TrainingWorkload w = generate_training(c, GeneratorOptions{});
  const TrainingWorkload again = generate_training(c, GeneratorOptions{});
  const TrainingWorkload other = generate_training(sample_config(1.2, true, 8), GeneratorOptions{});
  // Dropless: every draw routes all 8 sources x 2048 tokens x top-2.
  const int64_t copies = 8 * 2048 * 2;
  bool seed_differs = false;
  for (int l = 1; l < 3; ++l) {
    for (int mb = 0; mb < 4; ++mb) {
      const std::string name = "F m" + std::to_string(mb) + " L" + std::to_string(l) + " dispatch";
      const auto got = split_of(w, name);
      // The op's draw for the same (layer, micro-batch) under the same seed.
      CHECK(*got == *op_dispatch(c, l, mb));
      CHECK(*got == *split_of(again, name));
      seed_differs = seed_differs || !(*got == *split_of(other, name));
      CHECK(sum(ep.draw(l, mb).expert_rows) == copies);
      CHECK(ep.draw(l, mb).dropped == 0);
      for (int mb2 = 0; mb2 < mb; ++mb2) {
        CHECK(!(*got == *split_of(w, "F m" + std::to_string(mb2) + " L" + std::to_string(l) +
                                         " dispatch")));
      }
      // The mirrored EP rank runs this draw's hot rank's rows: expert
      // 2 x hot (its first local expert) in the fc1 GEMM.
      const int hot = ep.hot_rank(l, mb);
      const int64_t rows = ep.local_rows(l, mb, hot)[0];
      const auto hot_rows = ep.local_rows(l, mb, -1);
      CHECK(hot_rows[0] == rows);
      bool seen = false;
      const std::string p = "F m" + std::to_string(mb) + " L" + std::to_string(l);
      for (const auto& op : w.graph->program(0).ops) {
        const std::string n = w.graph->name(op.name);
        if (n != p + " e" + std::to_string(2 * hot) + " expert fc1" && n != p + " expert fc1") continue;
        CHECK(std::get<models::gpu::GemmShape>(std::get<workloads::ComputeOp>(op.payload).shape).m ==
              rows);
        seen = true;
      }
      CHECK(seen);
    }
  }
  CHECK(seed_differs);
}

TEST_CASE("training EP sample on: the hot rank's excess follows the multinomial, and costs time",
          "[training][moe][sample]") {
  // Balanced (skew 0), 16 experts on 8 ranks, top-2, T tokens per source:
  // the 8 x T x 2 copies are one multinomial over the ranks with p = 1/8,
  // a rank's load mean 2T. Loads centred on their mean are independent
  // normals of variance 2T less their average (the sum is fixed), so the
  // most loaded rank exceeds the mean by E[max of 8 standard normals] x
  // sqrt(2T) = 1.4236 sqrt(2T) (the expected maximum of 8 normals, Harter
  // 1961's tables): an imbalance of 1 + 1.4236 / sqrt(2T).
  const auto mean_excess = [](int64_t tokens) {
    moe::RoutingConfig rc;
    rc.experts = 16;
    rc.top_k = 2;
    rc.ranks = 8;
    rc.tokens = tokens;
    rc.sample = true;
    rc.seed = 3;
    double s = 0;
    const int draws = 400;
    for (int mb = 0; mb < draws; ++mb) s += moe::route(rc, 1, mb).rank_imbalance() - 1.0;
    return s / draws;
  };
  const double small = mean_excess(64), large = mean_excess(1024);
  // The max of 8 normals has sd 0.76 (in units of its sd): 400 draws give
  // a standard error of 0.038 / 1.42 = 2.7% of the mean; 12% is over 4 of
  // them and covers the rounding of 128- and 2048-copy counts.
  CHECK(small == Approx(1.4236 / std::sqrt(2.0 * 64)).epsilon(0.12));
  CHECK(large == Approx(1.4236 / std::sqrt(2.0 * 1024)).epsilon(0.12));
  // Sixteen times the tokens: a quarter the excess.
  CHECK(small > large);
  CHECK(small / large == Approx(4.0).epsilon(0.2));

  // The training step: sampled routing puts more rows on each draw's hot
  // rank than the expected 512, so the step is no faster than with
  // expected counts (the mirrored rank runs the hot rank's experts and
  // every dispatch waits for the hot receiver).
  const models::cluster::ClusterModelConfig cfg = ep8_cluster();
  test::TrainingStep expected, sampled;
  expected.w = generate_training(sample_config(0.0, false), GeneratorOptions{});
  sampled.w = generate_training(sample_config(0.0, true), GeneratorOptions{});
  test::replay_training(expected, cfg);
  test::replay_training(sampled, cfg);
  INFO("expected " << expected.end.seconds() << " s, sampled " << sampled.end.seconds() << " s");
  CHECK(sampled.end >= expected.end);
  const EpRouting ep(sample_config(0.0, true), 0);
  for (int mb = 0; mb < 4; ++mb) CHECK(sum(ep.local_rows(1, mb, -1)) > 512);
}

TEST_CASE("training EP capacity factor: each expert keeps at most its capacity from a source",
          "[training][moe][sample]") {
  // 2048 tokens top-2 over 16 experts, factor 1: C = ceil(2048 x 2 / 16) =
  // 256 copies per expert and source, 8 x 256 = 2048 rows at most. Zipf
  // 1.2 gives expert 0 a share of 1 / H(16, 1.2) = 0.365, 1496 copies a
  // source: it is capped at 256 on every source.
  for (const bool sample : {false, true}) {
    TrainingConfig c = sample_config(1.2, sample);
    c.model.moe.capacity_factor = 1.0;
    const EpRouting ep(c, 0);
    for (int l = 1; l < 3; ++l) {
      for (int mb = 0; mb < 4; ++mb) {
        const EpDraw& d = ep.draw(l, mb);
        for (int64_t rows : d.expert_rows) CHECK(rows <= 8 * 256);
        CHECK(d.expert_rows[0] == 8 * 256);
        CHECK(d.dropped > 0);
        CHECK(sum(d.expert_rows) + d.dropped == 8 * 2048 * 2);
        // The op's routing with the same capacity.
        const moe::Routing r = moe::route(op_routing(c), l, mb);
        CHECK(r.total_dropped() == d.dropped);
        for (int s = 0; s < 8; ++s) CHECK(r.rows(s, 0) == 256);
      }
    }
    // The mirrored rank (rank 0 hot, experts 0 and 1) runs 2048 rows of
    // expert 0.
    const TrainingWorkload w = generate_training(c, GeneratorOptions{});
    bool seen = false;
    for (const auto& op : w.graph->program(0).ops) {
      // Experts 0 and 1 both full: one batched GEMM of two experts.
      const std::string n = w.graph->name(op.name);
      if (n != "F m0 L1 e0 expert fc1" && n != "F m0 L1 expert fc1") continue;
      CHECK(std::get<models::gpu::GemmShape>(std::get<workloads::ComputeOp>(op.payload).shape).m ==
            2048);
      seen = true;
    }
    CHECK(seen);
  }
}

TEST_CASE("training EP pad to capacity: every expert runs its full capacity from each source",
          "[training][moe][sample]") {
  // Balanced routing, factor 1.25: 2048 x 2 / 16 = 256 expected copies per
  // expert and source, capacity ceil(1.25 x 256) = 320. Padded, every expert
  // runs 8 x 320 = 2560 rows (64 of each 320 padding), nothing dropped, and
  // each source sends 320 rows to each expert: two experts a rank, 640 bf16
  // rows of the hidden width to every destination.
  TrainingConfig c = sample_config(0.0, false);
  c.model.moe.capacity_factor = 1.25;
  TrainingConfig padded = c;
  padded.model.moe.pad_to_capacity = true;
  const EpRouting plain_ep(c, 0), pad_ep(padded, 0);
  const EpDraw& plain = plain_ep.draw(1, 0);
  const EpDraw& pad = pad_ep.draw(1, 0);
  for (int64_t rows : plain.expert_rows) CHECK(rows == 8 * 256);
  for (int64_t rows : pad.expert_rows) CHECK(rows == 8 * 320);
  CHECK(plain.dropped == 0);
  CHECK(pad.dropped == 0);
  CHECK(plain.padded == 0);
  CHECK(pad.padded == 16 * 8 * 64);
  const TrainingWorkload w = generate_training(padded, GeneratorOptions{});
  const auto d = split_of(w, "F m0 L1 dispatch");
  const int64_t hidden_bytes = padded.model.hidden * 2;
  for (int s = 0; s < 8; ++s) {
    for (int t = 0; t < 8; ++t) {
      if (s != t) CHECK(d->at(s, t) == 2 * 320 * hidden_bytes);
    }
  }
  // The padding is computed: the expert GEMMs of the mirrored rank run 2560
  // rows where the dropless layer runs 2048, and the step takes longer.
  int64_t m = 0;
  for (const auto& op : w.graph->program(0).ops) {
    const std::string n = w.graph->name(op.name);
    if (n != "F m0 L1 expert fc1" && n != "F m0 L1 e0 expert fc1") continue;
    m = std::get<models::gpu::GemmShape>(std::get<workloads::ComputeOp>(op.payload).shape).m;
  }
  CHECK(m == 8 * 320);
  test::TrainingStep plain_step, pad_step;
  plain_step.w = generate_training(c, GeneratorOptions{});
  pad_step.w = generate_training(padded, GeneratorOptions{});
  test::replay_training(plain_step, ep8_cluster());
  test::replay_training(pad_step, ep8_cluster());
  INFO("dropless " << plain_step.end.seconds() << " s, padded " << pad_step.end.seconds() << " s");
  CHECK(pad_step.end > plain_step.end);
}
