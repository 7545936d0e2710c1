// The analytical model under link faults and with closed-form traffic:
// a transfer re-timed when a link of its path degrades or fails, one with
// no path left reported with its endpoints, and bytes a closed form timed
// counted on the links of their path.
#include <memory>

#include "catch.h"
#include "fabric_fixtures.h"
#include "models/network/analytical_model.h"
#include "models/network/unroutable_log.h"

using namespace gcsim;
using namespace gcsim::models::network;

namespace {

struct Rig {
  Fabric fabric;
  Routing routing;
  sim::Simulator sim;
  AnalyticalModel model;
  explicit Rig(const test::SmallFabricSpec& spec)
      : fabric(test::small_fabric(spec)), routing(fabric, 3), sim(1), model(sim, fabric, routing) {}
  // Starts rank src -> dst now and returns where its finish time will be
  // written (-1 until it arrives).
  std::shared_ptr<double> send(int src, int dst, sim::Bytes bytes) {
    auto done = std::make_shared<double>(-1.0);
    model.start({src, dst, bytes, 0}, [this, done] { *done = sim.now().seconds(); });
    return done;
  }
  void at(sim::Duration when, const std::string& cable, LinkState state, double fraction = 1.0) {
    sim.call_at(sim::Time::zero() + when, [this, cable, state, fraction] {
      const LinkId l = fabric.find_link(cable);
      for (LinkId x : {l, Fabric::reverse(l)}) fabric.set_link_state(x, state, fraction);
      for (LinkId x : {l, Fabric::reverse(l)}) model.on_link_state_changed(x);
    });
  }
};

// Path h0/gpu0 -> h1/gpu0 across the Clos: gpu->nic (PCIe 500 ns), nic->leaf,
// leaf->spine, spine->leaf, leaf->nic (4 x 500 ns), nic->gpu (500 ns) = 3 us;
// the bottleneck is a 400 Gb/s (50 GB/s) network link.
constexpr double kLatency = 3e-6;

}  // namespace

TEST_CASE("analytical: a link degraded mid-transfer slows the bytes not yet sent",
          "[network][analytical]") {
  test::SmallFabricSpec spec;  // 2 hosts x 2 GPUs; host h on leaf h
  Rig rig(spec);
  // 100 MB at 50 GB/s: 2 ms alone. At 1 ms, 50 MB have left; the NIC cable
  // drops to a quarter (12.5 GB/s), so the other 50 MB take 4 ms:
  // 1 ms + 4 ms + 3 us.
  auto done = rig.send(0, 2, sim::Bytes(100'000'000));
  rig.at(sim::ms(int64_t{1}), "h0/nic0->leaf0", LinkState::degraded, 0.25);
  rig.sim.run();
  CHECK(*done == Approx(5e-3 + kLatency).epsilon(1e-9));
  CHECK(rig.model.stats(sim::ms(int64_t{5})).reroutes == 0);
}

TEST_CASE("analytical: a transfer whose spine fails moves to another at the same rate",
          "[network][analytical]") {
  test::SmallFabricSpec spec;
  spec.spines = 2;
  Rig rig(spec);
  // Two spines; the uplink on the transfer's ECMP path goes down at 1 ms:
  // the 50 MB not yet sent go over the other spine, same bottleneck and
  // latency, so it ends at 2 ms + 3 us as if nothing happened.
  const std::vector<LinkId> path = rig.routing.ecmp_path({0, 2, 0});
  REQUIRE(path.size() == 6);
  const std::string uplink = rig.fabric.link(path[2]).name;  // leaf0->spineK
  auto done = rig.send(0, 2, sim::Bytes(100'000'000));
  rig.at(sim::ms(int64_t{1}), uplink, LinkState::down);
  rig.sim.run();
  CHECK(*done == Approx(2e-3 + kLatency).epsilon(1e-9));
  const NetworkStats s = rig.model.stats(sim::ms(int64_t{2}));
  CHECK(s.reroutes == 1);
  CHECK(s.unroutable == 0);
  // The ledger moved the unsent 50 MB onto the new uplink.
  double on_old = 0, on_new = 0;
  for (const auto& l : s.busiest_links) {
    if (l.name == uplink) on_old = l.bytes.as_double();
    if (l.name.rfind("leaf0->spine", 0) == 0 && l.name != uplink) on_new = l.bytes.as_double();
  }
  CHECK(on_old == Approx(50e6).epsilon(1e-6));
  CHECK(on_new == Approx(50e6).epsilon(1e-6));
}

TEST_CASE("analytical: a transfer cut off from its destination is unroutable, with who and why",
          "[network][analytical]") {
  test::SmallFabricSpec spec;
  Rig rig(spec);
  auto done = rig.send(0, 2, sim::Bytes(100'000'000));
  rig.at(sim::ms(int64_t{1}), "h0/nic0->leaf0", LinkState::down);
  rig.sim.run();
  CHECK(*done < 0);  // never arrives
  const NetworkStats s = rig.model.stats(sim::ms(int64_t{1}));
  CHECK(s.unroutable == 1);
  REQUIRE(s.unroutable_transfers.size() == 1);
  const UnroutableTransfer& t = s.unroutable_transfers[0];
  CHECK(t.src_rank == 0);
  CHECK(t.dst_rank == 2);
  CHECK(t.when == sim::Time::zero() + sim::ms(int64_t{1}));
  CHECK(describe_unroutable(rig.fabric, t) ==
        "rank 0 (h0/gpu0) -> rank 2 (h1/gpu0), 100MB at 1ms: no path while these links are "
        "down: h0/nic0<->leaf0");
}

TEST_CASE("analytical: closed-form traffic counts on every link of its path",
          "[network][analytical]") {
  test::SmallFabricSpec spec;
  Rig rig(spec);
  // Rank 0 -> rank 1 stays in host 0: gpu0->nvsw, nvsw->gpu1 (450 GB/s).
  // 0.9 GB over 1 s of run is 0.9e9 / 450e9 = 0.2% of each. The footprint
  // is per byte of message; counting scales it (here 0.9e9 x 1 B).
  const LinkFootprint f = rig.model.closed_form_footprint({{0, 1, 1.0}});
  REQUIRE(f.per_link.size() == 2);
  CHECK(f.transfers == 1);
  rig.model.count_closed_form(f, 0.9e9);
  const NetworkStats s = rig.model.stats(sim::Duration::from_seconds(1.0));
  REQUIRE(s.busiest_links.size() == 2);
  CHECK(s.busiest_links[0].name == "h0/gpu0->h0/nvsw");
  CHECK(s.busiest_links[1].name == "h0/nvsw->h0/gpu1");
  CHECK(s.max_link_utilization == Approx(0.002).epsilon(1e-12));
  CHECK(s.bytes_delivered == sim::Bytes(900'000'000));
  CHECK(s.transfers == 1);
}
