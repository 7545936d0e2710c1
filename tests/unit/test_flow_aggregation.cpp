// The flow model's aggregation of identical transfers (flow_model.h,
// set_aggregation) against the exact path (every transfer its own flow),
// and the solver's multiplicity it rests on. Fabrics: fabric_fixtures.h
// (NIC 50e9 B/s, 0.5 us per switch hop).
#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "catch.h"
#include "fabric_fixtures.h"
#include "models/network/flow_model.h"
#include "sim/engine/random.h"

using namespace gcsim;
using namespace gcsim::models::network;

namespace {
struct Run {
  std::vector<sim::Time> done;
  NetworkStats stats;
  int64_t aggregated = 0;
  size_t max_flows = 0;  // solver flows right after the starts
};

// Starts each transfer at its time, optionally downs `cut` (both ways) at
// `cut_at`, runs to the end.
Run run(Fabric& f, bool aggregate, const std::vector<std::pair<sim::Time, Transfer>>& ts,
        LinkId cut = kNoLink, sim::Time cut_at = sim::Time::max()) {
  sim::Simulator sim(7);
  Routing r(f, 7);
  FlowModel m(sim, f, r, RoutingPolicy::ecmp);
  m.set_aggregation(aggregate);
  Run out;
  out.done.assign(ts.size(), sim::Time::max());
  for (size_t i = 0; i < ts.size(); ++i) {
    sim.call_at(ts[i].first, [&, i] {
      m.start(ts[i].second, [&out, &sim, i] { out.done[i] = sim.now(); });
      out.max_flows = std::max(out.max_flows, m.sending());
    });
  }
  if (cut != kNoLink) {
    sim.call_at(cut_at, [&] {
      f.set_link_state(cut, LinkState::down);
      f.set_link_state(Fabric::reverse(cut), LinkState::down);
      m.on_link_state_changed(cut);
    });
  }
  sim.run();
  out.stats = m.stats(sim.now() - sim::Time::zero());
  out.aggregated = m.aggregated();
  return out;
}

sim::Time at_us(int64_t us) { return sim::Time::zero() + sim::us(us); }
}  // namespace

TEST_CASE("max-min solver: a flow of multiplicity k takes k shares of a link", "[flow][aggregate]") {
  // Link 0 (80 B/s) carries flow 0 (standing for 3 flows) and flow 1:
  // 4 equal shares of 20 B/s; flow 0's own rate is each member's, 20 B/s.
  MaxMinSolver s(1);
  s.set_capacity(0, 80.0);
  const WeightedLink l{0, 1.0};
  s.add_flow(0, {&l, 1});
  s.add_flow(1, {&l, 1});
  s.set_multiplicity(0, 3.0);
  s.solve();
  CHECK(s.rate(0) == 20.0);
  CHECK(s.rate(1) == 20.0);
  CHECK(s.load(0) == 80.0);
  // Once solved the flow carries load: its multiplicity is fixed.
  CHECK_THROWS_AS(s.set_multiplicity(0, 2.0), std::logic_error);
  CHECK_THROWS_AS(s.set_multiplicity(1, 0.5), std::logic_error);
}

TEST_CASE("flow model: identical transfers ride one flow and finish as if apart, to the ps",
          "[flow][aggregate]") {
  // 2 hosts x 2 GPUs. Four 64 MiB transfers 0 -> 2 on queue pair 0 (one
  // route), started together, plus one 0 -> 3 and one 1 -> 2 of other
  // sizes, and a second wave of the same four at 100 us while the first
  // still runs (a new instant: a new aggregate).
  Fabric f = test::small_fabric({});
  std::vector<std::pair<sim::Time, Transfer>> ts;
  for (int i = 0; i < 4; ++i) ts.push_back({at_us(0), {0, 2, sim::MiB(64), 0}});
  ts.push_back({at_us(0), {0, 3, sim::MiB(16), 1}});
  ts.push_back({at_us(0), {1, 2, sim::MiB(48), 2}});
  for (int i = 0; i < 4; ++i) ts.push_back({at_us(100), {0, 2, sim::MiB(64), 0}});
  const Run exact = run(f, false, ts);
  const Run agg = run(f, true, ts);
  CHECK(exact.aggregated == 0);
  CHECK(agg.aggregated == 6);  // 3 joined the first wave, 3 the second
  CHECK(agg.max_flows == exact.max_flows - 6);
  CHECK(agg.done == exact.done);
  for (sim::Time t : agg.done) CHECK(t < sim::Time::max());
  CHECK(agg.stats.transfers == exact.stats.transfers);
  CHECK(agg.stats.bytes_delivered == exact.stats.bytes_delivered);
  CHECK(agg.stats.max_link_utilization == Approx(exact.stats.max_link_utilization).epsilon(1e-12));
}

