// A training step's EP layers run the graph `moe` op's routing and uneven
// all-to-alls (workloads/training/ep_routing.h): the same split matrices for
// the same routing, so the same dispatch time; node-limited routing's two
// legs; and each layer's expert GEMMs with the rows of the rank they run.
#include <algorithm>
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

// A 3-layer MoE (layer 0 dense; 8 experts of 1408, top 2) with EP over
// `ep` ranks, data parallel over `dp`, micro-batches of one 2048-token
// sequence.
TrainingConfig moe_config(int ep, int dp, double skew, int max_route_nodes = 0) {
  TrainingConfig c;
  c.model = test::small_llama(3);
  c.model.moe.experts = 16;
  c.model.moe.top_k = 2;
  c.model.moe.expert_ffn_hidden = 1408;
  c.model.moe.dense_layers = 1;
  c.model.moe.skew = skew;
  c.model.moe.max_route_nodes = max_route_nodes;
  c.parallel.dp = dp;
  c.parallel.ep = ep;
  c.batch = {dp, 1};
  REQUIRE(!check_strategy(c, dp));
  return c;
}

// The moe op's routing for the same layer.
moe::RoutingConfig op_routing(const TrainingConfig& c) {
  moe::RoutingConfig rc;
  rc.experts = c.model.moe.experts;
  rc.top_k = c.model.moe.top_k;
  rc.ranks = c.parallel.ep;
  rc.tokens = c.model.seq_len;
  rc.skew = c.model.moe.skew;
  return rc;
}

// The split matrices of the ops named `prefix` + suffix in `ops`, in order.
std::vector<models::collectives::SplitMatrixPtr> splits_of(const workloads::WorkloadGraph& g,
                                                           const std::vector<workloads::Op>& ops,
                                                           const std::string& name) {
  std::vector<models::collectives::SplitMatrixPtr> out;
  for (const auto& op : ops) {
    if (g.name(op.name) != name) continue;
    const auto& c = std::get<workloads::CollectiveOp>(op.payload);
    REQUIRE(c.splits);
    out.push_back(c.splits);
  }
  return out;
}

models::network::AlphaBetaFabric fabric() { return test::ep_node_fabric(); }

}  // namespace

TEST_CASE("training EP: the dispatch is the moe op's uneven all-to-all, with its time",
          "[training][moe]") {
  // EP 8 on one node, Zipf 1.2 by index: rank 0's experts are hot.
  const TrainingConfig c = moe_config(8, 8, 1.2);
  GeneratorOptions o;
  TrainingWorkload w = generate_training(c, o);
  const auto& g = *w.graph;
  const auto& ops = g.program(0).ops;
  const auto train = splits_of(g, ops, "F m0 L1 dispatch");
  REQUIRE(train.size() == 1);

  // The graph op on the same routing (bf16 rows of hidden 2048).
  workloads::WorkloadGraph og(8);
  moe::MoeLayerSpec spec;
  spec.hidden = c.model.hidden;
  spec.expert_ffn = c.model.moe.expert_ffn_hidden;
  moe::MoeLayerInfo info;
  info.name = "moe";
  const moe::Routing routing = moe::route(op_routing(c), 1, 0);
  const auto op_ops = moe::build_moe_layer(og, spec, routing, {0, 1, 2, 3, 4, 5, 6, 7}, 0, 1, 2,
                                           info);
  const auto op = splits_of(og, op_ops[0], "moe/dispatch");
  REQUIRE(op.size() == 1);
  CHECK(*train[0] == *op[0]);
  // The combine is the dispatch transposed in both.
  const auto combine = splits_of(g, ops, "F m0 L1 combine");
  REQUIRE(combine.size() == 1);
  CHECK(*combine[0] == op[0]->transposed());

  // Simulated: the training step's dispatch transfer takes the α-β time of
  // the op's matrix, 7 α + the hot receiver's bytes / β.
  test::TrainingStep step;
  step.w = std::move(w);
  models::cluster::ClusterModelConfig cfg;
  cfg.gpu = test::h100_datasheet();
  cfg.num_ranks = 8;
  cfg.fabric = fabric();
  test::replay_training(step, cfg);
  const int64_t hot_in = op[0]->received(0);  // rank 0 holds the popular experts
  CHECK(op[0]->hottest_receiver() == 0);
  const sim::Duration want = sim::ns(int64_t{600}) * 7 +
                             sim::transfer_time(static_cast<double>(hot_in), sim::Bandwidth::gb_per_s(450));
  CHECK(want == models::network::all_to_all_v_time(fabric(), {0, 1, 2, 3, 4, 5, 6, 7}, op[0]->bytes()));
  bool seen = false;
  for (const auto& r : step.records) {
    if (r.rank != 0 || step.w.graph->name(step.w.graph->program(0).ops[r.op].name) != "F m0 L1 dispatch") {
      continue;
    }
    CHECK((r.end - r.met) == want);
    seen = true;
  }
  CHECK(seen);
  // Balanced routing sends 2048 x 2 / 16 = 256 rows to each expert, 512 to
  // each rank: 7 x 512 rows of 4 KiB into every rank.
  const TrainingConfig flat = moe_config(8, 8, 0.0);
  const TrainingWorkload fw = generate_training(flat, o);
  const auto even = splits_of(*fw.graph, fw.graph->program(0).ops, "F m0 L1 dispatch");
  REQUIRE(even.size() == 1);
  CHECK(even[0]->received(0) == 7 * 512 * 4096);
  CHECK(even[0]->received(0) < hot_in);
}

