// The flow network model on hand-built fabrics (fabric_fixtures.h): single
// transfers against latency + size / bandwidth, incast, ECMP collisions
// against the balls-in-bins expectation, link failures and degradation.
// Default fixture figures: NIC and uplinks 400 Gb/s = 50e9 B/s, NVLink
// 450 GB/s, PCIe 64 GB/s; latency 0.5 us per switch hop and PCIe hop, 0.3 us
// per NVLink hop.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "catch.h"
#include "fabric_fixtures.h"
#include "models/network/flow_model.h"

using namespace gcsim;
using namespace gcsim::models::network;

namespace {
constexpr double kGiB = 1073741824.0;
constexpr double kNic = 50e9;  // 400 Gb/s in bytes/s

// Runs a batch of transfers started at time 0; returns each one's
// completion time (Time::max() if it never completed).
struct Batch {
  std::vector<sim::Time> done;
  NetworkStats stats;
};
Batch run_batch(Fabric& f, uint64_t seed, RoutingPolicy policy, const std::vector<Transfer>& ts) {
  sim::Simulator sim(seed);
  Routing r(f, seed);
  FlowModel m(sim, f, r, policy);
  Batch b;
  b.done.assign(ts.size(), sim::Time::max());
  for (size_t i = 0; i < ts.size(); ++i) {
    m.start(ts[i], [&b, &sim, i] { b.done[i] = sim.now(); });
  }
  sim.run();
  b.stats = m.stats(sim.now() - sim::Time::zero());
  return b;
}

sim::Time at(sim::Duration d) { return sim::Time::zero() + d; }

sim::Time latest(const std::vector<sim::Time>& v) { return *std::max_element(v.begin(), v.end()); }
}  // namespace

TEST_CASE("flow model: one 1 GiB transfer takes latency + size / bottleneck, exactly",
          "[flow]") {
  Fabric f = test::small_fabric({});
  for (RoutingPolicy p : {RoutingPolicy::ecmp, RoutingPolicy::spray, RoutingPolicy::adaptive}) {
    // Across hosts: PCIe 0.5 us + four switch hops × 0.5 us + PCIe 0.5 us =
    // 3 us; 1 GiB at the NIC's 50e9 B/s = 21.474836480 ms. Total 21.477836480 ms.
    const Batch across = run_batch(f, 1, p, {{0, 2, sim::GiB(1)}});
    CHECK(across.done[0] == at(sim::us(int64_t{3}) + sim::transfer_time(sim::GiB(1),
                                                                  sim::Bandwidth::gbps(400))));
    CHECK(across.done[0].seconds() == Approx(3e-6 + kGiB / kNic).epsilon(1e-9));
    // Inside a host over the NVSwitch: 2 × 0.3 us + 1 GiB / 450e9 B/s =
    // 0.6 us + 2.386092942 ms.
    const Batch inside = run_batch(f, 1, p, {{0, 1, sim::GiB(1)}});
    CHECK(inside.done[0] == at(sim::ns(int64_t{600}) +
                               sim::transfer_time(sim::GiB(1), sim::Bandwidth::gb_per_s(450))));
    CHECK(inside.done[0].seconds() == Approx(0.6e-6 + kGiB / 450e9).epsilon(1e-9));
    CHECK(inside.stats.bytes_delivered == sim::GiB(1));
    CHECK(inside.stats.transfers == 1);
  }
}

TEST_CASE("flow model: a transfer to itself is immediate, an empty one takes the latency",
          "[flow]") {
  Fabric f = test::small_fabric({});
  const Batch b = run_batch(f, 1, RoutingPolicy::ecmp, {{1, 1, sim::GiB(1)}, {0, 3, sim::Bytes(0)}});
  CHECK(b.done[0] == sim::Time::zero());
  CHECK(b.done[1] == at(sim::us(int64_t{3})));
}

