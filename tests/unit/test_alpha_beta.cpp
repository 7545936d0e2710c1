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
