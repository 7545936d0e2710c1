// Rank placement: global rank <-> (tp, cp, ep, dp, pp) by the configured
// order, innermost first, and the groups each rank communicates in.
#include "catch.h"
#include "workloads/training/rank_grid.h"

using namespace gcsim::workloads::training;

TEST_CASE("default placement puts TP innermost, inside a node", "[training][grid]") {
  // 64 GPUs: TP 8, PP 2, DP 4 with EP 2. Order tp-cp-ep-dp-pp: rank =
  // tp + 8 (ep + 2 (edp + 2 pp)).
  ParallelConfig p;
  p.tp = 8;
  p.pp = 2;
  p.dp = 4;
  p.ep = 2;
  const RankGrid g(p);
  CHECK(g.size() == 64);
  CHECK(g.order_text() == "tp-cp-ep-dp-pp");
  CHECK(g.group(Group::tp, 11) == std::vector<int>{8, 9, 10, 11, 12, 13, 14, 15});
  CHECK(g.group(Group::ep, 3) == std::vector<int>{3, 11});
  CHECK(g.group(Group::expert_dp, 3) == std::vector<int>{3, 19});
  CHECK(g.group(Group::dp, 3) == std::vector<int>{3, 11, 19, 27});
  CHECK(g.at(37, Axis::pp) == 1);
  CHECK(g.moved(37, Axis::pp, 0) == 5);
  CHECK(g.group(Group::embedding, 37) == std::vector<int>{5, 37});
  for (int r = 0; r < 64; ++r) CHECK(g.rank(g.coord(r)) == r);
}

TEST_CASE("a custom order moves the dimensions", "[training][grid]") {
  // pp innermost: pipeline neighbours are consecutive ranks.
  ParallelConfig p;
  p.tp = 2;
  p.pp = 4;
  p.dp = 2;
  p.order = {"pp", "tp", "dp", "cp"};
  const RankGrid g(p);
  CHECK(g.order_text() == "pp-tp-ep-dp-cp");
  CHECK(g.moved(0, Axis::pp, 1) == 1);
  CHECK(g.group(Group::tp, 0) == std::vector<int>{0, 4});
  CHECK(g.group(Group::dp, 0) == std::vector<int>{0, 8});
  p.order = {"tp", "pp"};
  CHECK_THROWS_WITH(RankGrid(p), Catch::Contains("must name cp"));
}