TEST_CASE("flow model: incast of 8 senders shares the receiver's NIC link evenly", "[flow]") {
  // 9 single-GPU hosts on 3 leaves (host h on leaf h % 3), 2 spines. Hosts
  // 1..8 each send 1 GiB to host 0. The leaf0 -> h0/nic0 link (50e9 B/s) is
  // the only shared bottleneck: each flow gets 50e9 / 8 = 6.25e9 B/s (uplinks
  // carry at most 6 × 6.25e9 = 37.5e9 < 50e9). Everyone drains at
  // 8 GiB / 50e9 = 171.798691840 ms; hosts 3 and 6 share leaf0 with the
  // receiver (2 us of latency), the rest cross a spine (3 us).
  test::SmallFabricSpec spec;
  spec.hosts = 9;
  spec.gpus_per_host = 1;
  spec.leaves = 3;
  Fabric f = test::small_fabric(spec);
  sim::Simulator sim(1);
  Routing r(f, 1);
  FlowModel m(sim, f, r, RoutingPolicy::ecmp);
  std::vector<sim::Time> done(8, sim::Time::max());  // by sender rank - 1
  for (int s = 1; s <= 8; ++s) {
    m.start({s, 0, sim::GiB(1)}, [&, s] { done[static_cast<size_t>(s - 1)] = sim.now(); });
  }
  sim.run(at(sim::us(int64_t{1})));
  const LinkId rx = f.find_link("leaf0->h0/nic0");
  CHECK(m.solver().load(rx) == Approx(kNic).epsilon(1e-12));  // full
  for (auto flow : m.solver().flows_on(rx)) CHECK(m.solver().rate(flow) == Approx(kNic / 8));
  CHECK(m.solver().flows_on(rx).size() == 8);
  sim.run();
  const sim::Duration drain = sim::transfer_time(sim::GiB(8), sim::Bandwidth::gbps(400));
  for (int s = 1; s <= 8; ++s) {
    const int64_t lat_us = s % 3 == 0 ? 2 : 3;
    CHECK(std::llabs((done[static_cast<size_t>(s - 1)] - at(drain + sim::us(lat_us))).ps()) <= 1);
  }
  CHECK(latest(done).seconds() == Approx(8 * kGiB / kNic + 3e-6).epsilon(1e-9));
  const NetworkStats st = m.stats(sim.now() - sim::Time::zero());
  REQUIRE_FALSE(st.busiest_links.empty());
  CHECK(st.busiest_links.front().name == "leaf0->h0/nic0");
  // Full for the whole drain, idle for the last 3 us of latency.
  CHECK(st.max_link_utilization == Approx(drain.seconds() / (drain.seconds() + 3e-6)));
  CHECK(st.bytes_delivered == sim::GiB(8));
  CHECK(st.transfers == 8);
}

namespace {
// P(the fullest of m bins holds <= k of n balls thrown uniformly), exactly:
// n!/m^n × [x^n] (Σ_{j<=k} x^j / j!)^m.
double p_max_at_most(int n, int m, int k) {
  std::vector<double> poly(static_cast<size_t>(n) + 1, 0.0), term(poly.size(), 0.0);
  poly[0] = 1.0;
  double fact = 1.0;
  for (int j = 0; j <= n; ++j) {
    if (j > 0) fact *= j;
    term[static_cast<size_t>(j)] = j <= k ? 1.0 / fact : 0.0;
  }
  for (int b = 0; b < m; ++b) {
    std::vector<double> next(poly.size(), 0.0);
    for (int a = 0; a <= n; ++a) {
      for (int c = 0; a + c <= n; ++c) {
        next[static_cast<size_t>(a + c)] += poly[static_cast<size_t>(a)] * term[static_cast<size_t>(c)];
      }
    }
    poly = next;
  }
  return poly[static_cast<size_t>(n)] * fact / std::pow(static_cast<double>(m), n);
}
}  // namespace

