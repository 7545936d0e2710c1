// The efficiency shortcut against the step-by-step reference. A ring's
// steady state runs as one long-lived flow per ring edge carrying the
// edge's total bytes, plus the other rounds' latencies; the reference runs
// the 2(n-1) (all-reduce) or n-1 rounds as they happen, one transfer per
// rank per channel per round, each rank forwarding round j once it has
// received round j-1 from its predecessor and finished sending round j-1.
// Both run on the same network model (analytical, flow, packet).
#include <algorithm>
#include <cmath>
#include <string>

#include "catch.h"
#include "models/collectives/schedule.h"
#include "unit/test_collectives_rig.h"

using namespace gcsim;
using models::collectives::Algorithm;
using models::collectives::CollectiveOp;
using models::collectives::ideal_params;
using test::CollectiveRig;
using test::iota_ranks;
using test::request;

namespace {

// Hosts on `leaves` leaves (host h on leaf h mod leaves) and 2 spines.
models::network::Fabric hosts_of(int hosts, int gpus, int leaves = 2) {
  test::SmallFabricSpec s;
  s.hosts = hosts;
  s.gpus_per_host = gpus;
  s.leaves = std::min(hosts, leaves);
  s.spines = 2;
  return test::small_fabric(s);
}

struct Pair {
  sim::Duration shortcut, stepwise;
  int64_t shortcut_transfers = 0, stepwise_transfers = 0;
  double relative() const {
    return std::abs(shortcut.seconds() - stepwise.seconds()) / stepwise.seconds();
  }
};

Pair both(int hosts, int gpus, const char* model, CollectiveOp op, sim::Bytes bytes,
          int channels, int leaves = 2) {
  Pair p;
  const auto req = request(op, iota_ranks(hosts * gpus), bytes, Algorithm::ring);
  {
    CollectiveRig rig(hosts_of(hosts, gpus, leaves), model, ideal_params(channels));
    p.shortcut = rig.run(req);
    p.shortcut_transfers = rig.engine().transfers_started();
  }
  {
    CollectiveRig rig(hosts_of(hosts, gpus, leaves), model, ideal_params(channels));
    rig.engine().set_stepwise_rings(true);
    p.stepwise = rig.run(req);
    p.stepwise_transfers = rig.engine().transfers_started();
  }
  return p;
}

}  // namespace

TEST_CASE("ring shortcut equals the step-by-step rounds inside a host (analytical, flow)",
          "[collectives][shortcut]") {
  // One host, every edge its own NVLink pair of directions: both forms are
  // 2(n-1) alpha + 2(n-1)/n S / B; they differ only by the rounding of each
  // round's transfer to 1 ps (at most one per round). The analytical model
  // ignores contention, so there the reference gets one channel (two of its
  // transfers on one link would each get the whole link); the flow model
  // shares links, so it gets two.
  for (const char* model : {"analytical", "flow"}) {
    const int channels = std::string(model) == "flow" ? 2 : 1;
    for (int n : {2, 4, 8}) {
      for (CollectiveOp op : {CollectiveOp::all_reduce, CollectiveOp::all_gather}) {
        INFO(model << " n=" << n << " " << models::collectives::op_name(op));
        const Pair p = both(1, n, model, op, sim::MiB(8), channels);
        const int rounds = op == CollectiveOp::all_reduce ? 2 * (n - 1) : n - 1;
        CHECK(std::llabs(p.shortcut.ps() - p.stepwise.ps()) <= rounds);
        // The reference starts one transfer per rank, channel and round;
        // the shortcut one per ring edge (channels merged inside a host).
        CHECK(p.stepwise_transfers == int64_t{rounds} * n * channels);
        CHECK(p.shortcut_transfers == n);
      }
    }
  }
}

TEST_CASE("ring shortcut within 1% of the step-by-step rounds across hosts (flow)",
          "[collectives][shortcut]") {
  // 2 hosts x 2 GPUs, PXN off, 2 channels: each GPU has one NIC edge (rail
  // of its channel) and NVLink edges. The reference's rounds advance at the
  // pace of the NIC edges, so every round pays the network's alpha (3 us);
  // the shortcut charges NCCL's mix, 2(N-1) = 2 network steps and 4 NVLink
  // steps of 0.6 us. The gap is 4 x (3 - 0.6) = 9.6 us on ~1 ms for 64 MiB.
  const Pair p = both(2, 2, "flow", CollectiveOp::all_reduce, sim::MiB(64), 2);
  INFO("shortcut " << p.shortcut.microseconds() << " us, stepwise " << p.stepwise.microseconds()
                   << " us");
  CHECK(p.relative() < 0.01);
  CHECK(std::abs((p.stepwise - p.shortcut).microseconds() - 9.6) < 0.01);
}

