// Which simulated rank stands for each straggler in a mirrored training run
// (workloads/training/straggler_mirror.h), and when the mirrored run cannot
// stand for them. TP 2 x PP 2 x DP 2 on 8 GPUs, placement tp-cp-ep-dp-pp
// (TP innermost): rank = tp + 2 dp + 4 pp. The mirrored run keeps tp = dp =
// 0, i.e. ranks 0 (stage 0) and 4 (stage 1). That the stand-in's run equals
// the full simulation is tests/scenario/test_straggler_run.cpp.
#include <string>

#include "catch.h"
#include "workloads/training/rank_grid.h"
#include "workloads/training/straggler_mirror.h"

using namespace gcsim::workloads::training;

namespace {

TrainingConfig tp2_pp2_dp2() {
  TrainingConfig c;
  c.model.name = "test";
  c.model.layers = 4;
  c.model.hidden = 1024;
  c.model.heads = 8;
  c.model.kv_heads = 8;
  c.model.head_dim = 128;
  c.model.ffn_hidden = 4096;
  c.model.vocab = 1024;
  c.model.seq_len = 512;
  c.parallel.tp = 2;
  c.parallel.pp = 2;
  c.parallel.dp = 2;
  c.batch = {8, 1};
  return c;
}

}  // namespace

TEST_CASE("straggler stand-ins: the slow rank's stage mirror runs at its speed",
          "[training][straggler]") {
  const TrainingConfig c = tp2_pp2_dp2();
  REQUIRE(!check_strategy(c, 8));
  const RankGrid grid(c.parallel);
  // The placement the comments assume: rank 5 is tp 1, dp 0, pp 1.
  REQUIRE(grid.at(5, Axis::tp) == 1);
  REQUIRE(grid.at(5, Axis::edp) == 0);
  REQUIRE(grid.at(5, Axis::pp) == 1);
  REQUIRE(grid.at(3, Axis::edp) == 1);
  const TrainingWorkload w = generate_training(c, GeneratorOptions{});
  REQUIRE(w.simulated == std::vector<int>{0, 4});

  std::string why;
  // One per stage, both in replica dp 0: ranks 1 and 5 (tp 1) are run by 0 and 4.
  CHECK(straggler_stand_ins(c, w, {1, 5}, &why) == std::map<int, int>{{1, 0}, {5, 4}});
  CHECK(why.empty());
  CHECK(straggler_stand_ins(c, w, {4}, &why) == std::map<int, int>{{4, 4}});

  // Refused, with the reason: two in one stage (ranks 0 and 1 are both stage 0)...
  CHECK(straggler_stand_ins(c, w, {0, 1}, &why).empty());
  CHECK(why == "two stragglers in one pipeline stage");
  // ...in two data-parallel replicas (rank 3 is dp 1)...
  why.clear();
  CHECK(straggler_stand_ins(c, w, {1, 3}, &why).empty());
  CHECK(why == "stragglers in more than one data-parallel replica");
  // ...and with expert parallelism, whose all-to-alls couple the replicas.
  TrainingConfig moe = c;
  moe.parallel.ep = 2;
  why.clear();
  CHECK(straggler_stand_ins(moe, w, {1}, &why).empty());
  CHECK(why == "expert all-to-alls couple data-parallel replicas");
}