TEST_CASE("flow model: ECMP collisions on permutation traffic follow balls in bins", "[flow]") {
  // 8 hosts × 8 GPUs, host h alone on leaf h, 8 spines, every link 400 Gb/s:
  // a non-blocking two-tier Clos. Permutation: GPU g of host h sends 256 MiB
  // to GPU g of host h+1 (mod 8). Each flow's only choice is its spine at the
  // source leaf, and the spine -> leaf h+1 link carries exactly the flows of
  // leaf h -> that spine, so a flow sharing its uplink with k-1 others runs at
  // C/k throughout and the permutation ends at M × size / C + 3 us, M the
  // fullest uplink. With spraying every uplink carries 8 × 1/8 of a flow, so
  // all run at C: size / C + 3 us. With ECMP, M is the maximum over the 8
  // leaves of the fullest of 8 bins under 8 balls; exactly (p_max_at_most):
  // E[fullest bin of one leaf] = 2.5972, E[M] = 3.6070, sd(M) = 0.649.
  test::SmallFabricSpec spec;
  spec.hosts = 8;
  spec.gpus_per_host = 8;
  spec.leaves = 8;
  spec.spines = 8;
  Fabric f = test::small_fabric(spec);
  const sim::Bytes size = sim::MiB(256);
  std::vector<Transfer> perm;
  for (int h = 0; h < 8; ++h) {
    for (int g = 0; g < 8; ++g) perm.push_back({h * 8 + g, ((h + 1) % 8) * 8 + g, size});
  }
  const sim::Duration lat = sim::us(int64_t{3});
  const sim::Time spray_end = latest(run_batch(f, 1, RoutingPolicy::spray, perm).done);
  CHECK(spray_end == at(lat + sim::transfer_time(size, sim::Bandwidth::gbps(400))));
  // Adaptive routing sees the flows already placed and spreads them evenly.
  CHECK(latest(run_batch(f, 1, RoutingPolicy::adaptive, perm).done) == spray_end);

  const int seeds = 300;
  double sum_m = 0.0, sum_leaf_max = 0.0, sum_end = 0.0;
  std::set<int64_t> distinct_ends;
  for (int seed = 1; seed <= seeds; ++seed) {
    const Batch b = run_batch(f, static_cast<uint64_t>(seed), RoutingPolicy::ecmp, perm);
    // The fullest uplink, counted from the routing alone.
    Routing r(f, static_cast<uint64_t>(seed));
    std::map<LinkId, int> per_uplink;
    for (const Transfer& t : perm) ++per_uplink[r.ecmp_path({t.src_rank, t.dst_rank, 0})[2]];
    std::vector<int> leaf_max(8, 0);
    int m = 0;
    for (auto [l, k] : per_uplink) {
      const int leaf = f.node(f.link(l).from).name.back() - '0';
      leaf_max[static_cast<size_t>(leaf)] = std::max(leaf_max[static_cast<size_t>(leaf)], k);
      m = std::max(m, k);
    }
    for (int x : leaf_max) sum_leaf_max += x;
    sum_m += m;
    const sim::Time end = latest(b.done);
    // The model's makespan is exactly the fullest uplink's share.
    CHECK(end == at(lat + sim::transfer_time(size.as_double(),
                                             sim::Bandwidth::bytes_per_s(kNic / m))));
    CHECK(end > spray_end);  // M = 1 has probability (8!/8^8)^8, about 1e-21
    sum_end += (end - sim::Time::zero()).seconds();
    distinct_ends.insert(end.ps());
  }
  double e_leaf = 0.0, e_m = 0.0;
  for (int k = 0; k < 8; ++k) {
    const double p = p_max_at_most(8, 8, k);
    e_leaf += 1.0 - p;
    e_m += 1.0 - std::pow(p, 8);
  }
  CHECK(e_leaf == Approx(2.5972328186).epsilon(1e-9));
  CHECK(e_m == Approx(3.6069613842).epsilon(1e-9));
  // 4 standard errors: sd(M) / sqrt(300) = 0.0375; per leaf sd 0.70 / sqrt(2400).
  CHECK(std::fabs(sum_m / seeds - e_m) < 4 * 0.649 / std::sqrt(seeds));
  CHECK(std::fabs(sum_leaf_max / (8 * seeds) - e_leaf) < 0.06);
  CHECK(sum_end / seeds ==
        Approx(3e-6 + (sum_m / seeds) * size.as_double() / kNic).epsilon(1e-9));
  CHECK(distinct_ends.size() >= 3);  // varies with the seed
}

