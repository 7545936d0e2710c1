// How `gcsim plan` judges one candidate before anything is simulated: the
// strategy's constraints first (training::check_strategy, the same rules
// `gcsim run` refuses a config by), then memory (the fullest pipeline rank
// at the heaviest expert load against HBM, the check `gcsim run` reports
// `memory.fits` by), then the back-of-envelope step time of
// workloads/estimate: compute at the calibrated GEMM rate, the schedule's
// bubble, the optimizer's HBM passes and exposed communication from α-β
// link rates (no contention). Pure functions of the config.
#pragma once

#include <array>
#include <functional>
#include <string>
#include <vector>

#include "models/gpu/gpu_spec.h"
#include "workloads/estimate/comm_estimate.h"
#include "workloads/plan/strategy.h"
#include "workloads/training/pipeline_schedule.h"
#include "workloads/training/training_config.h"

namespace gcsim::workloads::plan {

// Parallel dimensions in the order summary.json's breakdown lists them.
inline constexpr std::array<const char*, 5> kDimensions{"tp", "cp", "ep", "pp", "dp"};

struct PlanCluster {
  const models::gpu::GpuSpec* gpu = nullptr;  // at the clocks training runs at
  estimate::LinkRates links;
  int gpus = 1;
};

struct StrategyScore {
  enum class Verdict { pruned, out_of_memory, scored };
  Verdict verdict = Verdict::scored;
  // Pruned: the config key of the broken constraint below `workload`
  // ("parallelism.tp", "batch.global", ...) and its message.
  std::string rule;
  std::string reason;
  double memory_bytes = 0;  // fullest GPU (0 when pruned)
  int fullest_pipeline_rank = 0;
  // Scored: the estimated step and its parts (seconds).
  double step_s = 0, compute_s = 0, bubble_s = 0, optimizer_s = 0;
  std::array<double, kDimensions.size()> exposed_s{};
  double tokens_per_s = 0, mfu = 0;
};

const char* verdict_name(StrategyScore::Verdict v);  // pruned | oom | scored

StrategyScore score_strategy(const training::TrainingConfig& c, const PlanCluster& cluster);

// The same with c's pipeline plan supplied by `plan_of` (called only for a
// strategy that passes its constraints): candidates that differ only in
// recompute, ZeRO or SP share one plan, and building it is the cost.
StrategyScore score_strategy(
    const training::TrainingConfig& c, const PlanCluster& cluster,
    const std::function<const training::PipelinePlan&(const training::TrainingConfig&)>& plan_of);

// score_strategy(apply(base, candidates[i])) for each i that `mine(i)`
// accepts, spread over `threads` threads; the others are left default.
std::vector<StrategyScore> score_strategies(const training::TrainingConfig& base,
                                            const std::vector<Strategy>& candidates,
                                            const PlanCluster& cluster, int threads,
                                            const std::function<bool(size_t)>& mine);

}  // namespace gcsim::workloads::plan
