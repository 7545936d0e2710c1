#include "catch.h"
#include "models/network/alpha_beta.h"

using namespace gcsim;
using models::network::AlphaBetaFabric;
using models::network::CollectiveAlgo;

namespace {
// One HGX H100 node pair: NVLink 450 GB/s, 0.6 us; NDR 400 Gb/s NICs, 2 us.
AlphaBetaFabric hgx() {
  AlphaBetaFabric f;
  f.gpus_per_node = 8;
  f.scale_up_bandwidth = sim::Bandwidth::gb_per_s(450);
  f.scale_up_latency = sim::ns(int64_t{600});
  f.scale_out_bandwidth = sim::Bandwidth::gbps(400);
  f.scale_out_latency = sim::us(int64_t{2});
  return f;
}
}  // namespace

TEST_CASE("alpha-beta point to point picks the tier", "[network]") {
  auto f = hgx();
  // Intra-node: 0.6 us + 450 MB / 450 GB/s = 0.6 us + 1 ms.
  CHECK(models::network::p2p_time(f, 0, 1, sim::Bytes(450'000'000)) ==
        sim::ns(int64_t{600}) + sim::ms(int64_t{1}));
  // Inter-node: 2 us + 50 MB / 50 GB/s = 2 us + 1 ms.
  CHECK(models::network::p2p_time(f, 0, 8, sim::Bytes(50'000'000)) ==
        sim::us(int64_t{2}) + sim::ms(int64_t{1}));
  CHECK(models::network::p2p_time(f, 3, 3, sim::Bytes(1)) == sim::Duration::zero());
}

TEST_CASE("alpha-beta ring all-reduce matches the closed form", "[network]") {
  auto f = hgx();
  std::vector<int> node{0, 1, 2, 3, 4, 5, 6, 7};
  // 8 ranks, 1 GB: 2·7·0.6 us = 8.4 us; 2·(7/8)·1e9 B / 450e9 B/s = 3.888889 ms.
  auto t = models::network::collective_time(f, CollectiveAlgo::all_reduce, node,
                                            sim::Bytes(1'000'000'000));
  CHECK(t.seconds() == Approx(8.4e-6 + 1.75e9 / 450e9).epsilon(1e-9));
  // busbw = algbw · 2·7/8 ⇒ busbw / link bandwidth = 1.75·(S/t)/β → just under 1.
  double busbw = 1e9 / t.seconds() * models::network::bus_bandwidth_factor(
                                         CollectiveAlgo::all_reduce, 8);
  CHECK(busbw == Approx(450e9 * (3.888889e-3 / (3.888889e-3 + 8.4e-6))).epsilon(1e-4));
}

TEST_CASE("alpha-beta collectives across nodes use the NIC", "[network]") {
  auto f = hgx();
  std::vector<int> two_nodes{0, 8};
  // All-gather of 100 MB over 2 ranks on two nodes: 2 us + (1/2)·1e8 / 50e9 = 1.002 ms.
  auto t = models::network::collective_time(f, CollectiveAlgo::all_gather, two_nodes,
                                            sim::Bytes(100'000'000));
  CHECK(t == sim::us(int64_t{1002}));
  // A group of one costs nothing.
  CHECK(models::network::collective_time(f, CollectiveAlgo::all_reduce, {5}, sim::GiB(1)) ==
        sim::Duration::zero());
  CHECK(models::network::bus_bandwidth_factor(CollectiveAlgo::broadcast, 16) == 1.0);
  CHECK(models::network::bus_bandwidth_factor(CollectiveAlgo::reduce_scatter, 4) == 0.75);
}

TEST_CASE("closed-form collectives name the wire traffic they stand for", "[network]") {
  using models::network::collective_traffic;
  const std::vector<int> ranks{4, 1, 7, 2};  // a ring in this order: 4->1->7->2->4
  const sim::Bytes s(1'000'000);
  // All-reduce: each rank sends 2(n-1)/n S = 2 x 3/4 x 1e6 = 1.5e6 B to the next.
  auto ar = collective_traffic(CollectiveAlgo::all_reduce, ranks, s);
  REQUIRE(ar.size() == 4);
  CHECK(ar[0].src == 4);
  CHECK(ar[0].dst == 1);
  CHECK(ar[3].src == 2);
  CHECK(ar[3].dst == 4);
  for (const auto& t : ar) CHECK(t.bytes == 1.5e6);
  // All-gather: (n-1)/n S = 0.75e6 B per ring edge.
  for (const auto& t : collective_traffic(CollectiveAlgo::all_gather, ranks, s)) {
    CHECK(t.bytes == 0.75e6);
  }
  // Broadcast from ranks[2] = 7: the chain 7->2->4->1, S per hop.
  auto bc = collective_traffic(CollectiveAlgo::broadcast, ranks, s, 2);
  REQUIRE(bc.size() == 3);
  CHECK((bc[0].src == 7 && bc[0].dst == 2));
  CHECK((bc[2].src == 4 && bc[2].dst == 1));
  CHECK(bc[1].bytes == 1e6);
  // Reduce toward ranks[2] = 7: the same chain reversed.
  auto rd = collective_traffic(CollectiveAlgo::reduce, ranks, s, 2);
  CHECK((rd[0].src == 2 && rd[0].dst == 7));
  // All-to-all: 4 x 3 ordered pairs, S/n = 250 kB each; in total (n-1)/n S per rank.
  auto a2a = collective_traffic(CollectiveAlgo::all_to_all, ranks, s);
  REQUIRE(a2a.size() == 12);
  double from_4 = 0;
  for (const auto& t : a2a) {
    CHECK(t.bytes == 250'000.0);
    if (t.src == 4) from_4 += t.bytes;
  }
  CHECK(from_4 == 750'000.0);
  CHECK(collective_traffic(CollectiveAlgo::all_reduce, {3}, s).empty());
}