TEST_CASE("flow model: aggregation on random waves matches the exact path within 1 ps",
          "[flow][aggregate]") {
  // 64 GPUs on 4 leaves and 4 spines; 6 waves, each GPU sending 4 queue
  // pairs to one random peer with one of 3 sizes: queue pairs that hash
  // onto one path (and pairs under one leaf, with a single path) join.
  // Identical flows get identical rates, so the only difference allowed is
  // rounding: k x rate against a sum of k rates (1e-16 relative), which can
  // move a picosecond-rounded drain time by 1 ps.
  test::SmallFabricSpec spec;
  spec.hosts = 8;
  spec.gpus_per_host = 8;
  spec.leaves = 4;
  spec.spines = 4;
  Fabric f = test::small_fabric(spec);
  sim::RandomStream rng(11, "test/flow-aggregation");
  std::vector<std::pair<sim::Time, Transfer>> ts;
  for (int wave = 0; wave < 6; ++wave) {
    for (int src = 0; src < 64; ++src) {
      int dst = static_cast<int>(rng.uniform_int(64));
      if (dst == src) dst = (dst + 1) % 64;
      const sim::Bytes size = sim::MiB(int64_t{8} << rng.uniform_int(3));
      for (uint32_t qp = 0; qp < 4; ++qp) ts.push_back({at_us(wave * 300), {src, dst, size, qp}});
    }
  }
  const Run exact = run(f, false, ts);
  const Run agg = run(f, true, ts);
  CHECK(agg.aggregated > 0);
  int64_t worst_ps = 0;
  for (size_t i = 0; i < ts.size(); ++i) {
    REQUIRE(exact.done[i] < sim::Time::max());
    const int64_t d = (agg.done[i] - exact.done[i]).ps();
    worst_ps = std::max(worst_ps, d < 0 ? -d : d);
  }
  INFO("aggregated " << agg.aggregated << " of " << ts.size() << "; worst difference "
                     << worst_ps << " ps");
  CHECK(worst_ps <= 1);
  CHECK(agg.stats.transfers == exact.stats.transfers);
  CHECK(agg.stats.bytes_delivered == exact.stats.bytes_delivered);
}

TEST_CASE("flow model: a link down splits an aggregate, each member on its own path",
          "[flow][aggregate]") {
  // Four 256 MiB transfers 0 -> 2 on queue pairs that share a path, and
  // the path's leaf uplink goes down at 1 ms: each member reroutes by its
  // own key, as it would have alone.
  Fabric f = test::small_fabric({});
  Routing r(f, 7);
  const std::vector<LinkId> first = r.ecmp_path({0, 2, 0});
  std::vector<uint32_t> qps;
  for (uint32_t qp = 0; qps.size() < 4; ++qp) {
    if (r.ecmp_path({0, 2, qp}) == first) qps.push_back(qp);
  }
  std::vector<std::pair<sim::Time, Transfer>> ts;
  for (uint32_t qp : qps) ts.push_back({at_us(0), {0, 2, sim::MiB(256), qp}});
  Fabric f2 = test::small_fabric({});
  const Run exact = run(f, false, ts, first[2], at_us(1000));
  const Run agg = run(f2, true, ts, first[2], at_us(1000));
  CHECK(agg.aggregated == 3);
  CHECK(agg.stats.reroutes == exact.stats.reroutes);
  CHECK(exact.stats.reroutes == 4);
  CHECK(agg.done == exact.done);
  CHECK(agg.stats.bytes_delivered == exact.stats.bytes_delivered);
}
