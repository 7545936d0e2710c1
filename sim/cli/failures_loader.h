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
#include "sim/time.h"
#include "workloads/failures/component_failures.h"
#include "workloads/failures/recovery_policy.h"

namespace gcsim::cli {

struct ClusterConfig;  // sim/cli/scenario.h
struct TrainingRun;    // sim/cli/training_workload_loader.h

struct FailureHorizon {
  sim::Duration duration = sim::Duration::from_seconds(14 * 86400.0);
  int seeds = 5;
};

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
};

// simulation.duration and simulation.seeds (read only when failures are configured).
FailureHorizon read_failure_horizon(sim::config::ConfigReader& simulation);

// Reads `failures` and `checkpoint` from the top-level reader. `training`
// is null for other workload kinds, which failures do not support.
std::shared_ptr<FailuresSetup> load_failures(sim::config::ConfigReader& top,
                                             const ClusterConfig& cluster,
                                             const TrainingRun* training,
                                             const FailureHorizon& horizon, uint64_t seed);

// "14d", "36h", "90min": durations with days, bounded by the simulator's
// time range; nullopt with a message otherwise.
std::optional<sim::Duration> parse_long_duration(const std::string& text, std::string* error);
// "1/3692h" (failures per duration) or "0": failures per hour.
std::optional<double> parse_failure_rate(const std::string& text, std::string* error);

}  // namespace gcsim::cli
