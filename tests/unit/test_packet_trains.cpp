// Packet trains (network.trains): exact where no queue builds, cut back
// into packets where one does, and the measured error of the approximation
// against the per-packet run on contended traffic.
#include <algorithm>
#include <functional>
#include <vector>

#include "catch.h"
#include "fabric_fixtures.h"
#include "models/network/packet/packet_model.h"

using namespace gcsim;
using namespace gcsim::models::network;

namespace {

struct Run {
  std::vector<int64_t> done_ps;  // per transfer, in start order
  NetworkStats stats;
  uint64_t hops = 0;
  uint64_t events = 0;
  int64_t last_ps() const { return *std::max_element(done_ps.begin(), done_ps.end()); }
};

PacketConfig with_trains(PacketConfig cfg, int packets = 16) {
  cfg.trains.enabled = true;
  cfg.trains.packets = packets;
  return cfg;
}

// Starts every transfer at t = 0 and runs to the end.
// `seed` draws the ECN marks (the routing's hash seed stays 1).
Run run_all(Fabric& f, const PacketConfig& cfg, const std::vector<Transfer>& ts, uint64_t seed = 1) {
  Routing r(f, 1);
  sim::Simulator sim(seed);
  PacketModel m(sim, f, r, cfg);
  Run run;
  run.done_ps.assign(ts.size(), -1);
  for (size_t i = 0; i < ts.size(); ++i) {
    m.start(ts[i], [&run, &sim, i] { run.done_ps[i] = sim.now().ps(); });
  }
  sim.run();
  run.stats = m.stats(sim.now() - sim::Time::zero());
  run.hops = m.packet_hops();
  run.events = sim.events_executed();
  for (int64_t d : run.done_ps) REQUIRE(d > 0);  // every transfer completed
  return run;
}

double relative_error(int64_t approx, int64_t exact) {
  return std::abs(static_cast<double>(approx - exact)) / static_cast<double>(exact);
}

// One GPU per host, every NIC on one leaf (400G, 0.5 us per hop).
Fabric one_leaf(int hosts) {
  test::SmallFabricSpec s;
  s.hosts = hosts;
  s.gpus_per_host = 1;
  s.leaves = 1;
  s.spines = 1;
  return test::small_fabric(s);
}

}  // namespace

TEST_CASE("trains: an uncontended transfer ends at the per-packet time to the picosecond",
          "[packet][trains]") {
  // The closed forms of test_packet_transfer.cpp: across nodes
  // (N - 1) × 81.92 ns + 2 × 64 ns + 4 × 81.92 ns + 6 × 0.5 us, inside a node
  // (N - 1) × 9102 + 2 × 9102 ps + 0.6 us. A train keeps its first and last
  // packets' store-and-forward times, so nothing moves; it saves events.
  Fabric f = test::small_fabric({});
  const int64_t n = 262144;  // 1 GiB of 4096 B packets
  SECTION("across nodes, DCQCN pacing at line rate") {
    const Run exact = run_all(f, {}, {{0, 2, sim::GiB(1)}});
    const Run trains = run_all(f, with_trains({}), {{0, 2, sim::GiB(1)}});
    CHECK(exact.done_ps[0] == (n - 1) * 81920 + 2 * 64000 + 4 * 81920 + 6 * 500000);
    CHECK(trains.done_ps[0] == exact.done_ps[0]);
    CHECK(trains.hops == exact.hops);  // packet-hops count packets, trains or not
    CHECK(trains.stats.bytes_delivered == sim::GiB(1));
    CHECK(trains.stats.max_link_utilization == exact.stats.max_link_utilization);
    // 16 packets a train: at least 8 times fewer events.
    CHECK(trains.events * 8 < exact.events);
  }
  SECTION("inside a node over NVSwitch; a short last packet travels alone") {
    const sim::Bytes size = sim::GiB(1) + sim::Bytes(1000);
    const Run exact = run_all(f, {}, {{0, 1, size}});
    const Run trains = run_all(f, with_trains({}, 64), {{0, 1, size}});
    CHECK(trains.done_ps[0] == exact.done_ps[0]);
    CHECK(trains.hops == exact.hops);
    CHECK(trains.stats.bytes_delivered == size);
    CHECK(trains.events * 30 < exact.events);
  }
}

TEST_CASE("trains: off by default, and never without PFC or under spraying",
          "[packet][trains]") {
  Fabric f = test::small_fabric({});
  const std::vector<Transfer> one{{0, 2, sim::MiB(4)}};
  CHECK_FALSE(PacketConfig{}.trains.enabled);
  const Run exact = run_all(f, {}, one);
  PacketConfig lossy = with_trains({});
  lossy.pfc.enabled = false;
  PacketConfig lossy_exact;
  lossy_exact.pfc.enabled = false;
  CHECK(run_all(f, lossy, one).events == run_all(f, lossy_exact, one).events);
  Routing r(f, 1);
  for (RoutingPolicy p : {RoutingPolicy::spray, RoutingPolicy::adaptive}) {
    uint64_t events[2];
    for (int on = 0; on < 2; ++on) {
      sim::Simulator sim;
      PacketModel m(sim, f, r, on ? with_trains({}) : PacketConfig{}, p);
      m.start(one[0], [] {});
      sim.run();
      events[on] = sim.events_executed();
    }
    CHECK(events[0] == events[1]);
  }
  CHECK(exact.events > 0);
}