TEST_CASE("ring shortcut within 1% of the step-by-step rounds in the packet model",
          "[collectives][shortcut][packet]") {
  // Store-and-forward packets (MTU 4 KiB by default): the reference pays a
  // packet's serialization per hop in every round, the shortcut once per
  // flow. Measured gaps (this test's cases): one channel, 8 MiB on 4 and 8
  // GPUs: +0.05 us, +0.12 us (0.3 %). Two channels: the reference is the
  // faster one, since one channel's round transmits while the other waits
  // out its latency (8 GPUs, 8 MiB: 39.5 against 41.0 us; 64 MiB: 267.8
  // against 269.4 us, 0.6 %): the shortcut charges every round's latency in
  // full, as NCCL's cost model does.
  for (int n : {4, 8}) {
    INFO("one host, one channel, n=" << n);
    const Pair p = both(1, n, "packet", CollectiveOp::all_reduce, sim::MiB(8), 1);
    INFO("shortcut " << p.shortcut.microseconds() << " us, stepwise "
                     << p.stepwise.microseconds() << " us");
    CHECK(p.relative() < 0.005);
  }
  for (int n : {4, 8}) {
    INFO("one host, two channels, n=" << n);
    const Pair p = both(1, n, "packet", CollectiveOp::all_reduce, sim::MiB(64), 2);
    CHECK(p.relative() < 0.01);
  }
  // 2 hosts x 2 GPUs on one leaf (no spine, so no ECMP collision and no
  // congestion control in play), 64 MiB: NCCL's latency mix against
  // rounds at the network's pace, 4 x (2 - 0.6) us, plus packets.
  const Pair p = both(2, 2, "packet", CollectiveOp::all_reduce, sim::MiB(64), 2, 1);
  INFO("2x2: shortcut " << p.shortcut.microseconds() << " us, stepwise "
                        << p.stepwise.microseconds() << " us");
  CHECK(p.relative() < 0.01);
}

TEST_CASE("NCCL ring order: hosts in turn, channel c enters and leaves each host on rail c",
          "[collectives]") {
  const models::network::Fabric f = hosts_of(2, 4);
  const models::collectives::GroupLayout layout(f, iota_ranks(8));
  CHECK(models::collectives::ring_order(layout, 0) == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(models::collectives::ring_order(layout, 1) == std::vector<int>{1, 2, 3, 0, 5, 6, 7, 4});
  CHECK(models::collectives::ring_order(layout, 6) == std::vector<int>{2, 3, 0, 1, 6, 7, 4, 5});

  // With PXN every flow between hosts runs rail to rail: channel c from
  // local GPU c mod 4 of one host to local GPU c mod 4 of the other. Inside
  // a host the channels merge: the 4-cycle of each host, plus nothing else
  // (the hand-off to the rail GPU is the cycle's closing edge).
  models::collectives::CollectiveRequest req =
      request(CollectiveOp::all_reduce, iota_ranks(8), sim::MiB(8), Algorithm::ring);
  const auto sch = models::collectives::build_schedule(req, Algorithm::ring, layout, 8, true);
  REQUIRE(sch.phases.size() == 1);
  int inter = 0, intra = 0;
  for (const auto& fl : sch.phases[0].flows) {
    if (layout.same_host(fl.src, fl.dst)) {
      ++intra;
      CHECK(fl.channels == 8);
      CHECK(fl.dst % 4 == (fl.src + 1) % 4);
    } else {
      ++inter;
      CHECK(fl.src % 4 == static_cast<int>(fl.qp % 4));
      CHECK(fl.dst % 4 == static_cast<int>(fl.qp % 4));
    }
  }
  CHECK(intra == 8);
  CHECK(inter == 16);  // one per channel each way between the two hosts
  // All-reduce moves 2(n-1)/n S per channel edge: 14/8 x 8 MiB / 8 channels.
  for (const auto& fl : sch.phases[0].flows) {
    CHECK(fl.payload / fl.channels == Approx(14.0 / 8.0 * 8.0 * 1048576.0 / 8.0));
  }
  CHECK(sch.phases[0].steps_scale_out == 2);
  CHECK(sch.phases[0].steps_scale_up == 12);
}

TEST_CASE("double binary tree: every host interior in at most one tree", "[collectives]") {
  using models::collectives::tree_parent;
  for (int n = 2; n <= 70; ++n) {
    INFO("n = " << n);
    std::vector<int> children0(static_cast<size_t>(n), 0), children1(static_cast<size_t>(n), 0);
    int roots0 = 0, roots1 = 0;
    for (int i = 0; i < n; ++i) {
      const int p0 = tree_parent(i, n, 0), p1 = tree_parent(i, n, 1);
      if (p0 < 0) ++roots0; else ++children0[static_cast<size_t>(p0)];
      if (p1 < 0) ++roots1; else ++children1[static_cast<size_t>(p1)];
      CHECK(models::collectives::tree_depth(i, n, 0) <= 7);  // log2(70) + 1
    }
    CHECK(roots0 == 1);
    CHECK(roots1 == 1);
    int both_interior = 0;
    for (int i = 0; i < n; ++i) {
      CHECK(children0[static_cast<size_t>(i)] <= 2);
      CHECK(children1[static_cast<size_t>(i)] <= 2);
      if (children0[static_cast<size_t>(i)] > 0 && children1[static_cast<size_t>(i)] > 0) {
        ++both_interior;
      }
    }
    // Even n: none; odd n: the shifted tree leaves at most one host (the
    // one that wraps around) interior in both, as NCCL's does.
    CHECK(both_interior <= (n % 2 == 0 ? 0 : 1));
  }
}