TEST_CASE("flow model: a link set down mid-transfer reroutes the flow", "[flow]") {
  // 2 hosts × 2 GPUs, leaves 0 and 1, spines 0 and 1. Flow A (rank 0 -> 2)
  // and flow B (rank 1 -> 3), 1 GiB each, on different spines: each runs
  // alone at 50e9 B/s. At 10 ms leaf0 <-> A's spine goes down; A moves to
  // B's spine with 2^30 - 5e8 = 573,741,824 bytes left, and from then on
  // both share leaf0 -> spine and spine -> leaf1 at 25e9 B/s each: both
  // drain at 10 ms + 573741824 / 25e9 = 32.94967296 ms and arrive 3 us later.
  Fabric f = test::small_fabric({});
  Routing r(f, 3);
  auto spine_of = [&](int src, int dst, uint32_t qp) {
    return f.link(r.ecmp_path({src, dst, qp})[2]).to;
  };
  uint32_t qp_b = 0;
  while (spine_of(1, 3, qp_b) == spine_of(0, 2, 0)) ++qp_b;
  const LinkId a_uplink = r.ecmp_path({0, 2, 0})[2];

  sim::Simulator sim(1);
  FlowModel m(sim, f, r, RoutingPolicy::ecmp);
  sim::Time done_a = sim::Time::max(), done_b = sim::Time::max();
  m.start({0, 2, sim::GiB(1), 0}, [&] { done_a = sim.now(); });
  m.start({1, 3, sim::GiB(1), qp_b}, [&] { done_b = sim.now(); });
  sim.call_at(at(sim::ms(int64_t{10})), [&] {
    f.set_link_state(a_uplink, LinkState::down);
    f.set_link_state(Fabric::reverse(a_uplink), LinkState::down);
    m.on_link_state_changed(a_uplink);
  });
  sim.run();
  const double expected = 0.010 + (kGiB - 5e8) / 25e9 + 3e-6;  // 32.95267296 ms
  CHECK(done_a.seconds() == Approx(expected).epsilon(1e-9));
  CHECK(done_b.seconds() == Approx(expected).epsilon(1e-9));
  const NetworkStats st = m.stats(sim.now() - sim::Time::zero());
  CHECK(st.reroutes == 1);
  CHECK(st.unroutable == 0);
  CHECK(st.bytes_delivered == sim::GiB(2));
}

TEST_CASE("flow model: a partition leaves flows unroutable", "[flow]") {
  // Both uplinks of leaf0 go down at 1 ms: rank 0's flow to rank 2 has no
  // path left and never completes; a flow inside host 0 is unaffected.
  Fabric f = test::small_fabric({});
  Routing r(f, 1);
  sim::Simulator sim(1);
  FlowModel m(sim, f, r, RoutingPolicy::ecmp);
  bool across_done = false, inside_done = false;
  m.start({0, 2, sim::GiB(1)}, [&] { across_done = true; });
  m.start({0, 1, sim::GiB(1)}, [&] { inside_done = true; });
  sim.call_at(at(sim::ms(int64_t{1})), [&] {
    for (const char* name : {"leaf0->spine0", "leaf0->spine1"}) {
      const LinkId l = f.find_link(name);
      f.set_link_state(l, LinkState::down);
      f.set_link_state(Fabric::reverse(l), LinkState::down);
      m.on_link_state_changed(l);
    }
  });
  sim.run();
  CHECK_FALSE(across_done);
  CHECK(inside_done);
  const NetworkStats st = m.stats(sim.now() - sim::Time::zero());
  CHECK(st.unroutable == 1);
  CHECK(m.sending() == 0);
  // A new transfer across the partition is unroutable at once.
  m.start({0, 2, sim::GiB(1)}, [&] { across_done = true; });
  CHECK(m.stats(sim::ms(int64_t{1})).unroutable == 2);
}

