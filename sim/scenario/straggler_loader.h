// Reads `cluster.stragglers`: GPUs that run slower than their peers
// without failing (power or thermal throttling, a degraded HBM stack), so
// that the step time comes from the simulation with the slow GPU in place
// and the slowdown follows the parallel strategy.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/gpu/gpu_throttle.h"
#include "sim/scenario/scenario.h"
#include "sim/config/config_reader.h"

namespace gcsim::cli {

// Each entry {rank: R, speed: S, memory_speed: M} or {node: N, gpu: G, ...}
// (rank = N x gpus_per_node + G); speed and memory_speed in (0, 1]. Fails
// naming the key for a rank outside the cluster, a factor outside (0, 1]
// or a rank listed twice. Sorted by rank.
std::vector<StragglerConfig> read_stragglers(sim::config::ConfigReader& cluster, int nodes,
                                             int gpus_per_node);

// "rank 5 at 50% SM clock" for notes and reports; ranks joined by ", ".
std::string describe_stragglers(const std::vector<StragglerConfig>& stragglers);

// [{rank, speed, memory_speed}, ...] for summary.json.
nlohmann::json stragglers_json(const std::vector<StragglerConfig>& stragglers);

// Whether any straggler is actually slower than nominal.
bool any_slow(const std::vector<StragglerConfig>& stragglers);

// The ranks of the stragglers that are slower than nominal, ascending.
std::vector<int> slow_ranks(const std::vector<StragglerConfig>& stragglers);

}  // namespace gcsim::cli
