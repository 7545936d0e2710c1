// Topology and fault configs through the real command line. Each bad config
// in tests/data/bad/topo_*.yaml says in its header what is wrong and on which
// line; it must end with exit status 2, one message naming file, line and
// key, and no summary.json. Valid configs of every topology must load.
#include <filesystem>
#include <string>
#include <vector>

#include "catch.h"
#include "scenario/run_gcsim.h"

namespace fs = std::filesystem;
using gcsim::test::GcsimResult;
using gcsim::test::run_gcsim;
using gcsim::test::run_summary;
using gcsim::test::source_path;
using gcsim::test::TempDir;

using gcsim::test::contains;

namespace {

// `gcsim run tests/data/bad/FILE`: exit 2, "FILE:LINE:", 'KEY' and each fragment.
void expect_bad_topology(const std::string& file, int line, const std::string& key,
                         const std::vector<std::string>& fragments) {
  TempDir tmp;
  const std::string config = source_path("tests/data/bad/" + file);
  const GcsimResult r = run_gcsim({"run", config, "-o", (tmp / "out").string(), "-q"});
  INFO("gcsim run " << file << "\nstderr: " << r.err);
  CHECK(r.exit_status == 2);
  CHECK(contains(r.err, config + ":" + std::to_string(line) + ":"));
  CHECK(contains(r.err, "'" + key + "'"));
  for (const auto& f : fragments) CHECK(contains(r.err, f));
  CHECK(!contains(r.err, "internal error"));
  CHECK_FALSE(fs::exists(tmp / "out" / "summary.json"));
}

}  // namespace

TEST_CASE("bad topology: sizes", "[cli][topology]") {
  SECTION("radix too small for the GPU count") {
    expect_bad_topology("topo_radix_too_small.yaml", 8, "cluster.scale_out.radix",
                        {"too small for the GPU count", "at most 8 leaves (32 NIC ports)",
                         "512 NIC ports", "tiers: 3"});
  }
  SECTION("oversubscription below 1") {
    expect_bad_topology("topo_oversubscription_below_one.yaml", 8,
                        "cluster.scale_out.oversubscription", {"must be >= 1"});
  }
  SECTION("a per-tier oversubscription below 1") {
    expect_bad_topology("topo_spine_oversubscription.yaml", 11,
                        "cluster.scale_out.oversubscription.spine", {"must be >= 1", "got 0.8"});
  }
  SECTION("tiers other than 2 or 3") {
    expect_bad_topology("topo_tiers.yaml", 8, "cluster.scale_out.tiers", {"[2, 3]", "got 4"});
  }
  SECTION("fewer than one plane") {
    expect_bad_topology("topo_planes.yaml", 8, "cluster.scale_out.planes", {"got 0"});
  }
  SECTION("a key of another topology") {
    expect_bad_topology("topo_key_for_other_topology.yaml", 8, "cluster.scale_out.planes",
                        {"only to topology multi-plane", "'fat-tree'"});
  }
}

TEST_CASE("bad topology: custom fabrics", "[cli][topology]") {
  SECTION("a cable to an unknown node names the cable's line and suggests") {
    expect_bad_topology("topo_custom_unknown_node.yaml", 16, "cluster.scale_out.links[2].to",
                        {"no switch or NIC named 'spine9'", "did you mean 'spine0'?"});
  }
  SECTION("a GPU left unreachable") {
    expect_bad_topology("topo_custom_unreachable.yaml", 13, "cluster.scale_out.links",
                        {"node1/nic1 has no cable to a switch", "node1/gpu1"});
  }
}

TEST_CASE("bad topology: faults", "[cli][topology]") {
  SECTION("an unknown link") {
    expect_bad_topology("topo_fault_unknown_link.yaml", 10, "network.faults[0].link",
                        {"no link 'leaf0->spine32'", "did you mean 'leaf0->spine2'?"});
  }
  SECTION("a degraded fraction outside (0, 1]") {
    expect_bad_topology("topo_fault_fraction.yaml", 13, "network.faults[0].bandwidth_fraction",
                        {"(0, 1]", "got 1.5"});
  }
  SECTION("a negative time") {
    expect_bad_topology("topo_fault_negative_time.yaml", 10, "network.faults[0].at",
                        {"negative"});
  }
}