// Contended traffic: trains run until a queue builds, then its packets go
// one by one. Each case sets the error of trains (16 packets, the default)
// against the per-packet run beside the per-packet model's own spread: the
// same run with another seed for its ECN marks, where DCQCN acts.
namespace {

double worst_flow_error(const Run& a, const Run& b) {
  double worst = 0.0;
  for (size_t i = 0; i < a.done_ps.size(); ++i) {
    worst = std::max(worst, relative_error(a.done_ps[i], b.done_ps[i]));
  }
  return worst;
}

std::vector<Transfer> incast8() {
  std::vector<Transfer> ts;
  for (int i = 1; i <= 8; ++i) ts.push_back({i, 0, sim::MiB(16)});
  return ts;
}

}  // namespace

TEST_CASE("trains: incast with PFC only ends at the per-packet time", "[packet][trains]") {
  // Each sender's first train crosses its NIC and the leaf while nothing
  // is queued; the receiver's port queues from the second train on, which
  // is cut into packets, and the senders send packets from then on. The
  // receiver's link is full either way: 2,686.56448 us both (measured).
  Fabric f = one_leaf(9);
  PacketConfig cfg;
  cfg.dcqcn.enabled = false;
  const Run exact = run_all(f, cfg, incast8());
  const Run trains = run_all(f, with_trains(cfg), incast8());
  CHECK(trains.last_ps() == exact.last_ps());
  CHECK(trains.stats.drops == 0);
  CHECK(trains.stats.pfc_pauses == exact.stats.pfc_pauses);
  CHECK(trains.stats.bytes_delivered == sim::MiB(128));
  CHECK(trains.hops == exact.hops);
}

TEST_CASE("trains: contended runs under DCQCN stay within the per-packet model's own spread",
          "[packet][trains]") {
  SECTION("incast 8 -> 1, default config") {
    // Measured: trains end 2.8% before the per-packet run (3.881 against
    // 3.993 ms), single senders up to 16.9% apart; the per-packet run with
    // other ECN draws ends 3.9% later (4.147 ms), single senders up to 24.9%
    // apart. DCQCN's cuts follow single marks, so both move. Bounds: 5% on
    // the last completion, the seed's spread on single flows.
    Fabric f = one_leaf(9);
    const Run exact = run_all(f, {}, incast8());
    const Run trains = run_all(f, with_trains({}), incast8());
    const Run reseeded = run_all(f, {}, incast8(), 2);
    CHECK(worst_flow_error(trains, exact) <= worst_flow_error(reseeded, exact));
    CHECK(relative_error(trains.last_ps(), exact.last_ps()) < 0.05);
    CHECK(trains.stats.drops == 0);
  }
  SECTION("permutation across an 8-spine Clos: ECMP collisions") {
    test::SmallFabricSpec s;
    s.hosts = 8;
    s.gpus_per_host = 8;
    s.leaves = 2;
    s.spines = 8;
    Fabric f = test::small_fabric(s);
    std::vector<Transfer> ts;
    // Measured: last completion 1.882 against 1.953 ms (3.6%), single flows
    // up to 64.3% apart; another ECN seed: 1.932 ms (1.1%), single flows up
    // to 62.2% apart. Bounds: 5%, and 1.1 × the seed's spread on single flows.
    for (int r = 0; r < 64; ++r) ts.push_back({r, (r + 8) % 64, sim::MiB(8), static_cast<uint32_t>(r)});
    const Run exact = run_all(f, {}, ts);
    const Run trains = run_all(f, with_trains({}), ts);
    const Run reseeded = run_all(f, {}, ts, 2);
    CHECK(worst_flow_error(trains, exact) <= 1.1 * worst_flow_error(reseeded, exact));
    CHECK(relative_error(trains.last_ps(), exact.last_ps()) < 0.05);
  }
}

TEST_CASE("trains: a ring of 8 channels per GPU over NVSwitch and NICs", "[packet][trains]") {
  // 16 GPUs on 2 hosts, every GPU sends 2 MiB on each of 8 channels to the
  // next: the 8 channels of a GPU share its path, so they take turns per
  // train. Measured: the last transfer ends at the per-packet time to the
  // picosecond, single channels up to 5.1% apart (the turns' order), with
  // 2.9 times fewer events.
  test::SmallFabricSpec s;
  s.hosts = 2;
  s.gpus_per_host = 8;
  Fabric f = test::small_fabric(s);
  std::vector<Transfer> ts;
  for (uint32_t c = 0; c < 8; ++c) {
    for (int r = 0; r < 16; ++r) ts.push_back({r, (r + 1) % 16, sim::MiB(2), c});
  }
  const Run exact = run_all(f, {}, ts);
  const Run trains = run_all(f, with_trains({}), ts);
  CHECK(trains.last_ps() == exact.last_ps());
  CHECK(worst_flow_error(trains, exact) < 0.06);
  CHECK(trains.events * 2 < exact.events);
  CHECK(trains.hops == exact.hops);
}
