// Where the three network models must agree and where they must differ
// (DESIGN.md, Fidelity): on uncongested traffic with spraying, the flow and
// packet models agree; under incast with PFC, only the packet model shows
// head-of-line blocking of a flow that merely shares an upstream port.
#include <map>
#include <vector>

#include "catch.h"
#include "fabric_fixtures.h"
#include "models/network/analytical_model.h"
#include "models/network/flow_model.h"
#include "models/network/packet/packet_model.h"

using namespace gcsim;
using namespace gcsim::models::network;

namespace {

struct Flow {
  int src, dst;
  sim::Bytes bytes;
};

// Runs `flows` (all starting at t = 0) through a fresh model of kind `kind`
// and returns each one's completion time in seconds.
std::vector<double> run(const std::string& kind, const test::SmallFabricSpec& spec,
                        RoutingPolicy policy, const std::vector<Flow>& flows,
                        const PacketConfig& packet = {}) {
  Fabric fabric = test::small_fabric(spec);
  Routing routing(fabric, 11);
  sim::Simulator sim(5);
  std::unique_ptr<NetworkModel> model;
  if (kind == "flow") model = std::make_unique<FlowModel>(sim, fabric, routing, policy);
  if (kind == "packet") model = std::make_unique<PacketModel>(sim, fabric, routing, packet, policy);
  if (kind == "analytical") model = std::make_unique<AnalyticalModel>(sim, fabric, routing);
  std::vector<double> done(flows.size(), -1.0);
  for (size_t i = 0; i < flows.size(); ++i) {
    Transfer t{flows[i].src, flows[i].dst, flows[i].bytes, static_cast<uint32_t>(i)};
    model->start(t, [&done, &sim, i] { done[i] = sim.now().seconds(); });
  }
  sim.run();
  return done;
}

double max_of(const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); }

}  // namespace

TEST_CASE("flow and packet models agree within 5% on uncongested sprayed permutation traffic",
          "[network][flow][packet]") {
  // 8 hosts × 2 GPUs, 4 leaves (2 hosts, 4 NICs each), 4 spines: every
  // leaf has 4 × 400G down and 4 × 400G up, non-blocking. Rank i sends
  // 8 MiB to rank i + 4 (mod 16): every flow crosses a spine. Spraying
  // spreads each flow over all 4 spines, so no link carries more than its
  // capacity: every flow runs at its NIC's 50 GB/s.
  test::SmallFabricSpec spec;
  spec.hosts = 8;
  spec.leaves = 4;
  spec.spines = 4;
  std::vector<Flow> flows;
  for (int r = 0; r < 16; ++r) flows.push_back({r, (r + 4) % 16, sim::MiB(8)});
  const double flow_t = max_of(run("flow", spec, RoutingPolicy::spray, flows));
  const double packet_t = max_of(run("packet", spec, RoutingPolicy::spray, flows));
  const double ideal = 8.0 * 1048576 / 50e9;  // 167.8 us, plus a few us of latency
  INFO("flow " << flow_t * 1e6 << " us, packet " << packet_t * 1e6 << " us");
  CHECK(flow_t == Approx(ideal).epsilon(0.05));
  CHECK(packet_t == Approx(flow_t).epsilon(0.05));
}

TEST_CASE("incast: only the packet model slows a victim sharing an upstream port (HOL blocking)",
          "[network][flow][packet]") {
  // Two leaves joined by ONE spine. Hosts alternate between the leaves
  // (host h on leaf h % 2; one GPU each, so rank = host): ranks 0, 2, 4, 6
  // on leaf0, ranks 1, 3, 5, 7 on leaf1. Ranks 0, 2 and 4 send to rank 1
  // (incast: three 400G senders into one 400G NIC); rank 6 sends to rank 3,
  // whose NIC is idle. The victim shares only the leaf0 -> spine -> leaf1
  // path with the incast, and that path has room: its 1.6 Tb/s (200 GB/s)
  // carries 50 GB/s of incast (capped by rank 1's NIC) beside the victim's
  // 50 GB/s. So in the flow model the victim runs at its full 50 GB/s. In
  // the packet model the incast's excess queues at leaf1's port to rank 1;
  // PFC pauses the spine -> leaf1 link, the spine's queue fills and pauses
  // leaf0 -> spine, leaf0's fill and pause every sender NIC on leaf0 — the
  // victim's included (pause propagation, head-of-line blocking).
  // ECN/DCQCN are off here, as on a PFC-only fabric: with them on, the
  // senders back off before the buffers reach Xoff and the victim is
  // spared (the point of DCQCN; Zhu et al. 2015, §2).
  test::SmallFabricSpec spec;
  spec.hosts = 8;
  spec.gpus_per_host = 1;
  spec.leaves = 2;
  spec.spines = 1;
  spec.uplink = sim::Bandwidth::gbps(1600);
  std::vector<Flow> flows{{0, 1, sim::MiB(32)}, {2, 1, sim::MiB(32)}, {4, 1, sim::MiB(32)},
                          {6, 3, sim::MiB(16)}};
  const double alone = 16.0 * 1048576 / 50e9;  // 335.5 us
  const std::vector<double> fluid = run("flow", spec, RoutingPolicy::ecmp, flows);
  PacketConfig pfc_only;
  pfc_only.ecn.enabled = false;
  pfc_only.dcqcn.enabled = false;
  const std::vector<double> packets = run("packet", spec, RoutingPolicy::ecmp, flows, pfc_only);
  INFO("victim: flow " << fluid[3] * 1e6 << " us, packet " << packets[3] * 1e6 << " us, alone "
                       << alone * 1e6 << " us");
  CHECK(fluid[3] == Approx(alone).epsilon(0.02));
  CHECK(packets[3] > 1.2 * alone);
  // Both models deliver the incast at the receiver's line rate: 96 MiB at 50 GB/s.
  CHECK(max_of({fluid[0], fluid[1], fluid[2]}) == Approx(96.0 * 1048576 / 50e9).epsilon(0.02));
  CHECK(max_of({packets[0], packets[1], packets[2]}) ==
        Approx(96.0 * 1048576 / 50e9).epsilon(0.10));
}
