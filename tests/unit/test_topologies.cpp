// Topology builders against counts, cuts and paths worked out by hand from
// the sizing rules in topologies/clos_sizing.h (radix k, leaf ports
// d = floor(k r/(r+1)), uplinks ceil(NICs on the fullest leaf / r), one
// cable from each leaf to each spine of its pod).
#include <chrono>
#include <set>
#include <string>

#include "catch.h"
#include "models/network/routing.h"
#include "topologies/build_fabric.h"
#include "topologies/fabric_graph.h"
#include "topologies/fault_schedule.h"
#include "topologies/topology_error.h"

using namespace gcsim;
using namespace gcsim::models::network;
using namespace gcsim::topologies;

namespace {

// HGX H100 servers on 400G NICs, radix-64 switches.
TopologySpec cluster(int nodes, ScaleOutTopology topology, int radix = 64, int tiers = 2,
                     double leaf_over = 1.0, double spine_over = 1.0) {
  TopologySpec s;
  s.nodes = nodes;
  s.gpus_per_node = 8;
  s.scale_up = {ScaleUpKind::nvswitch, sim::Bandwidth::gb_per_s(450), sim::ns(int64_t{600})};
  s.pcie_bandwidth = sim::Bandwidth::gb_per_s(64);
  s.scale_out.topology = topology;
  s.scale_out.radix = radix;
  s.scale_out.tiers = tiers;
  s.scale_out.leaf_oversubscription = leaf_over;
  s.scale_out.spine_oversubscription = spine_over;
  return s;
}

constexpr double kNic = 50e9;  // 400 Gb/s in bytes per second

// Neighbours of `node` that are switches of tier `tier`.
int switch_neighbours(const Fabric& f, const std::string& node, int tier) {
  int n = 0;
  for (LinkId l : f.out_links(f.find_node(node))) {
    const FabricNode& to = f.node(f.link(l).to);
    n += to.kind == NodeKind::network_switch && to.tier == tier;
  }
  return n;
}

int nic_neighbours(const Fabric& f, const std::string& node) {
  int n = 0;
  for (LinkId l : f.out_links(f.find_node(node))) n += f.node(f.link(l).to).kind == NodeKind::nic;
  return n;
}

// The switch a NIC is cabled to (single-plane fabrics).
std::string leaf_of(const Fabric& f, const std::string& nic) {
  for (LinkId l : f.out_links(f.find_node(nic))) {
    const FabricNode& to = f.node(f.link(l).to);
    if (to.kind == NodeKind::network_switch) return to.name;
  }
  return "";
}

// What `f` throws (any std::exception), or "" when it does not.
template <typename F>
std::string thrown(F f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

size_t hops_at(const Fabric& f, const Routing& r, const std::string& at, int dst) {
  return r.next_hops(f.find_node(at), dst).size();
}

}  // namespace

TEST_CASE("HGX node: GPUs on one NVSwitch, a NIC per GPU on PCIe", "[topology]") {
  SECTION("one node, no scale-out") {
    const Fabric f = build_fabric(cluster(1, ScaleOutTopology::none));
    const FabricCensus c = census(f);
    CHECK(c.gpus == 8);
    CHECK(c.nics == 0);
    CHECK(c.scale_up_switches == 1);
    CHECK(c.cables == 8);
    const Link& l = f.link(f.find_link("node0/gpu3->node0/nvswitch"));
    CHECK(l.bandwidth.gb_per_s() == Approx(450));
    CHECK(l.kind == LinkKind::nvlink);
    // GPU to GPU through the switch is the preset's 0.6 us, 0.3 us per link.
    Routing r(f, 1);
    const auto path = r.ecmp_path({0, 5, 0});
    REQUIRE(path.size() == 2);
    CHECK(r.latency(path) == sim::ns(int64_t{600}));
    CHECK(f.node(f.gpu_node(13 % 8)).name == "node0/gpu5");
  }
  SECTION("PCIe scale-up and NICs") {
    TopologySpec s = cluster(2, ScaleOutTopology::fat_tree);
    s.scale_up = {ScaleUpKind::pcie, sim::Bandwidth::gb_per_s(64), sim::us(int64_t{2})};
    const Fabric f = build_fabric(s);
    CHECK(f.find_node("node1/pcie") != kNoNode);
    CHECK(f.find_node("node1/nvswitch") == kNoNode);
    CHECK(f.link(f.find_link("node1/gpu2->node1/pcie")).kind == LinkKind::pcie);
    CHECK(f.link(f.find_link("node1/gpu2->node1/pcie")).latency == sim::us(int64_t{1}));
    const Link& to_nic = f.link(f.find_link("node1/gpu2->node1/nic2"));
    CHECK(to_nic.bandwidth.gb_per_s() == Approx(64));
    CHECK(to_nic.latency == sim::ns(int64_t{500}));
    CHECK(f.nic_of(10) == f.find_node("node1/nic2"));
    CHECK(f.node(f.nic_of(10)).host == 1);
  }
}

TEST_CASE("fat-tree, 2 tiers: counts for 128 nodes x 8 GPUs at radix 64", "[topology]") {
  SECTION("non-blocking: 32 leaves of 32 down + 32 up, 32 spines") {
    const Fabric f = build_fabric(cluster(128, ScaleOutTopology::fat_tree));
    const FabricCensus c = census(f);
    CHECK(c.gpus == 1024);
    CHECK(c.nics == 1024);
    CHECK(c.scale_up_switches == 128);
    CHECK(c.leaves == 32);
    CHECK(c.spines == 32);
    CHECK(c.cores == 0);
    // 1,024 NIC cables + 32 x 32 leaf-spine cables.
    CHECK(c.network_cables == 1024 + 32 * 32);
    // Per node: 8 NVLink + 8 PCIe cables.
    CHECK(c.cables == c.network_cables + 128 * 16);
    CHECK(nic_neighbours(f, "leaf7") == 32);
    CHECK(switch_neighbours(f, "leaf7", 2) == 32);
    CHECK(switch_neighbours(f, "spine31", 1) == 32);  // half its 64 ports in use
    // Whole nodes per leaf: 32 / 8 = 4.
    CHECK(leaf_of(f, "node3/nic7") == "leaf0");
    CHECK(leaf_of(f, "node4/nic0") == "leaf1");
    CHECK(leaf_of(f, "node127/nic7") == "leaf31");
    Routing r(f, 1);
    // Rank 0 to node1 (same leaf): GPU, NIC, leaf, NIC, GPU = 4 links.
    CHECK(r.ecmp_path({0, 8, 0}).size() == 4);
    CHECK(hops_at(f, r, "leaf0", 8) == 1);
    // To node4 (leaf1): 6 links; any of the 32 spines, then one way down.
    CHECK(r.ecmp_path({0, 32, 0}).size() == 6);
    CHECK(hops_at(f, r, "leaf0", 32) == 32);
    CHECK(hops_at(f, r, "spine17", 32) == 1);
    CHECK(hops_at(f, r, "node0/nic0", 32) == 1);
  }
  SECTION("1:3 oversubscribed: leaves of 48 down + 16 up, 22 leaves, 16 spines") {
    // d = floor(64 x 3/4) = 48 = 6 nodes; 128 / 6 -> 22 leaves, the last with
    // 2 nodes; uplinks ceil(48 / 3) = 16.
    const Fabric f = build_fabric(cluster(128, ScaleOutTopology::fat_tree, 64, 2, 3.0));
    const FabricCensus c = census(f);
    CHECK(c.leaves == 22);
    CHECK(c.spines == 16);
    CHECK(c.network_cables == 1024 + 22 * 16);
    CHECK(nic_neighbours(f, "leaf0") == 48);
    CHECK(switch_neighbours(f, "leaf0", 2) == 16);
    CHECK(nic_neighbours(f, "leaf21") == 16);
    CHECK(leaf_of(f, "node6/nic0") == "leaf1");
  }
  SECTION("a small cluster sizes uplinks to the NICs present") {
    // 2 nodes: one leaf with 16 NICs, 16 uplinks, 16 spines.
    const FabricCensus c = census(build_fabric(cluster(2, ScaleOutTopology::fat_tree)));
    CHECK(c.leaves == 1);
    CHECK(c.spines == 16);
  }
}

TEST_CASE("fat-tree, 3 tiers: 16,384 GPUs at radix 64 build fast", "[topology]") {
  // d = 32 NICs (4 nodes) per leaf: 512 leaves; pods of 32 leaves: 16 pods;
  // 32 spines per pod: 512; cores 32 groups x 32 = 1,024, 16 ports each.
  const auto t0 = std::chrono::steady_clock::now();
  const Fabric f = build_fabric(cluster(2048, ScaleOutTopology::fat_tree, 64, 3));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  WARN("16,384-GPU 3-tier fat-tree: built and checked in " << secs * 1e3 << " ms; "
       << f.num_nodes() << " nodes, " << f.num_links() << " links");
  const FabricCensus c = census(f);
  CHECK(c.gpus == 16384);
  CHECK(c.leaves == 512);
  CHECK(c.spines == 512);
  CHECK(c.cores == 1024);
  CHECK(c.network_cables == 16384 + 512 * 32 + 512 * 32);
  CHECK(switch_neighbours(f, "core0", 2) == 16);
  CHECK(switch_neighbours(f, "spine33", 1) == 32);  // pod 1
  CHECK(switch_neighbours(f, "spine33", 3) == 32);

  Routing r(f, 1);
  // Rank 0 (node0, leaf0, pod 0) to rank 32 (node4, leaf1, pod 0): up to a
  // spine and back, 6 links, 32 spines to choose from.
  CHECK(r.ecmp_path({0, 32, 0}).size() == 6);
  CHECK(hops_at(f, r, "leaf0", 32) == 32);
  // To rank 1024 (node128, leaf32, pod 1): through a core, 8 links; 32
  // spines at the leaf, 32 cores at the spine, one way down from the core.
  const auto path = r.ecmp_path({0, 1024, 0});
  CHECK(path.size() == 8);
  CHECK(hops_at(f, r, "leaf0", 1024) == 32);
  CHECK(hops_at(f, r, "spine0", 1024) == 32);
  CHECK(hops_at(f, r, "core5", 1024) == 1);
  // 0.5 us per network link x 6 + 0.5 us NIC link x 2 = 4 us.
  CHECK(r.latency(path) == sim::us(int64_t{4}));
}

TEST_CASE("fat-tree bisection: N/2 NICs when non-blocking, 1/r of it oversubscribed",
          "[topology]") {
  SECTION("2 tiers, non-blocking: 512 x 400 Gb/s = 204.8 Tb/s") {
    const Fabric f = build_fabric(cluster(128, ScaleOutTopology::fat_tree));
    CHECK(bisection_bandwidth(f).bytes_per_s() == Approx(512 * kNic));
  }
  SECTION("2 tiers at 2:1 (radix 48): 16 spines x 16 leaves a side = half") {
    // d = floor(48 x 2/3) = 32 (4 nodes), 32 leaves, 16 uplinks.
    const Fabric f = build_fabric(cluster(128, ScaleOutTopology::fat_tree, 48, 2, 2.0));
    CHECK(census(f).spines == 16);
    CHECK(bisection_bandwidth(f).bytes_per_s() == Approx(16 * 16 * kNic));
    CHECK(bisection_bandwidth(f).bytes_per_s() == Approx(512 * kNic / 2));
  }
  SECTION("2 tiers at 3:1: 96 nodes, 16 leaves of 48, 16 spines = a third") {
    const Fabric f = build_fabric(cluster(96, ScaleOutTopology::fat_tree, 64, 2, 3.0));
    CHECK(census(f).leaves == 16);
    CHECK(bisection_bandwidth(f).bytes_per_s() == Approx(16 * 8 * kNic));
    CHECK(bisection_bandwidth(f).bytes_per_s() == Approx(384 * kNic / 3));
  }
  SECTION("3 tiers, radix 16, non-blocking: 64 nodes, 256 x 400 Gb/s") {
    const Fabric f = build_fabric(cluster(64, ScaleOutTopology::fat_tree, 16, 3));
    const FabricCensus c = census(f);
    CHECK(c.leaves == 64);  // 1 node of 8 NICs per leaf
    CHECK(c.spines == 64);  // 8 pods of 8 leaves, 8 spines each
    CHECK(c.cores == 64);   // 8 groups of 8, one port per pod
    CHECK(bisection_bandwidth(f).bytes_per_s() == Approx(256 * kNic));
  }
  SECTION("3 tiers, radix 16, spines at 3:1: 48 nodes, a third") {
    // Pods of P = floor(16 x 3/4) = 12 leaves with ceil(12/3) = 4 core
    // uplinks per spine: 4 pods, 32 cores of 4 ports. Across the middle each
    // core passes 2 x 400 Gb/s: 32 x 2 x 50 GB/s = 3.2 TB/s = 192 NICs / 3.
    const Fabric f = build_fabric(cluster(48, ScaleOutTopology::fat_tree, 16, 3, 1.0, 3.0));
    const FabricCensus c = census(f);
    CHECK(c.spines == 32);
    CHECK(c.cores == 32);
    CHECK(bisection_bandwidth(f).bytes_per_s() == Approx(32 * 2 * kNic));
    CHECK(bisection_bandwidth(f).bytes_per_s() == Approx(192 * kNic / 3));
  }
}

TEST_CASE("radix too small for the GPU count", "[topology]") {
  // Radix 8: leaves of 4 NICs; 2 tiers hold 8 leaves = 32 NICs.
  CHECK_NOTHROW(check_topology(cluster(4, ScaleOutTopology::fat_tree, 8)));
  try {
    check_topology(cluster(5, ScaleOutTopology::fat_tree, 8));
    FAIL("5 nodes x 8 GPUs on radix 8 with 2 tiers must be refused");
  } catch (const TopologyError& e) {
    CHECK(e.key() == "radix");
    CHECK(std::string(e.what()).find("at most 8 leaves (32 NIC ports)") != std::string::npos);
  }
  // 3 tiers: pods of 4 leaves, at most 8 pods = 128 NICs.
  CHECK_NOTHROW(check_topology(cluster(16, ScaleOutTopology::fat_tree, 8, 3)));
  CHECK_THROWS_AS(check_topology(cluster(17, ScaleOutTopology::fat_tree, 8, 3)), TopologyError);
  CHECK_THROWS_AS(build_fabric(cluster(17, ScaleOutTopology::rail_optimized, 8, 3)),
                  TopologyError);
}

TEST_CASE("rail-optimized: GPU i of every node on rail leaf i", "[topology]") {
  const Fabric f = build_fabric(cluster(128, ScaleOutTopology::rail_optimized));
  const FabricCensus c = census(f);
  // 32 nodes per rail leaf: 4 rail groups x 8 rails = 32 leaves; 32 spines.
  CHECK(c.leaves == 32);
  CHECK(c.spines == 32);
  for (int h : {0, 5, 31}) {
    for (int i = 0; i < 8; ++i) {
      CHECK(leaf_of(f, nic_name(h, i)) == "leaf" + std::to_string(i));
    }
  }
  CHECK(leaf_of(f, "node37/nic5") == "leaf13");  // group 1, rail 5
  CHECK(f.node(f.find_node("leaf13")).rail == 5);
  CHECK(nic_neighbours(f, "leaf13") == 32);

  Routing r(f, 1);
  // Same rail (rank 0 -> node1/gpu0 = rank 8): one leaf, 4 links.
  CHECK(r.ecmp_path({0, 8, 0}).size() == 4);
  // Another rail (rank 0 -> node1/gpu1 = rank 9): via any of 32 spines, 6 links.
  CHECK(r.ecmp_path({0, 9, 0}).size() == 6);
  CHECK(hops_at(f, r, "leaf0", 9) == 32);
  // Same rail, another group (node 32): via a spine too.
  CHECK(r.ecmp_path({0, 32 * 8, 0}).size() == 6);
}

TEST_CASE("multi-plane: independent planes", "[topology]") {
  SECTION("port-per-plane (HPN dual-plane): every NIC in both planes at half bandwidth") {
    TopologySpec s = cluster(128, ScaleOutTopology::multi_plane);
    s.scale_out.planes = 2;
    const Fabric f = build_fabric(s);
    const FabricCensus c = census(f);
    CHECK(c.leaves == 2 * 32);
    CHECK(c.spines == 2 * 32);
    const LinkId l0 = f.find_link("node0/nic0->p0/leaf0");
    const LinkId l1 = f.find_link("node0/nic0->p1/leaf0");
    REQUIRE(l0 != kNoLink);
    REQUIRE(l1 != kNoLink);
    CHECK(f.link(l0).bandwidth.bytes_per_s() == Approx(kNic / 2));
    CHECK(f.link(f.find_link("p1/leaf3->p1/spine7")).bandwidth.bytes_per_s() == Approx(kNic / 2));
    // Disjoint: no cable joins switches of different planes, and each
    // switch's plane matches its name.
    for (size_t l = 0; l < f.num_links(); ++l) {
      const Link& link = f.link(static_cast<LinkId>(l));
      const FabricNode& a = f.node(link.from);
      const FabricNode& b = f.node(link.to);
      if (a.kind == NodeKind::network_switch && b.kind == NodeKind::network_switch) {
        CHECK(a.plane == b.plane);
      }
      if (a.kind == NodeKind::network_switch) {
        CHECK(a.name.rfind(plane_prefix(a.plane), 0) == 0);
      }
    }
    Routing r(f, 1);
    // The NIC has one equal-cost uplink per plane; then 32 spines in the plane.
    CHECK(r.ecmp_path({0, 32, 0}).size() == 6);
    CHECK(hops_at(f, r, "node0/nic0", 32) == 2);
    CHECK(hops_at(f, r, "p1/leaf0", 32) == 32);
    CHECK(r.ecmp_path({0, 8, 0}).size() == 4);  // node1 shares leaf0 in both planes
    // Each plane carries half of a NIC: the bisection is unchanged.
    CHECK(bisection_bandwidth(f).bytes_per_s() == Approx(512 * kNic));
  }
  SECTION("nic-per-plane (DeepSeek-V3): NIC i in plane i mod 8") {
    TopologySpec s = cluster(128, ScaleOutTopology::multi_plane);
    s.scale_out.planes = 8;
    s.scale_out.attachment = PlaneAttachment::nic_per_plane;
    const Fabric f = build_fabric(s);
    const FabricCensus c = census(f);
    // A plane holds 128 NICs: 4 leaves of 32, 32 spines.
    CHECK(c.leaves == 8 * 4);
    CHECK(c.spines == 8 * 32);
    CHECK(f.link(f.find_link("node40/nic5->p5/leaf1")).bandwidth.bytes_per_s() == Approx(kNic));
    CHECK(switch_neighbours(f, "node40/nic5", 1) == 1);
    Routing r(f, 1);
    // Same plane: rank 0 -> node1/gpu0 shares p0/leaf0: 4 links; node 32 is
    // on p0/leaf1: 6 links.
    CHECK(r.ecmp_path({0, 8, 0}).size() == 4);
    CHECK(r.ecmp_path({0, 32 * 8, 0}).size() == 6);
    // Different planes: no routed path; traffic must first cross NVLink to
    // the GPU of the destination's plane (PXN), which the collectives do.
    CHECK(r.ecmp_path({0, 9, 0}).empty());
    CHECK_FALSE(unreachable_gpu(f).has_value());  // physically connected through NVLink
  }
  SECTION("a plane without NICs is refused") {
    TopologySpec s = cluster(2, ScaleOutTopology::multi_plane);
    s.scale_out.planes = 16;
    s.scale_out.attachment = PlaneAttachment::nic_per_plane;
    CHECK_THROWS_AS(check_topology(s), TopologyError);
  }
}

namespace {
// Two nodes of two GPUs, a top-of-rack switch each, one spine above.
TopologySpec two_tor_custom() {
  TopologySpec s = cluster(2, ScaleOutTopology::custom);
  s.gpus_per_node = 2;
  s.scale_out.switches = {{"tor0", 1}, {"tor1", 1}, {"spine", 2}};
  s.scale_out.links = {{"node0/nic0", "tor0", {}, {}},
                       {"node0/nic1", "tor0", {}, {}},
                       {"node1/nic0", "tor1", {}, {}},
                       {"node1/nic1", "tor1", {}, {}},
                       {"tor0", "spine", sim::Bandwidth::gbps(800), {}},
                       {"tor1", "spine", sim::Bandwidth::gbps(800), sim::us(int64_t{1})}};
  return s;
}
}  // namespace

TEST_CASE("custom: listed switches and cables", "[topology]") {
  SECTION("builds and routes") {
    const Fabric f = build_fabric(two_tor_custom());
    CHECK(census(f).network_cables == 6);
    CHECK(f.link(f.find_link("spine->tor1")).bandwidth.gb_per_s() == Approx(100));
    CHECK(f.link(f.find_link("spine->tor1")).latency == sim::us(int64_t{1}));
    CHECK(f.link(f.find_link("node0/nic1->tor0")).bandwidth.bytes_per_s() == Approx(kNic));
    Routing r(f, 1);
    // 0.5 + 0.5 + 0.5 + 1 + 0.5 + 0.5 us over 6 links.
    const auto path = r.ecmp_path({0, 2, 0});
    CHECK(path.size() == 6);
    CHECK(r.latency(path) == sim::us(3.5));
    // A second spine gives the top-of-rack switch two equal-cost next hops.
    TopologySpec two = two_tor_custom();
    two.scale_out.switches.push_back({"spine1", 2});
    two.scale_out.links.push_back({"tor0", "spine1", {}, {}});
    two.scale_out.links.push_back({"tor1", "spine1", {}, {}});
    const Fabric g = build_fabric(two);
    Routing rg(g, 1);
    CHECK(hops_at(g, rg, "tor0", 2) == 2);
    CHECK(rg.ecmp_path({0, 2, 0}).size() == 6);
  }
  SECTION("a cable to an unknown node names the cable and suggests") {
    TopologySpec s = two_tor_custom();
    s.scale_out.links[4].to = "spien";
    try {
      build_fabric(s);
      FAIL("unknown node accepted");
    } catch (const TopologyError& e) {
      CHECK(e.key() == "links");
      CHECK(e.index() == 4);
      CHECK(e.field() == "to");
      CHECK(std::string(e.what()).find("did you mean 'spine'?") != std::string::npos);
    }
  }
  SECTION("a NIC left without a cable makes its GPU unreachable") {
    TopologySpec s = two_tor_custom();
    s.scale_out.links.erase(s.scale_out.links.begin() + 3);  // node1/nic1
    try {
      check_topology(s);
      FAIL("stranded NIC accepted");
    } catch (const TopologyError& e) {
      CHECK(e.key() == "links");
      CHECK(std::string(e.what()).find("node1/nic1 has no cable") != std::string::npos);
    }
  }
  SECTION("two islands of switches") {
    TopologySpec s = two_tor_custom();
    s.scale_out.links.resize(5);  // tor1 no longer reaches the spine
    CHECK(contains(thrown([&] { build_fabric(s); }), "node1/nic0 is not joined to node0/nic0"));
  }
  SECTION("a GPU is not cabled by hand; a cable is listed once") {
    TopologySpec s = two_tor_custom();
    s.scale_out.links[0].from = "node0/gpu0";
    CHECK(contains(thrown([&] { build_fabric(s); }), "inside a server"));
    s = two_tor_custom();
    s.scale_out.links.push_back({"spine", "tor0", {}, {}});
    CHECK(contains(thrown([&] { build_fabric(s); }), "listed twice"));
  }
}

namespace {
// Records what the fault schedule tells the model.
class RecordingModel : public NetworkModel {
 public:
  explicit RecordingModel(const sim::Simulator& sim, const Fabric& f) : sim_(sim), fabric_(f) {}
  void start(const Transfer&, TransferDone) override {}
  void on_link_state_changed(LinkId l) override {
    seen.push_back({sim_.now(), l, fabric_.link(l).state});
  }
  NetworkStats stats(sim::Duration) const override { return {}; }
  LinkFootprint closed_form_footprint(const std::vector<RankTraffic>&) const override { return {}; }
  void count_closed_form(const LinkFootprint&, double) override {}
  struct Change {
    sim::Time when;
    LinkId link;
    LinkState state;
  };
  std::vector<Change> seen;

