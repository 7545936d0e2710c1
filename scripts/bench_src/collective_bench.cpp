// Cost of simulating one NCCL all-reduce on a whole cluster: HGX H100
// nodes (8 GPUs on NVSwitch, one 400G NIC each) on a 2-tier non-blocking
// fat-tree, the flow model (max-min sharing, ECMP), the collective engine
// with NCCL's defaults. From 64 to 16,384 GPUs, 64 MiB: the target is
// <= 1 s of wall time at 4,096 GPUs (512 nodes x 8) on one core. Reports
// the wall time of one run (fabric and routing built outside the timing),
// the engine's transfers, simulated events, the simulated time and busbw.
#include <benchmark/benchmark.h>

#include <cmath>

#include "models/collectives/collective_engine.h"
#include "models/network/flow_model.h"
#include "models/network/routing.h"
#include "sim/engine/simulator.h"
#include "topologies/build_fabric.h"

namespace {

using namespace gcsim;
using models::collectives::Algorithm;
using models::collectives::CollectiveOp;

// A 2-tier fat-tree of `gpus` HGX H100 GPUs; the switch radix is the
// smallest power of two (>= 64) whose 2-tier Clos holds every NIC
// (k^2 / 2 ports).
topologies::TopologySpec fat_tree(int gpus) {
  topologies::TopologySpec s;
  s.nodes = gpus / 8;
  s.gpus_per_node = 8;
  s.scale_out.topology = topologies::ScaleOutTopology::fat_tree;
  s.scale_out.tiers = 2;
  int radix = 64;
  while (radix * radix / 2 < gpus) radix *= 2;
  s.scale_out.radix = radix;
  return s;
}

models::gpu::GpuSpec h100() {
  models::gpu::GpuSpec g;
  g.name = "h100-sxm";
  g.has_nvls = true;
  return g;
}

// Arg 0: GPUs; arg 1: 1 = the tuner chooses, 0 = ring forced.
void BM_CollectiveAllReduce(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0));
  const bool tuner = state.range(1) != 0;
  models::network::Fabric fabric = topologies::build_fabric(fat_tree(gpus));
  models::network::Routing routing(fabric, 1);
  const sim::Bytes bytes = sim::MiB(64);
  double simulated_s = 0.0;
  int64_t transfers = 0;
  uint64_t events = 0;
  std::string chose;
  for (auto _ : state) {
    sim::Simulator sim(1);
    models::network::FlowModel net(sim, fabric, routing, models::network::RoutingPolicy::ecmp);
    models::collectives::CollectiveEngine engine(
        sim, net, fabric, models::collectives::nccl_default_params(h100()), 1);
    models::collectives::CollectiveRequest req;
    req.op = CollectiveOp::all_reduce;
    for (int r = 0; r < gpus; ++r) req.ranks.push_back(r);
    req.bytes = bytes;
    if (!tuner) req.algorithm = Algorithm::ring;
    sim::Time end;
    engine.run(req, [&](const models::collectives::Plan& p) {
      end = sim.now();
      chose = std::string(models::collectives::algorithm_name(p.algorithm)) + "/" +
              std::string(models::collectives::protocol_name(p.protocol));
    });
    sim.run();
    simulated_s = end.seconds();
    transfers = engine.transfers_started();
    events = sim.events_executed();
  }
  state.counters["transfers"] = static_cast<double>(transfers);
  state.counters["events"] = static_cast<double>(events);
  state.counters["sim_us"] = simulated_s * 1e6;
  state.counters["busbw_GBps"] =
      bytes.as_double() / simulated_s * 2.0 * (gpus - 1) / gpus * 1e-9;
  state.SetLabel(chose);
}

BENCHMARK(BM_CollectiveAllReduce)
    ->ArgsProduct({{64, 256, 1024, 4096, 16384}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace
