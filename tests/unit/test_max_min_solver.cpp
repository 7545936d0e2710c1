// Max-min fair sharing against hand-solved systems, in the manner of
// SimGrid's maxmin tests: each case states the links (capacity), the flows
// (links crossed, weight) and the rates progressive filling must give; then
// the incremental solver against a full recomputation on random systems.
#include <cmath>
#include <string>
#include <vector>

#include "catch.h"
#include "models/network/max_min_solver.h"
#include "sim/engine/random.h"

using namespace gcsim;
using namespace gcsim::models::network;

namespace {
using Flow = std::vector<WeightedLink>;

MaxMinSolver system_of(const std::vector<double>& caps, const std::vector<Flow>& flows) {
  MaxMinSolver s(caps.size());
  for (size_t l = 0; l < caps.size(); ++l) s.set_capacity(static_cast<LinkId>(l), caps[l]);
  for (size_t f = 0; f < flows.size(); ++f) s.add_flow(static_cast<int32_t>(f), flows[f]);
  return s;
}

// The bottleneck lemma, checked independently of how the rates were found:
// loads within capacity, and every flow has a saturated link on which no
// flow is faster.
bool is_max_min_fair(const MaxMinSolver& s, int32_t max_id, std::string* why) {
  std::vector<double> load(s.num_links(), 0.0), fastest(s.num_links(), 0.0);
  for (int32_t f = 0; f < max_id; ++f) {
    if (!s.contains(f)) continue;
    for (const WeightedLink& wl : s.links_of(f)) {
      load[static_cast<size_t>(wl.link)] += wl.weight * s.rate(f);
      fastest[static_cast<size_t>(wl.link)] =
          std::max(fastest[static_cast<size_t>(wl.link)], s.rate(f));
    }
  }
  for (size_t l = 0; l < load.size(); ++l) {
    if (load[l] > s.capacity(static_cast<LinkId>(l)) * (1 + 1e-9) + 1e-9) {
      *why = "link " + std::to_string(l) + " over capacity";
      return false;
    }
  }
  for (int32_t f = 0; f < max_id; ++f) {
    if (!s.contains(f)) continue;
    bool has_bottleneck = false;
    for (const WeightedLink& wl : s.links_of(f)) {
      const auto l = static_cast<size_t>(wl.link);
      const bool full = load[l] >= s.capacity(wl.link) * (1 - 1e-9);
      if (full && s.rate(f) >= fastest[l] * (1 - 1e-9)) has_bottleneck = true;
    }
    if (!has_bottleneck) {
      *why = "flow " + std::to_string(f) + " has no bottleneck";
      return false;
    }
  }
  return true;
}
}  // namespace

TEST_CASE("max-min: three links, four flows, two filling steps", "[flow][maxmin]") {
  // Links: L0 = 10, L1 = 10, L2 = 4 (bytes/s).
  // Flows: f0 over L0 L1, f1 over L1 L2, f2 over L2, f3 over L0.
  // Filling: L2 would fill at 4/2 = 2, L0 at 10/2 = 5, L1 at 10/2 = 5.
  // L2 first: f1 = f2 = 2. Then L0 at 5: f0 = f3 = 5. L1 carries 5 + 2 = 7
  // of 10 and limits nobody.
  MaxMinSolver s = system_of({10, 10, 4}, {{{0, 1}, {1, 1}}, {{1, 1}, {2, 1}}, {{2, 1}}, {{0, 1}}});
  s.solve();
  CHECK(s.rate(0) == Approx(5));
  CHECK(s.rate(1) == Approx(2));
  CHECK(s.rate(2) == Approx(2));
  CHECK(s.rate(3) == Approx(5));
  CHECK(s.bottleneck(1) == 2);
  CHECK(s.bottleneck(0) == 0);
  CHECK(s.load(1) == Approx(7));
}

