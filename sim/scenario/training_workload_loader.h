// The `training` workload: a model (preset or inline), a batch, a parallel
// strategy, recompute, precision and optimizer, turned into one training
// step as IR (workloads/training/training_generator.h) plus what the report
// needs: memory per GPU, FLOPs per step and the mirrored-rank tables.
// Impossible strategies fail naming the key and the constraint.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "models/gpu/gpu_spec.h"
#include "sim/scenario/resource_budget.h"
#include "sim/config/config_reader.h"
#include "sim/engine/replayer.h"
#include "workloads/training/memory_model.h"
#include "workloads/training/training_generator.h"

namespace gcsim::cli {

struct TrainingRun {
  workloads::training::TrainingConfig config;
  // The generated step; its graph is moved into Scenario::graph.
  workloads::training::TrainingWorkload workload;
  std::vector<workloads::training::MemoryBreakdown> memory;  // per pipeline rank, worst EP load
  int worst_pipeline_rank = 0;
  double capacity_bytes = 0;
  bool fits = true;
  double model_flops = 0;     // per step, 6N-style (Narayanan), whole cluster
  double hardware_flops = 0;  // model FLOPs plus recompute
  double peak_flops_per_gpu = 0;  // dense bf16/fp16 tensor peak (the MFU denominator)
  std::string attention_kernel;
  // Slow rank -> the simulated rank that runs at its speed in a mirrored
  // run (workloads/training/straggler_mirror.h); empty otherwise.
  std::map<int, int> straggler_stand_in;
  // Every GPU runs at its own clock (cluster.power_spread): no rank stands
  // for another, every rank is simulated and the breakdown's means are over
  // all of them.
  bool every_rank_differs = false;
};

// Reads `workload` (kind training) for a cluster of `gpus` GPUs,
// `gpus_per_node` per node. `slow_ranks` (ascending) are stragglers and
// `stragglers` ("" when none) describes them: mirroring stays on when their
// stages' simulated ranks can stand in for them (straggler_stand_in), and
// is off otherwise. With `strategy_searched` (gcsim plan) only `config` is
// filled: the parallelism as written, unchecked, and nothing generated.
// A step whose IR would exceed `limits` is refused before it is generated.
// `seed` places the popular experts (moe placement: permuted);
// `balanced_routing` makes every expert equally popular (the counterfactual
// a skewed run is compared with). `every_rank_differs` (cluster.power_spread)
// turns mirroring off.
std::shared_ptr<TrainingRun> load_training_workload(sim::config::ConfigReader& workload, int gpus,
                                                    int gpus_per_node,
                                                    const models::gpu::GpuSpec& gpu,
                                                    std::vector<std::string>& notes,
                                                    const ResourceLimits& limits,
                                                    const std::string& stragglers = "",
                                                    const std::vector<int>& slow_ranks = {},
                                                    bool strategy_searched = false,
                                                    uint64_t seed = 1,
                                                    bool balanced_routing = false,
                                                    bool every_rank_differs = false);

// Wraps the cluster model so that mirrored ranks' collectives are timed
// over their whole groups and kernels wait for the framework's host to
// issue them. `graph` is the run's workload graph, `simulator` its engine.
std::unique_ptr<sim::OpExecutor> make_training_executor(const TrainingRun& run,
                                                        sim::OpExecutor& cluster,
                                                        const workloads::WorkloadGraph& graph,
                                                        sim::Simulator& simulator);

}  // namespace gcsim::cli
