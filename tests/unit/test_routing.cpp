#include <map>
#include <set>

#include "catch.h"
#include "fabric_fixtures.h"
#include "models/network/analytical_model.h"
#include "models/network/routing.h"

using namespace gcsim;
using namespace gcsim::models::network;

namespace {
std::vector<std::string> names(const Fabric& f, const std::vector<LinkId>& path) {
  std::vector<std::string> v;
  for (LinkId l : path) v.push_back(f.link(l).name);
  return v;
}
}  // namespace

TEST_CASE("routing inside a host goes over the NVSwitch", "[network][routing]") {
  Fabric f = test::small_fabric({});
  Routing r(f, 1);
  CHECK(names(f, r.ecmp_path({0, 1, 0})) ==
        std::vector<std::string>{"h0/gpu0->h0/nvsw", "h0/nvsw->h0/gpu1"});
  CHECK(r.ecmp_path({1, 1, 0}).empty());
}

TEST_CASE("routing between hosts takes NIC, leaf, spine, leaf, NIC", "[network][routing]") {
  Fabric f = test::small_fabric({});
  Routing r(f, 1);
  const auto path = names(f, r.ecmp_path({0, 2, 0}));
  REQUIRE(path.size() == 6);
  CHECK(path[0] == "h0/gpu0->h0/nic0");
  CHECK(path[1] == "h0/nic0->leaf0");
  CHECK((path[2] == "leaf0->spine0" || path[2] == "leaf0->spine1"));
  CHECK(path[4] == "leaf1->h1/nic0");
  CHECK(path[5] == "h1/nic0->h1/gpu0");
  // Two spines are two equal-cost next hops at the leaf.
  CHECK(r.next_hops(f.find_node("leaf0"), 2).size() == 2);
  // Hosts on one leaf turn around at the leaf: 4 hops.
  test::SmallFabricSpec one_leaf;
  one_leaf.leaves = 1;
  Fabric g = test::small_fabric(one_leaf);
  Routing rg(g, 1);
  CHECK(rg.ecmp_path({0, 2, 0}).size() == 4);
}

TEST_CASE("ECMP spreads queue pairs over spines and depends on the seed", "[network][routing]") {
  test::SmallFabricSpec s;
  s.spines = 4;
  Fabric f = test::small_fabric(s);
  Routing a(f, 1), b(f, 2);
  std::map<std::string, int> per_spine;
  int differ = 0;
  for (uint32_t qp = 0; qp < 400; ++qp) {
    const auto pa = a.ecmp_path({0, 2, qp});
    ++per_spine[f.link(pa[2]).name];
    if (pa != b.ecmp_path({0, 2, qp})) ++differ;
    CHECK(pa == a.ecmp_path({0, 2, qp}));  // deterministic
  }
  CHECK(per_spine.size() == 4);
  for (auto& [spine, n] : per_spine) CHECK(n > 60);  // 100 expected each
  CHECK(differ > 200);  // 3/4 of 400 expected to differ
}

TEST_CASE("spraying splits evenly and a link set down is routed around", "[network][routing]") {
  test::SmallFabricSpec s;
  s.spines = 4;
  Fabric f = test::small_fabric(s);
  Routing r(f, 7);
  std::map<std::string, double> w;
  for (auto [l, x] : r.spray_weights(0, 2)) w[f.link(l).name] += x;
  CHECK(w["h0/gpu0->h0/nic0"] == Approx(1.0));
  for (int sp = 0; sp < 4; ++sp) {
    CHECK(w["leaf0->spine" + std::to_string(sp)] == Approx(0.25));
    CHECK(w["spine" + std::to_string(sp) + "->leaf1"] == Approx(0.25));
  }
  const LinkId down = f.find_link("leaf0->spine2");
  f.set_link_state(down, LinkState::down);
  f.set_link_state(Fabric::reverse(down), LinkState::down);
  for (uint32_t qp = 0; qp < 64; ++qp) {
    for (LinkId l : r.ecmp_path({0, 2, qp})) CHECK(l != down);
  }
  CHECK(r.next_hops(f.find_node("leaf0"), 2).size() == 3);
  // All spines down: the hosts are partitioned.
  for (int sp = 0; sp < 4; ++sp) {
    const LinkId l = f.find_link("spine" + std::to_string(sp) + "->leaf1");
    f.set_link_state(l, LinkState::down);
  }
  CHECK(r.ecmp_path({0, 2, 0}).empty());
  CHECK_FALSE(r.ecmp_path({2, 0, 0}).empty());  // the other direction still works
}

TEST_CASE("analytical model: one transfer is latency plus size over the bottleneck",
          "[network][analytical]") {
  Fabric f = test::small_fabric({});
  Routing r(f, 1);
  sim::Simulator sim;
  AnalyticalModel m(sim, f, r);
  // Inter-host: 0.5 us PCIe + 4 × 0.5 us switch hops + 0.5 us PCIe = 3 us;
  // 1 GiB over the 400 Gb/s NIC (50 GB/s) = 21.474836 ms.
  const Transfer t{0, 2, sim::GiB(1)};
  sim::Time done_at;
  m.start(t, [&] { done_at = sim.now(); });
  sim.run();
  CHECK(done_at.seconds() == Approx(3e-6 + 1073741824.0 / 50e9).epsilon(1e-9));
  // Inside the host: 2 × 0.3 us + 1 GiB / 450 GB/s.
  CHECK(m.transfer_time({0, 1, sim::GiB(1)})->seconds() ==
        Approx(0.6e-6 + 1073741824.0 / 450e9).epsilon(1e-9));
  const NetworkStats st = m.stats(done_at - sim::Time::zero());
  CHECK(st.bytes_delivered == sim::GiB(1));
  CHECK(st.max_link_utilization == Approx(1073741824.0 / 50e9 / done_at.seconds()));
}
