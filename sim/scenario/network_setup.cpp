#include "sim/scenario/network_setup.h"

#include <stdexcept>

#include "models/gpu/gpu_throttle.h"
#include "models/gpu/power_spread.h"
#include "models/network/analytical_model.h"
#include "models/network/flow_model.h"
#include "models/network/packet/packet_model.h"
#include "sim/scenario/straggler_loader.h"
#include "sim/scenario/training_workload_loader.h"
#include "topologies/build_fabric.h"
#include "topologies/fault_schedule.h"

namespace gcsim::cli {

namespace net = models::network;

models::cluster::ClusterModelConfig cluster_model_config(const Scenario& s) {
  models::cluster::ClusterModelConfig c;
  c.gpu = s.cluster.gpu;
  c.num_ranks = s.cluster.total_gpus();
  for (const auto& st : s.cluster.stragglers) {
    // A speed-1 entry is the nominal GPU: left out, the run is the same.
    if (!st.throttle.slows()) continue;
    // In a mirrored training step the straggler's stage runs on its
    // simulated rank, which takes the straggler's speed.
    int rank = st.rank;
    if (s.training) {
      const auto& stand_in = s.training->straggler_stand_in;
      if (auto it = stand_in.find(st.rank); it != stand_in.end()) rank = it->second;
    }
    c.rank_gpu[rank] = models::gpu::throttled(s.cluster.gpu, st.throttle);
  }
  if (s.cluster.power_spread > 0.0) {
    // Every chip its own power (models/gpu/power_spread.h), stragglers' too.
    const auto factors = models::gpu::power_spread_factors(c.num_ranks, s.cluster.power_spread, s.seed);
    for (int r = 0; r < c.num_ranks; ++r) {
      auto it = c.rank_gpu.find(r);
      models::gpu::GpuSpec gpu = it != c.rank_gpu.end() ? it->second : s.cluster.gpu;
      gpu.power = models::gpu::with_power_factor(gpu.power, factors[static_cast<size_t>(r)]);
      c.rank_gpu[r] = gpu;
    }
  }
  c.fabric.gpus_per_node = s.cluster.gpus_per_node;
  c.fabric.scale_up_bandwidth = s.cluster.scale_up.bandwidth;
  c.fabric.scale_up_latency = s.cluster.scale_up.latency;
  c.fabric.scale_out_bandwidth = s.cluster.scale_out.nic_bandwidth;
  c.fabric.scale_out_latency = s.cluster.scale_out.latency;
  c.fabric.has_scale_out = s.cluster.scale_out.topology != "none";
  c.collective_sms = s.network.collective_sms;
  c.holds_from_issue = s.network.holds_from_issue;
  c.serial_launch_queue = one_launch_queue(s);
  c.interference = s.network.interference;
  // Training and serving run NCCL's algorithms on every network model; under
  // `analytical` (no link contention) the transfers in flight on one GPU
  // still share its NVLink. Hand-written graphs keep the whiteboard α-β
  // forms, each collective alone (DESIGN.md: analytical, no contention).
  c.share_scale_up_ports = s.network.model == "analytical" && (s.training || s.inference);
  c.clock_model = s.cluster.clock_model;
  c.clock_model_start = s.cluster.clock_model_start;
  c.clock_rank_start = s.cluster.clock_rank_start;
  return c;
}

bool one_launch_queue(const Scenario& s) {
  const std::string& q = s.cluster.launch_queues;
  if (q != "auto") return q == "one";
  return s.training && s.training->config.framework == workloads::training::Framework::megatron;
}

std::unique_ptr<NetworkStack> build_network_stack(sim::Simulator& sim, const Scenario& s) {
  auto stack = std::make_unique<NetworkStack>();
  stack->fabric = topologies::build_fabric(s.topology);
  // ECMP hashing seeds derive from the run's seed, so --seed varies them.
  stack->routing = std::make_unique<net::Routing>(stack->fabric, sim.random_stream("ecmp").next_u64());
  const std::string& m = s.network.model;
  if (m == "analytical") {
    stack->model = std::make_unique<net::AnalyticalModel>(sim, stack->fabric, *stack->routing);
  } else if (m == "flow") {
    stack->model = std::make_unique<net::FlowModel>(sim, stack->fabric, *stack->routing,
                                                    s.network.routing);
  } else if (m == "packet") {
    stack->model = std::make_unique<net::PacketModel>(sim, stack->fabric, *stack->routing,
                                                      s.network.packet, s.network.routing);
  } else {
    throw std::logic_error("network model '" + m + "' is registered but not built");
  }
  topologies::schedule_faults(sim, stack->fabric, *stack->model, s.faults);
  return stack;
}

}  // namespace gcsim::cli
