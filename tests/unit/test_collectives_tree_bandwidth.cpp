// The double binary tree's NIC load across hosts of 8 GPUs, one NIC per
// GPU. NCCL runs every tree channel twice on the same GPUs and NICs, once
// per tree (NVIDIA/nccl src/graph/connect.cc: connectTrees sets channel c
// on tree 0 and channel c + nChannels, a copy of it, on tree 1), and the
// second tree mirrors the first so that a host is interior in one tree and
// a leaf in the other (Sanders et al. 2009). Per pair of twin channels a
// NIC of a host interior in one tree carries that tree's 3 edges plus the
// other's 1, each edge x = S / C up and x down: 4x each way. With C = 2k
// channels on k NICs (one twin pair each) that is 4 S / 2k = S / 4 per NIC
// for k = 8, the whole node moving 2 S each way (1.5 S interior + 0.5 S
// leaf), NCCL's busbw ~ every NIC's bandwidth (tuning.cc: tree busBw =
// nChannels x bwInter x 0.92, algBw = busBw / 2).
//
// Before the fix channel c took tree c % 2 and left through rail c mod 8,
// so even rails only ever carried tree 0 and odd rails tree 1: the
// interior host's even NICs moved 3x per channel, 1.5 times the balanced
// load (4 x B200 hosts at 400 Gb/s, 1 GiB: 10.36 ms, busbw 201 GB/s;
// after: 8.08 ms, 257 GB/s, the rest being 24 channels on 8 rails, below).
#include <algorithm>
#include <cmath>
#include <vector>

#include "catch.h"
#include "models/collectives/group_layout.h"
#include "models/collectives/schedule.h"
#include "unit/test_collectives_rig.h"

using namespace gcsim;
using models::collectives::Algorithm;
using models::collectives::build_schedule;
using models::collectives::CollectiveOp;
using models::collectives::GroupLayout;
using models::collectives::ideal_params;
using models::collectives::Schedule;
using test::CollectiveRig;
using test::iota_ranks;
using test::request;

namespace {

// 4 hosts of 8 GPUs, one 400 Gb/s NIC per GPU, all on one leaf: GPU to GPU
// across hosts alpha = PCIe 0.5 + NIC-leaf 0.5 + leaf-NIC 0.5 + PCIe 0.5 =
// 2 us; inside a host 0.6 us (tests/unit/fabric_fixtures.h).
models::network::Fabric four_hosts_of_eight() {
  test::SmallFabricSpec s;
  s.hosts = 4;
  s.gpus_per_host = 8;
  s.leaves = 1;
  s.spines = 1;
  return test::small_fabric(s);
}

// Payload each GPU sends to other hosts (what its NIC carries out).
std::vector<double> sent_between_hosts(const Schedule& sch, const GroupLayout& layout, int n) {
  std::vector<double> out(static_cast<size_t>(n), 0.0);
  for (const auto& ph : sch.phases) {
    for (const auto& f : ph.flows) {
      if (!layout.same_host(f.src, f.dst)) out[static_cast<size_t>(f.src)] += f.payload;
    }
  }
  return out;
}

}  // namespace

TEST_CASE("tree: twin channels put both trees on every NIC (S/4 per NIC at 2k channels)",
          "[collectives][collective]") {
  const models::network::Fabric fabric = four_hosts_of_eight();
  const std::vector<int> ranks = iota_ranks(32);
  const GroupLayout layout(fabric, ranks);
  const double s = 96.0 * 1024 * 1024;
  const auto req = request(CollectiveOp::all_reduce, ranks, sim::MiB(96), Algorithm::tree);

  // 16 channels = 2 per rail. Hosts 1 and 2 are interior in one tree
  // (tree 0: 3 <- 1 <- {0, 2}; tree 1: 0 <- 2 <- {1, 3}): each of their
  // NICs carries one channel of each tree, 3x + 1x = 4 S/16 = S/4 =
  // 25,165,824 B. Hosts 0 and 3 are a root with one child in one tree and
  // a leaf in the other: 2 S/16 = S/8.
  const Schedule sch = build_schedule(req, Algorithm::tree, layout, 16, false);
  const std::vector<double> out = sent_between_hosts(sch, layout, 32);
  for (int g = 0; g < 32; ++g) {
    INFO("GPU " << g);
    const int host = g / 8;
    CHECK(out[static_cast<size_t>(g)] == Approx(host == 1 || host == 2 ? s / 4 : s / 8));
  }

  // The default 24 channels are 3 per rail, so a rail carries one tree
  // twice: the interior host's busiest NIC 3x + 1x + 3x = 7 S/24 (was
  // 9 S/24 with tree c % 2), the rest 5 S/24; both trees still carry 12
  // channels, S/2 each.
  const Schedule sch24 = build_schedule(req, Algorithm::tree, layout, 24, false);
  const std::vector<double> out24 = sent_between_hosts(sch24, layout, 32);
  CHECK(*std::max_element(out24.begin(), out24.end()) == Approx(7.0 * s / 24));
  double host1 = 0.0;
  for (int g = 8; g < 16; ++g) host1 += out24[static_cast<size_t>(g)];
  CHECK(host1 == Approx(2.0 * s));  // 1.5 S as tree-0 interior + 0.5 S as tree-1 leaf
}

TEST_CASE("tree all-reduce across 4 hosts of 8 GPUs is S/4 / B_nic + latency", "[collectives][collective]") {
  // Ideal protocol (no efficiencies, no fill), 16 channels, flow network.
  // Hand-computed: every NIC of hosts 1 and 2 moves S/4 each way, 4 flows
  // of S/16 sharing its 50 GB/s; NVLink is not the bottleneck (a GPU sends
  // at most 2 x 14 S/16 over its 450 GB/s link, S/257 per byte against
  // S/200). S = 100 MB: 25 MB / 50 GB/s = 500 us. Latency: 2 (8-1) chain
  // steps x 0.6 us + 2 depth = 4 tree steps x 2 us = 8.4 + 8 = 16.4 us.
  // Total 516.4 us (before the fix: 6 S/16 on the even rails, 750 us).
  CollectiveRig rig(four_hosts_of_eight(), "flow", ideal_params(16));
  const sim::Duration t = rig.run(
      request(CollectiveOp::all_reduce, iota_ranks(32), sim::Bytes(100'000'000), Algorithm::tree));
  CHECK(std::llabs(t.ps() - sim::ns(int64_t{516'400}).ps()) <= 10);
}
