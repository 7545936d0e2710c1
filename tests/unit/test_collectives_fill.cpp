// The pipeline start-up ("fill") of a tree all-reduce: the first slice
// crosses the tree's fill hops one after another, each at one channel's
// rate on its own tier. Inside a host the chain's hops cross NVLink, only
// the host-to-host edges the NICs, so a tree over hosts of 8 GPUs pays
// 2(8-1) + 2 depth - 1 hops, of which only the 2 depth host-to-host ones at
// the NIC's per-channel rate (models/collectives/collective_engine.cpp).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "catch.h"
#include "models/collectives/group_layout.h"
#include "models/collectives/schedule.h"
#include "unit/fabric_fixtures.h"
#include "unit/test_collectives_rig.h"

using namespace gcsim;
using models::collectives::Algorithm;
using models::collectives::build_schedule;
using models::collectives::CollectiveOp;
using models::collectives::GroupLayout;
using models::collectives::ideal_params;
using models::collectives::Protocol;
using test::CollectiveRig;
using test::iota_ranks;
using test::request;

TEST_CASE("tree fill: NVLink hops at NVLink's channel rate, host hops at the NIC's",
          "[collectives][collective]") {
  // 4 hosts of 8 GPUs (NVLink 450 GB/s, one 50 GB/s NIC per GPU), ideal
  // protocol with a 1 MB slice, 16 channels, 100 MB.
  test::SmallFabricSpec spec;
  spec.hosts = 4;
  spec.gpus_per_host = 8;
  spec.leaves = 1;
  spec.spines = 1;
  const auto fabric = test::small_fabric(spec);
  const std::vector<int> ranks = iota_ranks(32);
  const auto req = request(CollectiveOp::all_reduce, ranks, sim::Bytes(100'000'000), Algorithm::tree);

  // Channel edges leaving each GPU per tier, from the schedule itself; a
  // channel's rate on a tier is the link over the busiest GPU's edges.
  const GroupLayout layout(fabric, ranks);
  const auto sch = build_schedule(req, Algorithm::tree, layout, 16, false);
  REQUIRE(sch.phases.size() == 1);
  std::vector<int> up(32, 0), out(32, 0);
  for (const auto& f : sch.phases[0].flows) {
    (layout.same_host(f.src, f.dst) ? up : out)[static_cast<size_t>(f.src)] += f.channels;
  }
  const double rate_up = 450e9 / *std::max_element(up.begin(), up.end());
  const double rate_out = 50e9 / *std::max_element(out.begin(), out.end());
  // Hops: the chain inside a host up and down, 2 (8 - 1) = 14 steps, and
  // the tree of 4 hosts (depth 2) up and down, 4 steps; the slice is in
  // flight after the first, so 17 fill hops, 4 of them between hosts.
  const auto& p = sch.phases[0];
  CHECK(p.steps_scale_up == 14);
  CHECK(p.steps_scale_out == 4);
  CHECK(p.fill_hops == 17);
  const double slice = 1e6;
  const double fill = slice * (13 / rate_up + 4 / rate_out);

  auto params = ideal_params(16);
  const sim::Duration without = CollectiveRig(fabric, "flow", params).run(req);
  params.protocol_of(Protocol::simple).slice = sim::Bytes(1'000'000);
  const sim::Duration with = CollectiveRig(fabric, "flow", params).run(req);
  INFO("rate up " << rate_up / 1e9 << " GB/s, out " << rate_out / 1e9 << " GB/s per channel");
  CHECK(std::abs((with - without).seconds() - fill) < 2e-12);
  // Here 16.07 GB/s per channel over NVLink (28 edges on 450 GB/s) and
  // 12.5 over the NIC (4 edges on 50 GB/s): 1.129 ms of fill, where every
  // hop at the slower tier's rate (the engine before) made 17 x 1 MB /
  // 12.5 GB/s = 1.36 ms.
  CHECK(fill == Approx(13e6 / (450e9 / 28) + 4e6 / 12.5e9));
}