 private:
  const sim::Simulator& sim_;
  const Fabric& fabric_;
};
}  // namespace

TEST_CASE("fault schedule changes links at their time and tells the model", "[topology]") {
  Fabric f = build_fabric(cluster(8, ScaleOutTopology::fat_tree));
  sim::Simulator sim;
  RecordingModel model(sim, f);
  const sim::Time t5 = sim::Time::zero() + sim::ms(int64_t{5});
  const sim::Time t9 = sim::Time::zero() + sim::ms(int64_t{9});
  schedule_faults(sim, f, model,
                  {{"leaf0<->spine1", t5, LinkState::down, 1.0},
                   {"leaf0->spine2", t5, LinkState::degraded, 0.25},
                   {"leaf0<->spine1", t9, LinkState::up, 1.0}});
  const LinkId down = f.find_link("leaf0->spine1");
  sim.run(t5);
  CHECK(f.link(down).state == LinkState::down);
  CHECK(f.link(Fabric::reverse(down)).state == LinkState::down);
  const Link& degraded = f.link(f.find_link("leaf0->spine2"));
  CHECK(degraded.state == LinkState::degraded);
  CHECK(degraded.effective_bandwidth().bytes_per_s() == Approx(kNic / 4));
  CHECK(f.link(f.find_link("spine2->leaf0")).state == LinkState::up);  // one direction only
  sim.run();
  CHECK(f.link(down).state == LinkState::up);
  REQUIRE(model.seen.size() == 5);
  CHECK(model.seen[0].when == t5);
  CHECK(model.seen[0].link == down);
  CHECK(model.seen[0].state == LinkState::down);
  CHECK(model.seen[1].link == Fabric::reverse(down));
  CHECK(model.seen[2].state == LinkState::degraded);
  CHECK(model.seen[4].when == t9);
  CHECK(model.seen[4].state == LinkState::up);

  CHECK(contains(thrown([&] { fault_links(f, "leaf0->spine99"); }), "no link 'leaf0->spine99'"));
  CHECK(contains(thrown([&] { fault_links(f, "leaf0<->spin1"); }), "did you mean 'leaf0<->spine1'?"));
  CHECK(fault_links(f, "node0/nic0<->leaf0").size() == 2);
}
