// The flow model delivers the transfers that drain at one instant in one
// event per path latency (flow_model.cpp, wake()): the callbacks must run
// at the same times and in the same order as one event per transfer would
// run them. Fabric: fabric_fixtures.h.
#include <string>
#include <vector>

#include "catch.h"
#include "fabric_fixtures.h"
#include "models/network/flow_model.h"

using namespace gcsim;
using namespace gcsim::models::network;

TEST_CASE("flow model: transfers draining together complete in drain order, one path latency later",
          "[flow][delivery]") {
  // 2 hosts x 2 GPUs, leaves 0 and 1, 2 spines with 1,600 Gb/s uplinks.
  // GPU 0 -> 2 and 1 -> 3 on queue pairs 0..3: four flows per 50 GB/s NIC,
  // 12.5 GB/s each (the uplinks never bind), 64 MiB drain at
  // 2^26 / 12.5e9 s = 5,368,709.12 ns. GPU 0 -> 1 over NVLink (450 GB/s)
  // with 36 x 64 MiB drains at the same instant. Path latencies: NVLink
  // 2 x 300 ns; between hosts PCIe 500 + 4 network hops x 500 + PCIe 500 ns.
  test::SmallFabricSpec spec;
  spec.uplink = sim::Bandwidth::gbps(1600);
  Fabric f = test::small_fabric(spec);
  sim::Simulator sim(3);
  Routing r(f, 3);
  FlowModel m(sim, f, r, RoutingPolicy::ecmp);
  m.set_aggregation(false);

  std::vector<std::string> order;
  std::vector<sim::Time> at;
  auto record = [&](std::string what) {
    order.push_back(std::move(what));
    at.push_back(sim.now());
  };
  const sim::Time drain = sim::Time::zero() + sim::Duration::from_ps(5'368'709'120);
  const sim::Time inter = drain + sim::ns(int64_t{3000});
  const sim::Time intra = drain + sim::ns(int64_t{600});
  // Scheduled before any transfer: runs ahead of the deliveries at `inter`.
  sim.call_at(inter, [&] { record("early"); });
  for (uint32_t qp = 0; qp < 4; ++qp) {
    for (int src : {0, 1}) {
      const std::string name = std::to_string(src) + "q" + std::to_string(qp);
      m.start({src, src + 2, sim::MiB(64), qp}, [&, name] {
        record(name);
        // Scheduled by a delivery at its own instant: runs after all of them.
        if (name == "0q0") sim.call_in(sim::Duration::zero(), [&] { record("late"); });
      });
    }
  }
  m.start({0, 1, sim::MiB(64 * 36), 0}, [&] { record("nvlink"); });
  sim.run();

  const std::vector<std::string> want{"nvlink", "early", "0q0", "1q0", "0q1", "1q1", "0q2",
                                      "1q2",    "0q3",   "1q3", "late"};
  CHECK(order == want);
  REQUIRE(at.size() == want.size());
  CHECK(at[0] == intra);
  for (size_t i = 1; i < at.size(); ++i) CHECK(at[i] == inter);
}
