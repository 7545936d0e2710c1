// Collective algorithms on an ideal fabric (no protocol latency, no
// ceilings, every byte payload) against their closed forms, computed by
// hand. The fabric is tests/unit/fabric_fixtures.h's small_fabric: one
// NVSwitch per host, GPU-switch links of 450 GB/s and 300 ns each (GPU to
// GPU alpha = 0.6 us), NICs of 400 Gb/s = 50 GB/s behind 64 GB/s PCIe.
#include <cmath>

#include "catch.h"
#include "models/collectives/schedule.h"
#include "unit/test_collectives_rig.h"

using namespace gcsim;
using models::collectives::Algorithm;
using models::collectives::CollectiveOp;
using models::collectives::ideal_params;
using models::collectives::Protocol;
using test::CollectiveRig;
using test::iota_ranks;
using test::request;

namespace {

const sim::Bandwidth kNvlink = sim::Bandwidth::gb_per_s(450);
const sim::Duration kAlphaUp = sim::ns(int64_t{600});  // GPU -> NVSwitch -> GPU

models::network::Fabric one_host(int gpus) {
  test::SmallFabricSpec s;
  s.hosts = 1;
  s.gpus_per_host = gpus;
  s.leaves = 1;
  s.spines = 1;
  return test::small_fabric(s);
}

// |a - b| <= tolerance picoseconds.
bool near_ps(sim::Duration a, sim::Duration b, int64_t tolerance) {
  return std::llabs(a.ps() - b.ps()) <= tolerance;
}

}  // namespace

TEST_CASE("ring all-reduce on an ideal fabric is 2(n-1)/n S/B + 2(n-1) alpha", "[collectives]") {
  // n GPUs on one NVSwitch, S = 8 MiB, 4 channels. Every channel's ring is
  // the same cycle inside one host, so the edge i -> i+1 carries all four
  // channels: 2(n-1)/n S in one flow at 450 GB/s, one alpha for the flow
  // and 2(n-1) - 1 more for the other rounds.
  //   n = 4: 6 x 0.6 us + 12 MiB / 450 GB/s = 3.6 us + 27.962027 us
  //   n = 8: 14 x 0.6 us + 14 MiB / 450 GB/s = 8.4 us + 32.622365 us
  for (const char* model : {"analytical", "flow"}) {
    for (int n : {4, 8}) {
      INFO(model << ", n = " << n);
      CollectiveRig rig(one_host(n), model, ideal_params(4));
      const sim::Bytes s = sim::MiB(8);
      const sim::Duration t =
          rig.run(request(CollectiveOp::all_reduce, iota_ranks(n), s, Algorithm::ring));
      const sim::Bytes per_edge(2 * (n - 1) * s.count() / n);
      const sim::Duration expected = kAlphaUp * (2 * (n - 1)) + sim::transfer_time(per_edge, kNvlink);
      CHECK(near_ps(t, expected, 2));
      if (n == 4) CHECK(near_ps(t, sim::ps(3'600'000 + 27'962'027), 2));
      if (n == 8) CHECK(near_ps(t, sim::ps(8'400'000 + 32'622'365), 2));
    }
  }
}

TEST_CASE("ring all-gather and reduce-scatter are (n-1)/n S/B + (n-1) alpha", "[collectives]") {
  // 8 GPUs, S = 16 MiB (all-gather: the output; reduce-scatter: the input):
  // 7 x 0.6 us + 14 MiB / 450 GB/s = 4.2 us + 32.622365 us.
  for (CollectiveOp op : {CollectiveOp::all_gather, CollectiveOp::reduce_scatter}) {
    CollectiveRig rig(one_host(8), "flow", ideal_params(8));
    const sim::Duration t = rig.run(request(op, iota_ranks(8), sim::MiB(16), Algorithm::ring));
    CHECK(near_ps(t, sim::ps(4'200'000 + 32'622'365), 2));
  }
}

TEST_CASE("pipelined ring broadcast is S/B + (n-1) alpha", "[collectives]") {
  // Root 3 of 8: every channel's chain is 3, 4, ..., 2 (the host's cycle
  // from the root), so each of its 7 edges carries S once:
  // 64 MiB / 450 GB/s + 7 x 0.6 us = 149.130808 us + 4.2 us.
  CollectiveRig rig(one_host(8), "flow", ideal_params(4));
  auto req = request(CollectiveOp::broadcast, iota_ranks(8), sim::MiB(64), Algorithm::ring);
  req.root = 3;
  CHECK(near_ps(rig.run(req), sim::ps(149'130'808 + 4'200'000), 2));
}