TEST_CASE("training EP: node-limited routing's IB and NVLink legs are the moe op's",
          "[training][moe]") {
  // EP 16 over 2 nodes of 8, one node per token: the dispatch crosses IB
  // once per destination node to the rail GPU, then NVLink fans out.
  const TrainingConfig c = moe_config(16, 16, 0.8, 1);
  GeneratorOptions o;
  const TrainingWorkload w = generate_training(c, o);
  const auto& g = *w.graph;
  const auto ib = splits_of(g, g.program(0).ops, "F m0 L1 dispatch ib");
  const auto nvlink = splits_of(g, g.program(0).ops, "F m0 L1 dispatch nvlink");
  REQUIRE(ib.size() == 1);
  REQUIRE(nvlink.size() == 1);
  moe::MoeLayerSpec spec;
  spec.ranks_per_node = 8;
  spec.max_route_nodes = 1;
  const moe::Routing routing = moe::route(op_routing(c), 1, 0);
  const auto legs = moe::dispatch_legs(routing, spec);
  REQUIRE(legs.size() == 2);
  const int64_t row = c.model.hidden * 2;
  CHECK(*ib[0] == *moe::leg_bytes(legs[0], 16, row, false));
  CHECK(*nvlink[0] == *moe::leg_bytes(legs[1], 16, row, false));
  // IB pairs join the same lane on two nodes only; NVLink pairs stay home.
  for (int s = 0; s < 16; ++s) {
    for (int d = 0; d < 16; ++d) {
      if (ib[0]->at(s, d) > 0) CHECK((d % 8 == s % 8 && d / 8 != s / 8));
      if (nvlink[0]->at(s, d) > 0) CHECK(d / 8 == s / 8);
    }
  }
  // The combine runs the NVLink leg back first, then the IB leg.
  CHECK(splits_of(g, g.program(0).ops, "F m0 L1 combine nvlink").at(0)->bytes() ==
        nvlink[0]->transposed().bytes());
  CHECK(splits_of(g, g.program(0).ops, "F m0 L1 combine ib").at(0)->bytes() ==
        ib[0]->transposed().bytes());
}

TEST_CASE("training EP: each EP rank's expert GEMMs take its experts' rows",
          "[training][moe]") {
  const TrainingConfig c = moe_config(8, 8, 1.2);
  const moe::Routing routing = moe::route(op_routing(c), 1, 0);
  GeneratorOptions full;
  full.mirror = false;
  const TrainingWorkload w = generate_training(c, full);
  // Rank 3 (EP index 3): experts 6 and 7, each its own GEMM when their rows differ.
  const auto rows = routing.local_rows(3);
  REQUIRE(rows.size() == 2);
  REQUIRE(rows[0] != rows[1]);
  int found = 0;
  for (const auto& op : w.graph->program(3).ops) {
    const std::string name = w.graph->name(op.name);
    for (int i = 0; i < 2; ++i) {
      if (name != "F m0 L1 e" + std::to_string(6 + i) + " expert fc1") continue;
      const auto& shape = std::get<models::gpu::GemmShape>(std::get<workloads::ComputeOp>(op.payload).shape);
      CHECK(shape.m == rows[static_cast<size_t>(i)]);
      ++found;
    }
  }
  CHECK(found == 2);
  // Mirrored, the one EP rank runs the hot rank's (rank 0's) rows.
  GeneratorOptions mirrored;
  const TrainingWorkload m = generate_training(c, mirrored);
  CHECK(m.simulated.size() == 1);
  const auto hot = routing.local_rows(routing.hot_rank());
  CHECK(routing.hot_rank() == 0);
  bool seen = false;
  for (const auto& op : m.graph->program(0).ops) {
    if (m.graph->name(op.name) != "F m0 L1 e0 expert fc1") continue;
    CHECK(std::get<models::gpu::GemmShape>(std::get<workloads::ComputeOp>(op.payload).shape).m == hot[0]);
    seen = true;
  }
  CHECK(seen);
}