TEST_CASE("max-min: a flow crossing two bottlenecks takes the tighter", "[flow][maxmin]") {
  // L0 = 10 carries f0, f1, f2; L1 = 6 carries f0 and f3.
  // L1 would fill at 6/2 = 3, L0 at 10/3 = 3.33: L1 first, f0 = f3 = 3;
  // then L0's remaining 10 - 3 = 7 goes to f1 and f2: 3.5 each.
  MaxMinSolver s = system_of({10, 6}, {{{0, 1}, {1, 1}}, {{0, 1}}, {{0, 1}}, {{1, 1}}});
  s.solve();
  CHECK(s.rate(0) == Approx(3));
  CHECK(s.rate(1) == Approx(3.5));
  CHECK(s.rate(2) == Approx(3.5));
  CHECK(s.rate(3) == Approx(3));
  CHECK(s.bottleneck(0) == 1);

  // f3 ends: L1 would fill at 6 for f0 alone, L0 at 10/3 for three flows,
  // so L0 binds everyone: 10/3 each, L1 carries 3.33 of 6.
  s.remove_flow(3);
  s.solve();
  for (int f = 0; f < 3; ++f) CHECK(s.rate(f) == Approx(10.0 / 3));
  CHECK(s.bottleneck(0) == 0);

  // L0 grows to 20: L1 fills first at 6 (f0 = 6), then L0's remaining 14
  // splits into 7 and 7.
  s.set_capacity(0, 20);
  s.solve();
  CHECK(s.rate(0) == Approx(6));
  CHECK(s.rate(1) == Approx(7));
  CHECK(s.rate(2) == Approx(7));
}

TEST_CASE("max-min: sprayed flows weigh by their share of each link", "[flow][maxmin]") {
  // f0 sprays half its bytes over L0 and half over L1, then all over L2
  // (weights 0.5, 0.5, 1); f1 uses L0 alone. Capacities L0 = 4, L1 = 4,
  // L2 = 10. L0 fills when 0.5 t + t = 4: t = 8/3; L1 at 0.5 t = 4: t = 8;
  // L2 at 10. So f0 = f1 = 8/3 (an unsprayed f0 would get 2), and the loads
  // are L0 = 4, L1 = 4/3, L2 = 8/3.
  MaxMinSolver s = system_of({4, 4, 10}, {{{0, 0.5}, {1, 0.5}, {2, 1}}, {{0, 1}}});
  s.solve();
  CHECK(s.rate(0) == Approx(8.0 / 3));
  CHECK(s.rate(1) == Approx(8.0 / 3));
  CHECK(s.load(0) == Approx(4));
  CHECK(s.load(1) == Approx(4.0 / 3));
  CHECK(s.load(2) == Approx(8.0 / 3));

  // Add f2 over L1 alone and shrink L1 to 3: L1 fills at 0.5 t + t = 3,
  // t = 2 (f0 = f2 = 2), before L0 (8/3). L0 then has 4 - 0.5 × 2 = 3 left
  // for f1: f1 = 3.
  s.add_flow(2, Flow{{1, 1}});
  s.set_capacity(1, 3);
  s.solve();
  CHECK(s.rate(0) == Approx(2));
  CHECK(s.rate(1) == Approx(3));
  CHECK(s.rate(2) == Approx(2));
}

TEST_CASE("max-min: one flow gets its narrowest link; a new flow halves a shared one",
          "[flow][maxmin]") {
  MaxMinSolver s = system_of({50e9, 25e9, 400e9}, {{{0, 1}, {1, 1}, {2, 1}}});
  const auto& changed = s.solve();
  REQUIRE(changed.size() == 1);
  CHECK(changed[0].old_rate == 0.0);
  CHECK(s.rate(0) == 25e9);  // exactly: nothing to share
  // A second flow over L1 alone: 12.5e9 each; the first one's rate changed.
  s.add_flow(1, Flow{{1, 1}});
  const auto& again = s.solve();
  CHECK(again.size() == 2);
  CHECK(s.rate(0) == 12.5e9);
  CHECK(s.rate(1) == 12.5e9);
  // Nothing changed since: nothing to do.
  CHECK(s.solve().empty());
}

