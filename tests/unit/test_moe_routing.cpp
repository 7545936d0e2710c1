// MoE routing (workloads/moe/moe_routing.h) against counts worked out by
// hand, and against the counts calibration/microbench/moe_ep_bench.py sent
// on the GPUs (its zipf_counts, the same water filling and rounding).
#include <numeric>

#include "catch.h"
#include "workloads/moe/moe_layer.h"
#include "workloads/moe/moe_routing.h"

using namespace gcsim::workloads::moe;

namespace {

RoutingConfig config(int ranks, int experts, int top_k, int64_t tokens, double skew) {
  RoutingConfig c;
  c.ranks = ranks;
  c.experts = experts;
  c.top_k = top_k;
  c.tokens = tokens;
  c.skew = skew;
  return c;
}

}  // namespace

TEST_CASE("moe routing: Zipf shares and largest-remainder copies", "[moe]") {
  // skew 1 over 4 experts: weights 1, 1/2, 1/3, 1/4, sum 25/12, shares
  // 12/25, 6/25, 4/25, 3/25 = 0.48, 0.24, 0.16, 0.12.
  const auto s = popularity_shares(4, 1.0, 0.0);
  CHECK(s[0] == Approx(0.48));
  CHECK(s[1] == Approx(0.24));
  CHECK(s[2] == Approx(0.16));
  CHECK(s[3] == Approx(0.12));
  // 10 tokens top-1: 4.8, 2.4, 1.6, 1.2 -> floors 4, 2, 1, 1 (8); the two
  // largest remainders (0.8 of expert 0, 0.6 of expert 2) get one each.
  CHECK(expected_copies(10, 1, s) == std::vector<int64_t>{5, 2, 2, 1});
  // balance 1 removes the skew: 0.25 each.
  for (double v : popularity_shares(4, 1.0, 1.0)) CHECK(v == Approx(0.25));
  // balance 0.5 halves it: 0.5 x 0.48 + 0.125 = 0.365.
  CHECK(popularity_shares(4, 1.0, 0.5)[0] == Approx(0.365));
}

TEST_CASE("moe routing: no expert takes a token twice (water filling)", "[moe]") {
  // skew 1.5 over 8 experts, 4096 tokens top-2 (8192 copies): weights 1,
  // 0.35355, 0.19245, 0.125, 0.08944, 0.06804, 0.05399, 0.04419, sum
  // 1.92668: expert 0 would get 8192 / 1.92668 = 4252 > 4096 tokens, so it
  // is capped at 4096 and the other 4096 copies go 0.35355 / 0.92668 =
  // 38.15% to expert 1: 1562.75, rounded up by its remainder to 1563.
  const auto c = expected_copies(4096, 2, popularity_shares(8, 1.5, 0.0));
  CHECK(c[0] == 4096);
  CHECK(c[1] == 1563);
  CHECK(std::accumulate(c.begin(), c.end(), int64_t{0}) == 8192);
  // The bench's zipf_counts for the measured points (moe_ep_bench.py):
  CHECK(c == std::vector<int64_t>{4096, 1563, 851, 552, 395, 301, 239, 195});
  CHECK(expected_copies(32768, 2, popularity_shares(16, 0.8, 0.0)) ==
        std::vector<int64_t>{15164, 8709, 6297, 5002, 4184, 3616, 3197, 2873, 2615, 2403, 2227,
                             2077, 1948, 1836, 1738, 1650});
  CHECK(expected_copies(32768, 2, popularity_shares(16, 1.5, 0.0)) ==
        std::vector<int64_t>{30912, 10929, 5949, 3864, 2765, 2103, 1669, 1366, 1145, 978, 847,
                             744, 660, 590, 532, 483});
}

TEST_CASE("moe routing: capacity factor drops and pads as GShard/Switch do", "[moe]") {
  // 100 tokens top-2 over 4 experts, skew 1: 96, 48, 32, 24 copies.
  // capacity_factor 1: C = ceil(1 x 100 x 2 / 4) = 50 per expert and source.
  auto c = config(1, 4, 2, 100, 1.0);
  c.capacity_factor = 1.0;
  Routing r = route(c, 0, 0);
  CHECK(r.rows(0, 0) == 50);
  CHECK(r.dropped(0, 0) == 46);
  CHECK(r.rows(0, 1) == 48);
  CHECK(r.total_dropped() == 46);
  // Padded to capacity: every expert gets 50 rows, 0 + 2 + 18 + 26 of them padding.
  c.pad_to_capacity = true;
  r = route(c, 0, 0);
  for (int e = 0; e < 4; ++e) CHECK(r.rows(0, e) == 50);
  CHECK(r.total_padding() == 2 + 18 + 26);
  // capacity_factor 1.25: C = ceil(62.5) = 63: 33 dropped from expert 0.
  c.pad_to_capacity = false;
  c.capacity_factor = 1.25;
  CHECK(route(c, 0, 0).total_dropped() == 33);
}

