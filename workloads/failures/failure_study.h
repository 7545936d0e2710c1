// Several seeded long runs of one job: draws each seed's failure trace once,
// runs the job timeline on it at the configured checkpoint interval, or at
// every interval of a geometric grid when the interval is searched (common
// random numbers: every interval sees the same failures), and gathers means
// and 95% confidence intervals.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "workloads/failures/checkpoint_interval.h"
#include "workloads/failures/component_failures.h"
#include "workloads/failures/job_timeline.h"

namespace gcsim::workloads::failures {

struct FailureStudyConfig {
  FailureRates rates;
  ComponentCounts counts;
  RecoveryConfig recovery;
  CheckpointTiming checkpoint;
  sim::Duration step;
  std::optional<sim::Duration> interval;  // empty: search
  sim::Duration horizon;
  int seeds = 5;
  uint64_t base_seed = 1;  // seed i uses base_seed + i
  double search_ratio = 1.08;  // grid step of the interval search
};

struct FailureStudyResult {
  sim::Duration interval;         // configured, or the best of the search
  bool searched = false;
  std::vector<JobOutcome> runs;   // one per seed, at `interval`
  MeanCi fraction;                // effective training time fraction
  double interruptions_mean = 0;
  double lost_work_s_mean = 0, checkpoint_overhead_s_mean = 0, recovery_s_mean = 0;
  double job_mtbf_s = 0;          // 1 / (sum over classes of count x rate)
  double young_s = 0, daly_s = 0; // with delta = the blocking checkpoint cost
  std::vector<std::pair<double, double>> search_curve;  // (interval s, mean fraction)
};

FailureStudyResult run_failure_study(const FailureStudyConfig& c);

// Bounds, stated in README.md ("Limits"), decided before the study runs:
// failures drawn over all seeds (memory: ~32 bytes each, and every one is
// replayed at every searched interval), and timeline steps (checkpoint
// segments plus failures, over every seed and searched interval).
inline constexpr double kMaxExpectedFailures = 1e6;
inline constexpr double kMaxTimelineSteps = 1e9;  // ~7 ns each: about 7 s

// What run_failure_study(c) will walk, given `failures_per_seed` expected:
// the intervals it tries and the timeline steps over all of them.
struct StudyWork {
  int intervals = 0;
  double timeline_steps = 0;
};
StudyWork study_work(const FailureStudyConfig& c, double failures_per_seed);

}  // namespace gcsim::workloads::failures