namespace {
std::string config_with(const std::string& cluster, const std::string& network = "") {
  return "cluster:\n  gpu: h100-sxm\n" + cluster + (network.empty() ? "" : "network:\n" + network) +
         "workload:\n  kind: graph\n  ops:\n    - {name: a, rank: 0, op: delay, duration: 1us}\n";
}
}  // namespace

TEST_CASE("valid topologies load, and the resolved config shows their figures",
          "[scenario][topology]") {
  SECTION("fat-tree defaults: radix 64, 0.5 us per hop, NIC to NIC 2 us over 4 links") {
    const auto s = run_summary(config_with("  nodes: 4\n  scale_out: {topology: fat-tree}\n"));
    const auto& out = s["config"]["cluster"]["scale_out"];
    CHECK(out["radix"] == 64);
    CHECK(out["tiers"] == 2);
    CHECK(out["hop_latency"] == "500ns");
    CHECK(out["latency"] == "2us");
    CHECK(out["oversubscription"] == 1.0);
  }
  SECTION("an old config's NIC-to-NIC latency sets the hop latency (3 tiers: 6 links)") {
    const auto s = run_summary(
        config_with("  nodes: 4\n  scale_out: {topology: fat-tree, tiers: 3, latency: 3us}\n"));
    CHECK(s["config"]["cluster"]["scale_out"]["hop_latency"] == "500ns");
  }
  SECTION("rail-optimized, per-tier oversubscription, faults") {
    const auto s = run_summary(config_with(
        "  nodes: 4\n  scale_out:\n    topology: rail-optimized\n    tiers: 3\n"
        "    oversubscription: {leaf: 3, spine: 2}\n",
        "  faults:\n    - {link: leaf0<->spine1, at: 5ms}\n"
        "    - {link: leaf1->spine0, at: 1ms, state: degraded, bandwidth_fraction: 0.5}\n"));
    CHECK(s["config"]["cluster"]["scale_out"]["oversubscription"]["spine"] == 2.0);
    CHECK(s["config"]["network"]["faults"][1]["bandwidth_fraction"] == 0.5);
  }
  SECTION("multi-plane, both attachments") {
    run_summary(config_with("  nodes: 4\n  scale_out: {topology: multi-plane}\n",
                            "  faults: [{link: node0/nic0<->p1/leaf0, at: 1us}]\n"));
    const auto s = run_summary(config_with(
        "  nodes: 4\n  scale_out: {topology: multi-plane, planes: 8, "
        "plane_attachment: nic-per-plane}\n"));
    CHECK(s["config"]["cluster"]["scale_out"]["planes"] == 8);
  }
  SECTION("custom, with per-cable bandwidth and a fault on a listed cable") {
    const auto s = run_summary(config_with(
        "  nodes: 2\n  gpus_per_node: 1\n  scale_up: {kind: none}\n  scale_out:\n"
        "    topology: custom\n    switches: [{name: tor0}]\n"
        "    links:\n      - {from: node0/nic0, to: tor0}\n"
        "      - {from: node1/nic0, to: tor0, bandwidth: 200Gbps}\n",
        "  faults: [{link: tor0->node1/nic0, at: 2ms, state: down}]\n"));
    CHECK(s["config"]["cluster"]["scale_out"]["links"][1]["bandwidth"] == "25GB/s");
  }
}

TEST_CASE("gcsim list topologies describes each topology", "[cli][topology]") {
  const GcsimResult r = run_gcsim({"list", "topologies"});
  CHECK(r.exit_status == 0);
  for (const char* name : {"fat-tree", "rail-optimized", "multi-plane", "custom", "none"}) {
    CHECK(contains(r.out, std::string("  ") + name + " "));
  }
  // k = 64, d = 32: 64 x 32 NICs with 2 tiers, 64 x 32 x 32 with 3.
  CHECK(contains(r.out, "2048 NICs with 2 tiers and 65536 with 3"));
}
