// Packet model: PFC deadlock on a ring, links that go down or degrade
// mid-run, path policies (spraying), and the trace counters.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "catch.h"
#include "fabric_fixtures.h"
#include "models/network/packet/packet_model.h"

using namespace gcsim;
using namespace gcsim::models::network;

namespace {

// A ring of n switches, switch i joined to i+1; GPU i plugged straight into
// switch i (no NIC). 400G, 1 us per link.
Fabric switch_ring(int n) {
  Fabric f;
  std::vector<NodeId> gpu, sw;
  for (int i = 0; i < n; ++i) gpu.push_back(f.add_node({NodeKind::gpu, "gpu" + std::to_string(i), i, i}));
  for (int i = 0; i < n; ++i) {
    FabricNode s{NodeKind::network_switch, "sw" + std::to_string(i)};
    s.tier = 1;
    sw.push_back(f.add_node(s));
  }
  const auto bw = sim::Bandwidth::gbps(400);
  const auto lat = sim::us(int64_t{1});
  for (int i = 0; i < n; ++i) f.add_cable(gpu[static_cast<size_t>(i)], sw[static_cast<size_t>(i)], bw, lat, LinkKind::network);
  for (int i = 0; i < n; ++i) {
    f.add_cable(sw[static_cast<size_t>(i)], sw[static_cast<size_t>((i + 1) % n)], bw, lat, LinkKind::network);
  }
  return f;
}

// PFC without DCQCN on small buffers (512 KiB, Xoff 64 KiB, Xon 32 KiB), so
// that pauses spread within microseconds.
PacketConfig small_buffer_pfc() {
  PacketConfig cfg;
  cfg.dcqcn.enabled = false;
  cfg.buffer = sim::KiB(512);
  cfg.pfc.xoff = sim::KiB(64);
  cfg.pfc.xon = sim::KiB(32);
  return cfg;
}

}  // namespace

TEST_CASE("PFC deadlock on a ring is detected, reported and the run ends", "[packet][deadlock]") {
  // Six switches in a ring, each GPU sending 16 MiB two hops clockwise
  // (the shorter way): every ring link carries two flows at line rate, so
  // every ring ingress fills and pauses its upstream ring port. A paused
  // port's packets wait for the next ring port, which waits for the next:
  // a cyclic buffer dependency (Hu et al., HotNets 2016). Small buffers
  // (512 KiB, xoff 64 KiB) make it form within microseconds.
  Fabric f = switch_ring(6);
  Routing r(f, 1);
  for (int i = 0; i < 6; ++i) REQUIRE(r.ecmp_path({i, (i + 2) % 6, 0}).size() == 4);
  sim::Simulator sim;
  const PacketConfig cfg = small_buffer_pfc();
  PacketModel m(sim, f, r, cfg);
  int completed = 0;
  for (int i = 0; i < 6; ++i) m.start({i, (i + 2) % 6, sim::MiB(16)}, [&] { ++completed; });
  sim.run();  // returns: the model stops watching once nothing moves
  const NetworkStats st = m.stats(sim.now() - sim::Time::zero());
  CHECK(completed == 0);
  CHECK(st.deadlocks >= 1);
  CHECK(st.drops == 0);
  REQUIRE(!m.deadlocks().empty());
  std::vector<std::string> ports = m.deadlocks().front().ports;
  CHECK(m.deadlocks().front().priority == 0);
  // The cycle is the six clockwise ring ports, in wait order.
  REQUIRE(ports.size() == 6);
  const auto first = std::find(ports.begin(), ports.end(), "sw0->sw1");
  REQUIRE(first != ports.end());
  std::rotate(ports.begin(), first, ports.end());
  CHECK(ports == std::vector<std::string>{"sw0->sw1", "sw1->sw2", "sw2->sw3", "sw3->sw4",
                                          "sw4->sw5", "sw5->sw0"});
  // Detection waits for ports paused a whole check interval (100 us) and
  // the run ends one quiet interval later: well under a millisecond.
  CHECK(sim.now().seconds() < 1e-3);
}

TEST_CASE("the same ring without a cycle of waits does not deadlock", "[packet][deadlock]") {
  // One hop clockwise: every ring link carries one flow, which leaves the
  // ring at the next switch. Nothing is oversubscribed, no port waits on
  // another, and every transfer completes in its pipeline time.
  Fabric f = switch_ring(6);
  Routing r(f, 1);
  sim::Simulator sim;
  const PacketConfig cfg = small_buffer_pfc();
  PacketModel m(sim, f, r, cfg);
  int completed = 0;
  for (int i = 0; i < 6; ++i) m.start({i, (i + 1) % 6, sim::MiB(4)}, [&] { ++completed; });
  sim.run();
  CHECK(completed == 6);
  CHECK(m.stats(sim.now() - sim::Time::zero()).deadlocks == 0);
  // 1024 packets of 81.92 ns over 3 hops of 1 us:
  // (1024 - 1) × 81920 + 3 × 81920 + 3 × 1e6 ps = 87.04992 us.
  CHECK(sim.now().ps() == 1023 * 81920 + 3 * 81920 + 3'000'000);
  CHECK(m.stats(sim.now() - sim::Time::zero()).pfc_pauses == 0);
}