namespace {
struct ChurnWork {
  int64_t incremental = 0;  // flow rates computed by solve()
  int64_t full = 0;         // by solve_full() on the same system
  int64_t expansions = 0;   // rounds beyond the first
};

// Builds a system of `n_links` links and churns it for 300 batches of 1-4
// random changes (flows added over 1-4 links with weights 1, 1/2, 1/3 or
// 1/4; flows removed; a capacity changed). Capacities come from a small set
// so that ties, the hard case for incremental schemes, are common. After
// each batch the incremental rates must equal a second solver's
// from-scratch solve, and satisfy the bottleneck lemma.
ChurnWork churn(uint64_t seed, size_t n_links) {
  const double caps[] = {4, 8, 8, 10, 12, 16};
  const double weights[] = {1, 1, 1, 0.5, 1.0 / 3, 0.25};
  sim::RandomStream rng(seed, "test/maxmin");
  MaxMinSolver inc(n_links), full(n_links);
  for (size_t l = 0; l < n_links; ++l) {
    const double c = caps[rng.uniform_int(6)];
    inc.set_capacity(static_cast<LinkId>(l), c);
    full.set_capacity(static_cast<LinkId>(l), c);
  }
  std::vector<int32_t> live;
  int32_t next_id = 0;
  for (int batch = 0; batch < 300; ++batch) {
    const int ops = 1 + static_cast<int>(rng.uniform_int(4));
    for (int op = 0; op < ops; ++op) {
      const uint64_t kind = rng.uniform_int(10);
      if (kind < 6 || live.empty()) {
        Flow path;
        const int hops = 1 + static_cast<int>(rng.uniform_int(4));
        for (int h = 0; h < hops; ++h) {
          path.push_back({static_cast<LinkId>(rng.uniform_int(n_links)),
                          weights[rng.uniform_int(6)]});
        }
        inc.add_flow(next_id, path);
        full.add_flow(next_id, path);
        live.push_back(next_id++);
      } else if (kind < 9) {
        const size_t i = rng.uniform_int(live.size());
        inc.remove_flow(live[i]);
        full.remove_flow(live[i]);
        live[i] = live.back();
        live.pop_back();
      } else {
        const auto l = static_cast<LinkId>(rng.uniform_int(n_links));
        const double c = caps[rng.uniform_int(6)];
        inc.set_capacity(l, c);
        full.set_capacity(l, c);
      }
    }
    inc.solve();
    full.solve_full();
    for (int32_t f : live) {
      INFO("seed " << seed << " batch " << batch << " flow " << f);
      REQUIRE(inc.rate(f) == Approx(full.rate(f)).epsilon(1e-9));
    }
    std::string why;
    const bool fair = is_max_min_fair(inc, next_id, &why);
    INFO("seed " << seed << " batch " << batch << ": " << why);
    REQUIRE(fair);
  }
  return {inc.counters().flows_recomputed, full.counters().flows_recomputed,
          inc.counters().rounds - inc.counters().solves};
}
}  // namespace

TEST_CASE("max-min: incremental solves equal full recomputation on random systems",
          "[flow][maxmin]") {
  // Dense: 24 links under ~200 flows, so nearly every flow is coupled to
  // every change; the checks must widen S often (and do).
  int64_t expansions = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) expansions += churn(seed, 24).expansions;
  CHECK(expansions > 0);
  // Sparse, like a fabric where a flow meets few others: 600 links. The
  // incremental solver must then do a fraction of the full work (measured:
  // 11,334 flow rates computed against 182,163 for full solves, 1/16).
  ChurnWork sparse;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    const ChurnWork w = churn(seed, 600);
    sparse.incremental += w.incremental;
    sparse.full += w.full;
    sparse.expansions += w.expansions;
  }
  CHECK(sparse.expansions > 0);
  CHECK(sparse.incremental * 4 < sparse.full);
}
