// A Scenario is a config file made typed and validated: the cluster, the
// network model, the workload as IR, the seed, and the resolved config that
// every run prints into its output. Building one either succeeds completely
// or throws ConfigError naming file, line and key; nothing runs half-way.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/gpu/clock_governor.h"
#include "models/gpu/gpu_spec.h"
#include "models/gpu/gpu_throttle.h"
#include "models/gpu/interference.h"
#include "models/network/network_model.h"
#include "models/network/packet/packet_config.h"
#include "sim/scenario/resource_budget.h"
#include "sim/config/config_reader.h"
#include "topologies/fault_schedule.h"
#include "topologies/topology_spec.h"
#include "sim/engine/ir.h"
#include "workloads/moe/moe_layer.h"

namespace gcsim::cli {

struct ScaleUpConfig {
  std::string kind;          // nvswitch | pcie | none
  sim::Bandwidth bandwidth;  // per GPU, each direction
  sim::Duration latency;
};

struct ScaleOutConfig {
  std::string topology;           // fat-tree | rail-optimized | multi-plane | custom | none
  int tiers = 2;
  sim::Bandwidth nic_bandwidth;   // per GPU
  double oversubscription = 1.0;
  sim::Duration latency;          // NIC to NIC through the top tier (2 x tiers hop latencies)
};

// A GPU that runs slower than its peers without failing (cluster.stragglers).
struct StragglerConfig {
  int rank = 0;
  models::gpu::Throttle throttle;  // its SM clock (`speed`) and HBM bandwidth scale
};

struct ClusterConfig {
  models::gpu::GpuSpec gpu;
  int nodes = 1;
  int gpus_per_node = 8;
  ScaleUpConfig scale_up;
  ScaleOutConfig scale_out;
  std::string calibration;  // profile path, "" when none
  // SM clocks: "model" (the power cap's governor sets each kernel's clock
  // from the GPU's averaged activity: models/gpu/clock_governor.h),
  // "sustained" (the power-capped steady state as one fraction), "rested",
  // or "auto" (sustained for training; the model for the rest where the
  // GPU has power parameters, rested otherwise). `gpu` is already derated
  // when sustained (gpu.at_sustained_clocks), and under "model" when the
  // GPUs start from a running state (the governor stretches each kernel
  // from that clock).
  std::string clocks = "model";
  // Where each GPU's governor starts under the model (cluster.clock_start):
  // "rest", "steady" (the periodic steady state of the workload repeated
  // back to back: clock_settle, found by warm-up passes before the run,
  // sim/cli/clock_warmup.h) or a state file written by gcsim export
  // (clock_rank_start read from it). "auto": steady for training, rest for
  // the rest. Serving (inference) takes rest or steady only: steady there
  // starts each step from its own periodic state as the run goes
  // (workloads/inference/replica.h ReplicaClocks), never derates `gpu`
  // and leaves clock_settle off.
  std::string clock_start = "auto";
  int clock_start_line = 0;  // where it was written (0: not written, or -s)
  bool clock_settle = false;
  // Hardware launch queues from host to GPU: "one" (CUDA_DEVICE_MAX_CONNECTIONS
  // =1: kernels and NCCL kernels reach the GPU in issue order), "many"
  // (CUDA's default of 8: a collective issued with kernels on other streams
  // gets its SMs after theirs), "auto" (one for Megatron-LM training, which
  // sets it; many otherwise). Resolved by launch_queues_one().
  std::string launch_queues = "auto";
  bool clock_model = false;  // the governor runs (model, and the GPU has power parameters)
  models::gpu::GovernorState clock_model_start;  // every governor's averages at time zero
  std::vector<models::gpu::GovernorState> clock_rank_start;  // per rank where set (overrides)
  std::vector<StragglerConfig> stragglers;  // ascending rank, as written (speed 1 included)
  // Chip-to-chip spread of arithmetic power (sigma; models/gpu/power_spread.h):
  // each GPU settles at its own clock under the cap. 0: identical GPUs.
  double power_spread = 0.0;
  int power_spread_line = 0;  // where it was written (0: not written, or -s)
  // The host CPU's per-call costs for eager MoE layers (cluster.host).
  workloads::moe::EagerHostCost host = workloads::moe::eager_host_cost();
  int total_gpus() const { return nodes * gpus_per_node; }
};

struct NetworkConfig {
  std::string model;       // registered network model name
  int collective_sms = 0;  // SMs a collective holds per GPU
  bool holds_from_issue = true;   // NCCL kernels hold SMs from each rank's issue
  models::network::RoutingPolicy routing = models::network::RoutingPolicy::ecmp;
  models::network::PacketConfig packet;  // network.model: packet only
  models::gpu::InterferenceParams interference;  // overlapped collectives vs kernels
};

struct CollectiveWorkload;  // sim/scenario/collective_workload_loader.h

struct TrainingRun;  // sim/scenario/training_workload_loader.h

struct InferenceSetup;  // sim/scenario/inference_workload_loader.h

struct FailuresSetup;  // sim/scenario/failures_loader.h

struct Scenario {
  std::string config_path;
  // What the run is expected to take (resource_budget.h), from the built
  // workload; inference's grows as it runs, so it stays empty there.
  ResourceEstimate estimate;
  ClusterConfig cluster;
  NetworkConfig network;
  std::string workload_kind;
  std::unique_ptr<workloads::WorkloadGraph> graph;
  std::shared_ptr<TrainingRun> training;  // workload.kind: training
  std::shared_ptr<const InferenceSetup> inference;  // workload.kind: inference
  std::shared_ptr<FailuresSetup> failures;  // top-level failures/checkpoint, when present
  std::shared_ptr<const CollectiveWorkload> collective;  // workload.kind: collective
  uint64_t seed = 1;
  topologies::TopologySpec topology;          // cluster.scale_up/scale_out, for build_fabric()
  std::vector<topologies::FaultSpec> faults;  // network.faults, in list order
  sim::config::Json resolved;                         // fully resolved config
  std::shared_ptr<sim::config::ConfigSource> source;  // docs, overrides
  std::vector<std::string> notes;  // modelling caveats to show the user
  std::vector<workloads::moe::MoeLayerInfo> moe_layers;  // graph `moe` ops, in YAML order
};

struct LoadOptions {
  std::vector<std::string> overrides;  // "-s key=value"
  std::optional<uint64_t> seed;        // --seed wins over simulation.seed
  ResourceLimits limits = ResourceLimits::machine();  // --max-memory, --max-events
  // `gcsim plan` searches the training strategy: the config's parallelism is
  // read (it is one layout the plan compares with) but neither checked nor
  // generated; everything else is validated as for a run.
  bool strategy_searched = false;
  // A training step's counterfactual with every expert equally popular
  // (moe skew and balance 0, the rest as written): what perfectly balanced
  // routing would take (gcsim run's `ep.balanced`).
  bool balanced_routing = false;
};

Scenario load_scenario(const std::string& path, const LoadOptions& options);

// Name and one-line description of each registered workload kind and
// network model, for `gcsim list` and error messages.
struct Registered {
  std::string name;
  std::string description;
};
const std::vector<Registered>& workload_kinds();
const std::vector<Registered>& network_models();

}  // namespace gcsim::cli