TEST_CASE("a link that goes down mid-transfer: packets on it are lost and resent, the flow is "
          "rerouted", "[packet][faults]") {
  // small_fabric: two spines. The flow's ECMP path uses one of them; at
  // 100 us that cable goes down (both directions). The packets on its wire
  // (about 0.5 us × 50 GB/s = 6 of them) are lost and resent one RTO
  // (320 us) after they were first sent; queued packets and the rest of the
  // flow take the other spine.
  Fabric f = test::small_fabric({});
  Routing r(f, 1);
  sim::Simulator sim;
  PacketModel m(sim, f, r);
  const std::vector<LinkId> path = r.ecmp_path({0, 2, 0});
  const LinkId up = path[2];  // leaf0 -> spine
  INFO(f.link(up).name);
  sim::Time done_at = sim::Time::max();
  m.start({0, 2, sim::MiB(64)}, [&] { done_at = sim.now(); });
  sim.call_at(sim::Time::zero() + sim::us(int64_t{100}), [&] {
    for (LinkId l : {up, Fabric::reverse(up)}) {
      f.set_link_state(l, LinkState::down);
      m.on_link_state_changed(l);
    }
  });
  sim.run();
  const NetworkStats st = m.stats(done_at - sim::Time::zero());
  REQUIRE(done_at < sim::Time::max());
  CHECK(st.bytes_delivered == sim::MiB(64));
  CHECK(st.reroutes == 1);
  CHECK(st.drops > 0);
  CHECK(st.drops < 16);
  // Every byte arrived; the last of the lost packets came one RTO after
  // its first try, which is later than the 1.34 ms the rest needs? No: it
  // is resent at ~420 us and overtakes nothing, so the end is unchanged
  // within the resend's own few microseconds.
  CHECK(done_at.seconds() == Approx(67108864.0 / 50e9).epsilon(0.01));
  // The dead spine link carried traffic only until 100 us.
  for (const LinkLoad& l : st.busiest_links) {
    if (l.link == up) CHECK(l.bytes.count() < 100e-6 * 50e9 * 1.01);
  }
}

TEST_CASE("a degraded link slows what crosses it", "[packet][faults]") {
  // The source NIC's uplink at half bandwidth from the start: 25 GB/s is
  // the bottleneck, 64 MiB take twice as long.
  Fabric f = test::small_fabric({});
  Routing r(f, 1);
  sim::Simulator sim;
  PacketModel m(sim, f, r);
  const LinkId l = f.find_link("h0/nic0->leaf0");
  f.set_link_state(l, LinkState::degraded, 0.5);
  m.on_link_state_changed(l);
  sim::Time done_at;
  m.start({0, 2, sim::MiB(64)}, [&] { done_at = sim.now(); });
  sim.run();
  CHECK(done_at.seconds() == Approx(2 * 67108864.0 / 50e9).epsilon(0.01));
  CHECK(m.stats(done_at - sim::Time::zero()).drops == 0);
}

TEST_CASE("spraying spreads every flow evenly over the spines; ECMP keeps one path",
          "[packet][routing]") {
  // Four spines. Spraying: each leaf sends packet k of a flow to spine
  // k mod 4, so each uplink carries a quarter of the bytes (to a packet).
  // ECMP: the flow crosses exactly one spine.
  test::SmallFabricSpec s;
  s.spines = 4;
  for (RoutingPolicy policy : {RoutingPolicy::spray, RoutingPolicy::ecmp, RoutingPolicy::adaptive}) {
    Fabric f = test::small_fabric(s);
    Routing r(f, 1);
    sim::Simulator sim;
    PacketModel m(sim, f, r, {}, policy);
    m.start({0, 2, sim::MiB(4)}, [] {});
    sim.run();
    const NetworkStats st = m.stats(sim.now() - sim::Time::zero());
    CHECK(st.bytes_delivered == sim::MiB(4));
    std::map<std::string, int64_t> up;
    for (const LinkLoad& l : st.busiest_links) {
      if (l.name.rfind("leaf0->spine", 0) == 0) up[l.name] = l.bytes.count();
    }
    if (policy == RoutingPolicy::spray) {
      REQUIRE(up.size() == 4);
      for (auto& [name, bytes] : up) CHECK(bytes == 1048576);  // 256 packets each
    } else if (policy == RoutingPolicy::ecmp) {
      CHECK(up.size() == 1);
    } else {
      // Adaptive: one flow never builds a queue on an uplink, so the
      // least-loaded choice is always the first idle hop: at least one.
      CHECK(!up.empty());
    }
  }
}

TEST_CASE("trace counters: utilization and queue depth only with a listener", "[packet]") {
  Fabric f = test::small_fabric({});
  Routing r(f, 1);
  sim::Simulator sim;
  PacketModel m(sim, f, r);
  std::vector<LinkCounterSample> samples;
  m.set_counter_listener([&](const LinkCounterSample& s) { samples.push_back(s); });
  m.start({0, 2, sim::MiB(8)}, [] {});
  sim.run();
  // 8 MiB at 50 GB/s = 168 us: ~16 samples of 10 us on the NIC's uplink,
  // the middle ones at full utilization.
  const LinkId nic_up = f.find_link("h0/nic0->leaf0");
  int full = 0, on_link = 0;
  for (const LinkCounterSample& s : samples) {
    if (s.link != nic_up) continue;
    ++on_link;
    if (s.utilization > 0.99 && s.utilization < 1.01) ++full;
    CHECK(s.queue_bytes >= 0);
  }
  CHECK(on_link >= 16);
  CHECK(full >= 14);
}
