// The fabric seen through `gcsim run`: a transfer's time in each network
// model, the summary's `network` section, routing policies, and link
// faults from the config. The models' own tests (tests/unit/test_*flow*,
// *packet*, test_routing) cover the mechanisms; these check the wiring.
#include <string>

#include "catch.h"
#include "scenario/run_gcsim.h"

using gcsim::test::run_summary;
using Json = nlohmann::ordered_json;

namespace {

// Two HGX H100 nodes on a small 2-tier fat-tree (radix 8, so the two
// nodes' 8-NIC groups sit on different leaves and cross a spine), one p2p.
std::string p2p_config(const std::string& model, int src, int dst, const std::string& bytes,
                       const std::string& extra_network = "") {
  return "cluster: {gpu: h100-sxm, nodes: 2, gpus_per_node: 8, scale_up: {kind: nvswitch},\n"
         "          scale_out: {topology: fat-tree, tiers: 2, radix: 16, nic_bandwidth: 400Gbps}}\n"
         "network: {model: " + model + extra_network + "}\n"
         "workload:\n  kind: graph\n  ops:\n"
         "    - {name: xfer, op: p2p, src: " + std::to_string(src) + ", dst: " +
         std::to_string(dst) + ", bytes: " + bytes + "}\n";
}

double op_seconds(const Json& summary, const std::string& name) {
  for (const auto& op : summary["ops"]) {
    if (op["name"] == name) {
      return op["end_s"].get<double>() - op["start_s"].get<double>();
    }
  }
  FAIL("no op named " << name);
  return 0;
}

}  // namespace

TEST_CASE("one 1 GiB transfer takes size over bandwidth plus latency in every network model",
          "[scenario][network]") {
  const double gib = 1073741824.0;
  for (const std::string model : {"analytical", "flow", "packet"}) {
    INFO(model);
    // Across nodes: the 400 Gb/s NIC (50 GB/s) is the bottleneck; the path
    // latency (a few us) is below 0.1% of the 21.5 ms.
    const Json across = run_summary(p2p_config(model, 0, 8, "1GiB"));
    CHECK(op_seconds(across, "xfer") == Approx(gib / 50e9).epsilon(0.01));
    CHECK(across["network"]["model"] == model);
    CHECK(across["network"]["bytes_delivered"] == 1073741824);
    CHECK(across["network"]["drops"] == 0);
    CHECK(across["network"]["max_link_utilization"].get<double>() > 0.99);
    // Inside a node: NVLink through the NVSwitch, 450 GB/s each way.
    const Json inside = run_summary(p2p_config(model, 0, 1, "1GiB"));
    CHECK(op_seconds(inside, "xfer") == Approx(gib / 450e9).epsilon(0.01));
  }
}

TEST_CASE("a cable set down mid-transfer is routed around; a degraded one slows the flow",
          "[scenario][network]") {
  // 8 spines at radix 16 (8 down, 8 up per leaf). The transfer's spine is
  // not known in advance, so every uplink of the source leaf but one goes
  // down at 1 ms: whichever path it took, it ends on the survivor.
  std::string faults = ", faults: [";
  for (int s = 0; s < 7; ++s) {
    faults += std::string(s ? ", " : "") + "{link: \"leaf0<->spine" + std::to_string(s) +
              "\", at: 1ms, state: down}";
  }
  faults += "]";
  const Json down = run_summary(p2p_config("flow", 0, 8, "256MiB", faults));
  CHECK(op_seconds(down, "xfer") == Approx(268435456.0 / 50e9).epsilon(0.01));
  // The flow either sat on a spine that failed (rerouted) or on spine7.
  CHECK(down["network"]["unroutable"] == 0);

  // The source NIC's cable at half bandwidth from t = 0: twice as long.
  const Json slow = run_summary(p2p_config(
      "flow", 0, 8, "256MiB",
      ", faults: [{link: \"node0/nic0<->leaf0\", at: 0s, state: degraded, bandwidth_fraction: 0.5}]"));
  CHECK(op_seconds(slow, "xfer") == Approx(2 * 268435456.0 / 50e9).epsilon(0.01));
}

TEST_CASE("every GPU of a node sending to one receiver: the flow model shares the NIC",
          "[scenario][network]") {
  // Incast: ranks 8..15 each send 64 MiB to rank 0's NIC at once; the
  // receiver's 50 GB/s link is the bottleneck, so all finish together at
  // 8 × 64 MiB / 50 GB/s.
  std::string yaml =
      "cluster: {gpu: h100-sxm, nodes: 2, gpus_per_node: 8,\n"
      "          scale_out: {topology: fat-tree, radix: 16}}\n"
      "network: {model: flow}\nworkload:\n  kind: graph\n  ops:\n";
  for (int r = 8; r < 16; ++r) {
    yaml += "    - {name: s" + std::to_string(r) + ", op: p2p, src: " + std::to_string(r) +
            ", dst: 0, bytes: 64MiB, stream: in" + std::to_string(r) + "}\n";
  }
  const Json s = run_summary(yaml);
  CHECK(s["simulated_time_s"].get<double>() == Approx(8 * 67108864.0 / 50e9).epsilon(0.01));
  CHECK(s["network"]["busiest_links"][0]["link"] == "leaf0->node0/nic0");
}

TEST_CASE("--trace carries utilization and queue counters of the busiest links",
          "[scenario][network]") {
  gcsim::test::TempDir dir;
  gcsim::test::write_text(dir / "c.yaml", p2p_config("packet", 0, 8, "8MiB"));
  const auto r = gcsim::test::run_gcsim(
      {"run", (dir / "c.yaml").string(), "-o", (dir / "out").string(), "--trace", "-q"});
  REQUIRE(r.exit_status == 0);
  const std::string trace = gcsim::test::read_text(dir / "out" / "trace.json");
  CHECK(trace.find("network (busiest links)") != std::string::npos);
  CHECK(trace.find("leaf0->spine") != std::string::npos);
  CHECK(trace.find(" queue (KiB)") != std::string::npos);
}