TEST_CASE("moe routing: expert_tokens given exactly, sources spread evenly", "[moe]") {
  // 2 ranks x 10 tokens x top-2 = 40 copies over 4 experts: 20, 13, 5, 2.
  // Per source: 10/10; 13 -> 7 (source 0 takes the remainder), 6; 5 -> 2, 3
  // (the next remainder goes to source 1); 2 -> 1, 1. Each source sends 20.
  auto c = config(2, 4, 2, 10, 0.0);
  c.expert_tokens = {20, 13, 5, 2};
  const Routing r = route(c, 0, 0);
  CHECK(r.rows(0, 1) == 7);
  CHECK(r.rows(1, 1) == 6);
  CHECK(r.rows(0, 2) == 2);
  CHECK(r.rows(1, 2) == 3);
  // Experts 0, 1 on rank 0; 2, 3 on rank 1. Rows source -> rank:
  // 0 -> 0: 17, 0 -> 1: 3; 1 -> 0: 16, 1 -> 1: 4.
  CHECK(r.rank_matrix() == std::vector<int64_t>{17, 3, 16, 4});
  CHECK(r.received(0) == 33);
  CHECK(r.hot_rank() == 0);
  CHECK(r.rank_imbalance() == Approx(33.0 / 20.0));
  // Sums that do not add up, and a source that would send a token twice.
  c.expert_tokens = {20, 13, 5, 1};
  CHECK(check_routing(c).find("sum to 39") != std::string::npos);
  c.expert_tokens = {22, 11, 5, 2};
  CHECK(check_routing(c).find("more than one copy") != std::string::npos);
}

TEST_CASE("moe routing: seeded placement and sampling per layer and micro-batch", "[moe]") {
  auto c = config(4, 16, 2, 1000, 1.2);
  c.placement = HotPlacement::permuted;
  c.seed = 7;
  const auto a = hot_expert_order(c, 3), b = hot_expert_order(c, 3), other = hot_expert_order(c, 4);
  CHECK(a == b);
  CHECK(a != other);
  std::vector<int> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 16; ++i) CHECK(sorted[static_cast<size_t>(i)] == i);
  // The most popular expert of layer 3 is a[0]: it gets the most rows.
  const Routing r = route(c, 3, 0);
  for (int e = 0; e < 16; ++e) CHECK(r.expert_rows(a[0]) >= r.expert_rows(e));

  // Sampling: reproducible per (layer, micro-batch), different across them,
  // every source's copies sum to tokens x top_k, and the mean over 200
  // micro-batches is the expectation: 1 source x 1000 tokens top-2 over 4
  // experts at skew 1, 960 copies to expert 0 (sd per draw sqrt(2000 x
  // 0.48 x 0.52) = 22.3, of the mean 1.6: 1% is 6 sd).
  auto s = config(1, 4, 2, 1000, 1.0);
  s.sample = true;
  CHECK(route(s, 0, 5).rows(0, 0) == route(s, 0, 5).rows(0, 0));
  bool differs = false;
  double sum0 = 0;
  for (int mb = 0; mb < 200; ++mb) {
    const Routing x = route(s, 0, mb);
    int64_t total = 0;
    for (int e = 0; e < 4; ++e) {
      total += x.rows(0, e);
      CHECK(x.rows(0, e) <= 1000);
    }
    CHECK(total == 2000);
    sum0 += static_cast<double>(x.rows(0, 0));
    differs = differs || x.rows(0, 0) != route(s, 0, 0).rows(0, 0);
  }
  CHECK(differs);
  CHECK(sum0 / 200 == Approx(960).epsilon(0.01));
}

TEST_CASE("moe dispatch: node-limited routing sends a token once per node", "[moe]") {
  // 4 ranks, 2 per node, one expert each, 100 tokens top-2, uniform: every
  // source sends 50 copies to each expert (100 to the other node).
  auto c = config(4, 4, 2, 100, 0.0);
  const Routing r = route(c, 0, 0);
  MoeLayerSpec spec;
  spec.ranks_per_node = 2;
  spec.max_route_nodes = 1;
  // M = 1: a token reaches min(1, 2, 2) = 1 node; source 0's 100 tokens x 1
  // node split as its copies (half to node 1): 50 tokens over IB to rank 2
  // (node 1, rail 0), none of them brought twice (>= 100 copies / top-2 = 50).
  auto legs = dispatch_legs(r, spec);
  REQUIRE(legs.size() == 2);
  const auto& ib = legs[0];
  CHECK(ib[0 * 4 + 2] == 50);
  CHECK(ib[0 * 4 + 3] == 0);
  CHECK(ib[1 * 4 + 3] == 50);
  CHECK(ib[2 * 4 + 0] == 50);
  // NVLink leg: rank 2 forwards source 0's 50 copies for rank 3 and sends
  // its own 50: 100 rows 2 -> 3 (likewise 0 -> 1: its own 50 and source
  // 2's); source 0's copies for rank 2 stay there, beside rank 2's own.
  const auto& nv = legs[1];
  CHECK(nv[2 * 4 + 3] == 100);
  CHECK(nv[0 * 4 + 1] == 100);
  CHECK(nv[2 * 4 + 2] == 100);
  CHECK(nv[1 * 4 + 0] == 100);
  // M = 2 reaches both nodes: no saving, 100 tokens cross (one per copy).
  spec.max_route_nodes = 2;
  CHECK(dispatch_legs(r, spec)[0][0 * 4 + 2] == 100);
  // Without node limits: one leg, the rows matrix itself.
  spec.max_route_nodes = 0;
  CHECK(dispatch_legs(r, spec).size() == 1);
}