TEST_CASE("flow model: a link degraded to half doubles the bottleneck-limited part", "[flow]") {
  // Before the start: both of leaf0's uplinks at fraction 0.5 (25e9 B/s), so
  // any path's bottleneck is 25e9: 3 us + 2^30 / 25e9 = 42.952672 ms, i.e.
  // the 21.474836 ms at full speed doubled.
  {
    Fabric f = test::small_fabric({});
    for (const char* name : {"leaf0->spine0", "leaf0->spine1"}) {
      f.set_link_state(f.find_link(name), LinkState::degraded, 0.5);
    }
    const Batch b = run_batch(f, 1, RoutingPolicy::ecmp, {{0, 2, sim::GiB(1)}});
    CHECK(b.done[0] == at(sim::us(int64_t{3}) + sim::transfer_time(sim::GiB(1),
                                                                sim::Bandwidth::gbps(200))));
    CHECK(b.done[0].seconds() - 3e-6 == Approx(2 * kGiB / kNic).epsilon(1e-12));
  }
  // Mid-transfer: at 10 ms the flow's uplink drops to half. 5e8 bytes went
  // at 50e9, the remaining 573,741,824 go at 25e9: done at 10 ms +
  // 22.94967296 ms + 3 us. Restored at 20 ms instead, the rest speeds up
  // again: 5e8 + 2.5e8 bytes by 20 ms, 323,741,824 left at 50e9 = 6.47483648
  // ms, done at 26.47483648 ms + 3 us.
  for (const bool restore : {false, true}) {
    Fabric f = test::small_fabric({});
    Routing r(f, 1);
    sim::Simulator sim(1);
    FlowModel m(sim, f, r, RoutingPolicy::ecmp);
    const LinkId up = r.ecmp_path({0, 2, 0})[2];
    sim::Time done = sim::Time::max();
    m.start({0, 2, sim::GiB(1)}, [&] { done = sim.now(); });
    sim.call_at(at(sim::ms(int64_t{10})), [&] {
      f.set_link_state(up, LinkState::degraded, 0.5);
      m.on_link_state_changed(up);
    });
    if (restore) {
      sim.call_at(at(sim::ms(int64_t{20})), [&] {
        f.set_link_state(up, LinkState::up);
        m.on_link_state_changed(up);
      });
    }
    sim.run();
    const double expected = restore ? 0.020 + (kGiB - 7.5e8) / kNic + 3e-6
                                    : 0.010 + (kGiB - 5e8) / 25e9 + 3e-6;
    CHECK(done.seconds() == Approx(expected).epsilon(1e-9));
    CHECK(m.stats(sim::ms(int64_t{1})).reroutes == 0);
  }
}

TEST_CASE("flow model: two flows on one NIC share it until the shorter drains", "[flow]") {
  // Rank 0 sends 1 GiB to rank 2 and 0.5 GiB to rank 3, both through its
  // NIC (50e9 B/s): 25e9 each until the short one drains at 0.5 GiB / 25e9 =
  // 21.47483648 ms; the long one then has 0.5 GiB left at 50e9 = 10.73741824
  // ms more: drains at 32.21225472 ms. Each arrives 3 us after draining.
  Fabric f = test::small_fabric({});
  const Batch b = run_batch(f, 1, RoutingPolicy::ecmp,
                            {{0, 2, sim::GiB(1)}, {0, 3, sim::MiB(512)}});
  CHECK(b.done[1].seconds() == Approx(kGiB / 2 / 25e9 + 3e-6).epsilon(1e-12));
  CHECK(b.done[0].seconds() == Approx(kGiB / 2 / 25e9 + kGiB / 2 / kNic + 3e-6).epsilon(1e-12));
  // The NIC link was full from 0 to 32.21 ms of the 32.215 ms run.
  const LinkId nic = f.find_link("h0/gpu0->h0/nic0");
  bool found = false;
  for (const LinkLoad& ll : b.stats.busiest_links) {
    if (ll.link != nic) continue;
    found = true;
    CHECK(ll.bytes == sim::Bytes(static_cast<int64_t>(1.5 * kGiB)));
  }
  CHECK(found);
}

TEST_CASE("flow model: link utilization counters follow rate changes", "[flow]") {
  // One flow 0 -> 2: its links go to 1.0 of nominal bandwidth when it starts
  // (the 64 GB/s PCIe hops to 50/64) and back to 0 when it drains.
  Fabric f = test::small_fabric({});
  Routing r(f, 1);
  sim::Simulator sim(1);
  FlowModel m(sim, f, r, RoutingPolicy::ecmp);
  std::vector<LinkCounterSample> samples;
  m.set_counter_listener([&](const LinkCounterSample& s) { samples.push_back(s); });
  m.start({0, 2, sim::GiB(1)}, [] {});
  sim.run();
  const LinkId nic_up = f.find_link("h0/nic0->leaf0");
  const LinkId pcie = f.find_link("h0/gpu0->h0/nic0");
  std::vector<double> nic_samples, pcie_samples;
  for (const LinkCounterSample& s : samples) {
    if (s.link == nic_up) nic_samples.push_back(s.utilization);
    if (s.link == pcie) pcie_samples.push_back(s.utilization);
  }
  REQUIRE(nic_samples.size() == 2);
  CHECK(nic_samples[0] == Approx(1.0));
  CHECK(nic_samples[1] == 0.0);
  REQUIRE(pcie_samples.size() == 2);
  CHECK(pcie_samples[0] == Approx(50.0 / 64.0));
  CHECK(samples.size() == 12);  // 6 links, up and down
}

