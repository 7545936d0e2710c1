// The top-level `failures:` and `checkpoint:` blocks, plus the long-horizon
// keys of `simulation:` (duration, seeds), made typed: per-class failure
// rates (or the llama3 preset), detection and recovery policy, checkpoint
// interval (or `search`), mode and storage, and the checkpoint size from the
// training workload's model state. The step time comes later, from the DES.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/storage/checkpoint_storage.h"
#include "sim/config/config_reader.h"
#include "sim/engine/time.h"
#include "workloads/failures/component_failures.h"
#include "workloads/failures/recovery_policy.h"

namespace gcsim::cli {

struct ClusterConfig;  // sim/scenario/scenario.h
struct TrainingRun;    // sim/scenario/training_workload_loader.h

struct FailureHorizon {
  sim::Duration duration = sim::Duration::from_seconds(14 * 86400.0);
  int seeds = 5;
};

// Stated ranges (README "Limits"): the int64 picosecond clock ends at 106.75
// days; a Weibull shape outside [0.1, 10] makes the lifetime scale degenerate.
inline constexpr double kMaxSimulatedDays = 106.0;
inline constexpr double kMinWeibullShape = 0.1;
inline constexpr double kMaxWeibullShape = 10.0;

struct FailuresSetup {
  bool enabled = false;
  std::string preset;  // "llama3" or ""
  workloads::failures::FailureRates rates;
  workloads::failures::ComponentCounts counts;
  workloads::failures::RecoveryConfig recovery;
  std::optional<sim::Duration> interval;  // empty: search
  models::storage::CheckpointMode mode = models::storage::CheckpointMode::async;
  models::storage::StorageConfig storage;
  models::storage::CheckpointShape shape;  // bytes per GPU from the model state
  FailureHorizon horizon;
  uint64_t seed = 1;
  // The `checkpoint` map, for errors found once the step time is known
  // (the failure study's cost, add_failures_results).
  std::optional<sim::config::ConfigReader> checkpoint_at;
};

// simulation.duration and simulation.seeds (read only when failures are configured).
FailureHorizon read_failure_horizon(sim::config::ConfigReader& simulation);

// Reads `failures` and `checkpoint` from the top-level reader. `training`
// is null for other workload kinds, which failures do not support.
std::shared_ptr<FailuresSetup> load_failures(sim::config::ConfigReader& top,
                                             const ClusterConfig& cluster,
                                             const TrainingRun* training,
                                             const FailureHorizon& horizon, uint64_t seed);

// "1/3692h" (failures per duration) or "0": failures per hour.
std::optional<double> parse_failure_rate(const std::string& text, std::string* error);

}  // namespace gcsim::cli
