// Uneven all-to-all (all_to_all_single with split sizes): the split matrix,
// its α-β closed form and its run on the collective engine, against hand
// figures. The hot receiver's link decides the time.
#include <cmath>

#include "catch.h"
#include "models/collectives/split_matrix.h"
#include "models/network/alpha_beta.h"
#include "unit/test_collectives_rig.h"

using namespace gcsim;
using models::collectives::Algorithm;
using models::collectives::CollectiveOp;
using models::collectives::ideal_params;
using models::collectives::SplitMatrix;
using test::CollectiveRig;
using test::iota_ranks;
using test::request;

namespace {

constexpr int64_t kMiB = 1 << 20;

// Ranks 1..3 send 3 MiB each to rank 0 (the hot receiver) and nothing to
// one another; rank 0 sends 1 MiB to each; the diagonal (kept) is 5 MiB.
SplitMatrix hot_receiver() {
  std::vector<int64_t> b(16, 0);
  for (int i = 0; i < 4; ++i) b[static_cast<size_t>(i * 4 + i)] = 5 * kMiB;
  for (int j = 1; j < 4; ++j) {
    b[static_cast<size_t>(j * 4 + 0)] = 3 * kMiB;
    b[static_cast<size_t>(0 * 4 + j)] = 1 * kMiB;
  }
  return SplitMatrix(4, b);
}

models::network::Fabric one_host(int gpus) {
  test::SmallFabricSpec s;
  s.hosts = 1;
  s.gpus_per_host = gpus;
  s.leaves = 1;
  s.spines = 1;
  return test::small_fabric(s);
}

}  // namespace

TEST_CASE("split matrix: sent, received, buffers, transpose", "[collectives][moe]") {
  const SplitMatrix m = hot_receiver();
  CHECK(m.sent(0) == 3 * kMiB);
  CHECK(m.received(0) == 9 * kMiB);
  CHECK(m.sent(2) == 3 * kMiB);
  CHECK(m.received(2) == 1 * kMiB);
  CHECK(m.max_send_buffer() == 8 * kMiB);  // rank 0: 5 kept + 3 x 1
  CHECK(m.hottest_receiver() == 0);
  const SplitMatrix t = m.transposed();
  CHECK(t.at(0, 1) == 3 * kMiB);
  CHECK(t.received(0) == 3 * kMiB);
  CHECK(t.hottest_receiver() == 0);  // every rank receives 3 MiB: the lowest
  CHECK(t.transposed() == m);
  CHECK(t.fingerprint() != m.fingerprint());
  CHECK(SplitMatrix(4, m.bytes()).fingerprint() == m.fingerprint());
  CHECK(models::collectives::check_split_matrix(m, 3).find("4 x 4") != std::string::npos);
  CHECK_THROWS(SplitMatrix(2, {1, 2, 3}));
  CHECK_THROWS(SplitMatrix(1, {-1}));
}

TEST_CASE("uneven all-to-all, alpha-beta: the busiest endpoint over beta", "[network][moe]") {
  models::network::AlphaBetaFabric f;
  f.gpus_per_node = 8;
  f.scale_up_bandwidth = sim::Bandwidth::gb_per_s(450);
  f.scale_up_latency = sim::ns(int64_t{600});
  const SplitMatrix m = hot_receiver();
  // 3 x 0.6 us + 9 MiB / 450 GB/s (rank 0 receives 9 MiB) = 1.8 us + 20.97152 us.
  const auto t = models::network::all_to_all_v_time(f, iota_ranks(4), m.bytes());
  CHECK(t.seconds() == Approx(1.8e-6 + 9.0 * kMiB / 450e9).epsilon(1e-9));
  // Even splits, 1 MiB to each of 4 ranks, equal the even closed form:
  // 3 x 0.6 us + 3/4 x 4 MiB / 450 GB/s.
  const std::vector<int64_t> even(16, kMiB);
  CHECK(models::network::all_to_all_v_time(f, iota_ranks(4), even) ==
        models::network::collective_time(f, models::network::CollectiveAlgo::all_to_all,
                                         iota_ranks(4), sim::Bytes(4 * kMiB)));
  CHECK(models::network::all_to_all_v_traffic(iota_ranks(4), m.bytes()).size() == 6);
  // Across two nodes of 2 (ranks 0,1 | 2,3), 1 MiB per pair: each GPU moves
  // 1 MiB over NVLink and 2 MiB over its NIC at once, so the NIC decides:
  // 3 x 2 us + 2 MiB / 50 GB/s.
  f.gpus_per_node = 2;
  f.scale_out_bandwidth = sim::Bandwidth::gb_per_s(50);
  f.scale_out_latency = sim::us(int64_t{2});
  CHECK(models::network::all_to_all_v_time(f, iota_ranks(4), even).seconds() ==
        Approx(6e-6 + 2.0 * kMiB / 50e9).epsilon(1e-9));
}

TEST_CASE("uneven all-to-all on the engine: the hot receiver's link is shared max-min",
          "[collectives][moe]") {
  // 4 GPUs on one NVSwitch, ideal parameters, direct. Rank 0's downlink
  // carries three 3 MiB flows at 150 GB/s each (max-min fair), so the
  // exchange ends at 9 MiB / 450 GB/s = 20.971520 us plus one alpha (0.6
  // us); rank 0's own 1 MiB sends end earlier (its uplink, 150 GB/s each).
  // The even exchange of 1 MiB per pair: 3 MiB in per GPU, 6.990507 us +
  // 0.6 us.
  for (const char* model : {"analytical", "flow"}) {
    INFO(model);
    CollectiveRig rig(one_host(4), model, ideal_params(1));
    auto req = request(CollectiveOp::all_to_all, iota_ranks(4), sim::Bytes(8 * kMiB),
                       Algorithm::direct);
    req.splits = std::make_shared<const SplitMatrix>(hot_receiver());
    const sim::Duration t = rig.run(req);
    CHECK(std::llabs(t.ps() - (20'971'520 + 600'000)) <= 3);
    // Even: each sends 1 MiB to each peer (4 MiB buffers).
    const sim::Duration even = rig.run(
        request(CollectiveOp::all_to_all, iota_ranks(4), sim::Bytes(4 * kMiB), Algorithm::direct));
    CHECK(std::llabs(even.ps() - (6'990'507 + 600'000)) <= 3);
  }
  // Splits are for all-to-all only, and must fit the group.
  CollectiveRig rig(one_host(4), "flow", ideal_params(1));
  auto bad = request(CollectiveOp::all_gather, iota_ranks(4), sim::Bytes(kMiB), Algorithm::ring);
  bad.splits = std::make_shared<const SplitMatrix>(hot_receiver());
  CHECK(rig.engine().check(bad) == "split sizes are for all_to_all only");
  auto small = request(CollectiveOp::all_to_all, iota_ranks(3), sim::Bytes(kMiB), Algorithm::direct);
  small.splits = bad.splits;
  CHECK(rig.engine().check(small).find("group of 3") != std::string::npos);
}