TEST_CASE("flow model: same seed, same completion times; another seed differs", "[flow]") {
  // 64 GPUs all sending to random others, 4 queue pairs each, random sizes:
  // ECMP collisions and their knock-on effects depend on the seed only.
  test::SmallFabricSpec spec;
  spec.hosts = 8;
  spec.gpus_per_host = 8;
  spec.leaves = 4;
  spec.spines = 4;
  Fabric f = test::small_fabric(spec);
  std::vector<Transfer> ts;
  sim::RandomStream rng(42, "test/flow-determinism");
  for (int src = 0; src < 64; ++src) {
    for (uint32_t qp = 0; qp < 4; ++qp) {
      int dst = static_cast<int>(rng.uniform_int(64));
      if (dst == src) dst = (dst + 1) % 64;
      ts.push_back({src, dst, sim::Bytes(static_cast<int64_t>(1 + rng.uniform_int(64 << 20))), qp});
    }
  }
  const Batch a = run_batch(f, 5, RoutingPolicy::ecmp, ts);
  const Batch b = run_batch(f, 5, RoutingPolicy::ecmp, ts);
  const Batch c = run_batch(f, 6, RoutingPolicy::ecmp, ts);
  CHECK(a.done == b.done);
  CHECK(a.done != c.done);
  for (sim::Time t : a.done) CHECK(t < sim::Time::max());
  CHECK(a.stats.transfers == static_cast<int64_t>(ts.size()));
}

TEST_CASE("flow model: a victim sharing only an upstream port with an incast is not slowed",
          "[flow]") {
  // 9 hosts × 2 GPUs on 3 leaves (host h on leaf h % 3), one spine, uplinks
  // 800 Gb/s (100e9 B/s). Incast: GPU 0 of hosts 1..8 sends 1 GiB each to
  // h0/gpu0; the leaf0 -> h0/nic0 link holds each to 50e9 / 8 = 6.25e9.
  // Victim: h1/gpu1 -> h2/gpu1, 1 GiB, shares only leaf1 -> spine0 with the
  // incast flows of hosts 1, 4 and 7 (3 × 6.25e9 = 18.75e9 of 100e9). In a
  // fluid model a flow is slowed only by the capacity it shares, so the
  // victim runs at its NIC's 50e9 and ends exactly when it would alone:
  // 3 us + 2^30 / 50e9. (With PFC, the packet model pauses leaf1's uplink
  // queue for the incast and the victim waits behind it: head-of-line
  // blocking, which fluid sharing cannot show.)
  test::SmallFabricSpec spec;
  spec.hosts = 9;
  spec.gpus_per_host = 2;
  spec.leaves = 3;
  spec.spines = 1;
  spec.uplink = sim::Bandwidth::gbps(800);
  Fabric f = test::small_fabric(spec);
  const Transfer victim{3, 5, sim::GiB(1)};  // h1/gpu1 -> h2/gpu1
  std::vector<Transfer> with_incast{victim};
  for (int h = 1; h <= 8; ++h) with_incast.push_back({2 * h, 0, sim::GiB(1)});
  const Batch alone = run_batch(f, 1, RoutingPolicy::ecmp, {victim});
  const Batch crowded = run_batch(f, 1, RoutingPolicy::ecmp, with_incast);
  const sim::Time expected =
      at(sim::us(int64_t{3}) + sim::transfer_time(sim::GiB(1), sim::Bandwidth::gbps(400)));
  CHECK(alone.done[0] == expected);
  CHECK(crowded.done[0] == expected);
  // The incast itself still takes 8 GiB / 50e9 (+ 2 or 3 us).
  CHECK(latest(crowded.done).seconds() == Approx(8 * kGiB / kNic + 3e-6).epsilon(1e-9));
}