TEST_CASE("double binary tree all-reduce over 4 hosts is 2 S / B_nic + 2 depth alpha",
          "[collectives]") {
  // 4 hosts of 1 GPU on one leaf: alpha = PCIe 0.5 + NIC-leaf 0.5 +
  // leaf-NIC 0.5 + PCIe 0.5 = 2 us; NIC 50 GB/s. Tree 0 (in-order, root at
  // position 4): 3 <- 1 <- {0, 2}; tree 1 (mirrored): 0 <- 2 <- {1, 3};
  // depth 2 in both. Two channels, one per tree, S/2 each, up and down at
  // once. Hosts 1 and 2 are interior once and leaf once: 4 flows of S/2
  // leave and 4 enter each of their NICs, so every flow gets 50/4 GB/s:
  // 2 S / 50 GB/s. Latency: 2 depth = 4 steps of alpha.
  // S = 100 MB: 4 ms + 8 us.
  test::SmallFabricSpec spec;
  spec.hosts = 4;
  spec.gpus_per_host = 1;
  spec.leaves = 1;
  spec.spines = 1;
  CollectiveRig rig(test::small_fabric(spec), "flow", ideal_params(2));
  const sim::Duration t = rig.run(
      request(CollectiveOp::all_reduce, iota_ranks(4), sim::Bytes(100'000'000), Algorithm::tree));
  CHECK(near_ps(t, sim::us(int64_t{4008}), 10));

  CHECK(models::collectives::tree_parent(1, 4, 0) == 3);
  CHECK(models::collectives::tree_parent(0, 4, 0) == 1);
  CHECK(models::collectives::tree_parent(2, 4, 0) == 1);
  CHECK(models::collectives::tree_parent(3, 4, 0) == -1);
  CHECK(models::collectives::tree_parent(2, 4, 1) == 0);
  CHECK(models::collectives::tree_parent(1, 4, 1) == 2);
  CHECK(models::collectives::tree_parent(3, 4, 1) == 2);
  CHECK(models::collectives::tree_parent(0, 4, 1) == -1);
}

TEST_CASE("all-to-all: direct is (n-1)/n S/B + alpha, pairwise (n-1)(S/(nB) + alpha)",
          "[collectives]") {
  // 4 GPUs on one NVSwitch, S = 4 MiB per rank, 1 MiB to each peer.
  // Direct: 3 flows share each GPU's 450 GB/s link both ways:
  //   3 MiB / 450 GB/s + 0.6 us = 6.990507 us + 0.6 us.
  // Pairwise: 3 rounds of one 1 MiB flow per GPU:
  //   3 x (1 MiB / 450 GB/s + 0.6 us) = 3 x (2.330169 us + 0.6 us).
  {
    CollectiveRig rig(one_host(4), "flow", ideal_params(1));
    const sim::Duration t = rig.run(
        request(CollectiveOp::all_to_all, iota_ranks(4), sim::MiB(4), Algorithm::direct));
    CHECK(near_ps(t, sim::ps(6'990'507 + 600'000), 2));
  }
  for (const char* model : {"analytical", "flow"}) {
    CollectiveRig rig(one_host(4), model, ideal_params(1));
    const sim::Duration t = rig.run(
        request(CollectiveOp::all_to_all, iota_ranks(4), sim::MiB(4), Algorithm::pairwise));
    CHECK(near_ps(t, sim::ps(3 * (2'330'169 + 600'000)), 3));
  }
}

TEST_CASE("send/recv between hosts moves S over the NIC in one step", "[collectives]") {
  // Rank 0 (host 0) and rank 2 (host 1), both directions at once; one
  // channel. alpha = 0.5 PCIe + 4 x 0.5 switch hops + 0.5 PCIe = 3 us;
  // 1 GiB / 50 GB/s = 21.474836 ms.
  CollectiveRig rig(test::small_fabric({}), "flow", ideal_params(1));
  const sim::Duration t =
      rig.run(request(CollectiveOp::send_recv, {0, 2}, sim::GiB(1), Algorithm::direct));
  CHECK(near_ps(t, sim::ps(21'474'836'480 + 3'000'000), 10));
}

TEST_CASE("hierarchical all-reduce: reduce-scatter in the host, rails across, all-gather",
          "[collectives]") {
  // 2 hosts x 4 GPUs on one leaf (small_fabric: NVLink 450 GB/s, alpha
  // 0.6 us; NIC 50 GB/s, alpha 2 us NIC-leaf-NIC; no spine, so no ECMP
  // collision), S = 64 MiB, 4 channels (one per rail in the middle phase).
  //   reduce-scatter in each host: 3 x 0.6 us + 3/4 S / 450 GB/s
  //     = 1.8 us + 111.848107 us
  //   all-reduce of each S/4 shard between the hosts on its rail, 2 steps:
  //     2 x 2 us + 2 (1/2) (S/4) / 50 GB/s = 4 us + 335.544320 us
  //   all-gather in each host: as the reduce-scatter.
  // Total 2 x 113.648107 + 339.544320 = 566.840534 us.
  test::SmallFabricSpec spec;
  spec.hosts = 2;
  spec.gpus_per_host = 4;
  spec.leaves = 1;
  CollectiveRig rig(test::small_fabric(spec), "flow", ideal_params(4));
  const sim::Duration t = rig.run(request(CollectiveOp::all_reduce, iota_ranks(8), sim::MiB(64),
                                          Algorithm::hierarchical));
  CHECK(near_ps(t, sim::ps(566'840'534), 10));
}
