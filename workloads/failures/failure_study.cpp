#include "workloads/failures/failure_study.h"

#include <algorithm>
#include <cmath>

#include "workloads/failures/failure_process.h"

namespace gcsim::workloads::failures {

namespace {

int64_t steps_for(sim::Duration interval, sim::Duration step) {
  return std::max<int64_t>(1, std::llround(interval.seconds() / step.seconds()));
}

std::vector<JobOutcome> run_all(const FailureStudyConfig& c, int64_t every,
                                const std::vector<std::vector<FailureEvent>>& traces) {
  JobTimelineConfig j;
  j.step = c.step;
  j.checkpoint_every_steps = every;
  j.checkpoint = c.checkpoint;
  j.recovery = c.recovery;
  j.horizon = c.horizon;
  std::vector<JobOutcome> out;
  for (const auto& t : traces) out.push_back(simulate_job(j, t));
  return out;
}

double mean_fraction(const std::vector<JobOutcome>& runs) {
  double s = 0;
  for (const auto& r : runs) s += r.effective_fraction;
  return s / static_cast<double>(runs.size());
}

double mtbf_s(const FailureStudyConfig& c) {
  const double rate_per_s = c.counts.total_rate_per_hour(c.rates) / 3600.0;
  return rate_per_s > 0 ? 1.0 / rate_per_s : INFINITY;
}

// The checkpoint intervals, in whole steps, that the study runs: the
// configured one, or a geometric grid from one step (or one checkpoint
// cost) up to four job MTBFs (or the horizon), each interval once.
std::vector<int64_t> intervals_in_steps(const FailureStudyConfig& c) {
  if (c.interval) return {steps_for(*c.interval, c.step)};
  std::vector<int64_t> out;
  const double lo = std::max(c.step.seconds(), c.checkpoint.blocking.seconds());
  const double hi = std::max(lo, std::min(4.0 * mtbf_s(c), c.horizon.seconds()));
  for (double tau = lo; tau <= hi * c.search_ratio; tau *= c.search_ratio) {
    const int64_t k = steps_for(sim::Duration::from_seconds(std::min(tau, hi)), c.step);
    if (out.empty() || k != out.back()) out.push_back(k);
  }
  return out;
}

}  // namespace

StudyWork study_work(const FailureStudyConfig& c, double failures_per_seed) {
  StudyWork w;
  const double horizon_s = c.horizon.seconds();
  for (int64_t k : intervals_in_steps(c)) {
    const double segment_s =
        static_cast<double>(k) * c.step.seconds() + c.checkpoint.blocking.seconds();
    w.timeline_steps += c.seeds * (std::max(1.0, horizon_s / segment_s) + failures_per_seed);
    ++w.intervals;
  }
  return w;
}

FailureStudyResult run_failure_study(const FailureStudyConfig& c) {
  FailureStudyResult r;
  r.job_mtbf_s = mtbf_s(c);
  const double delta = c.checkpoint.blocking.seconds();
  r.young_s = young_interval(delta, r.job_mtbf_s);
  r.daly_s = daly_interval(delta, r.job_mtbf_s);

  std::vector<std::vector<FailureEvent>> traces;
  for (int i = 0; i < c.seeds; ++i) {
    traces.push_back(draw_failures(c.rates, c.counts, c.horizon, c.base_seed + i));
  }

  int64_t every = 0;
  r.searched = !c.interval;
  double best = -1;
  for (int64_t k : intervals_in_steps(c)) {
    std::vector<JobOutcome> runs = run_all(c, k, traces);
    const double f = mean_fraction(runs);
    if (r.searched) r.search_curve.emplace_back(static_cast<double>(k) * c.step.seconds(), f);
    if (f > best) {
      best = f;
      every = k;
      r.runs = std::move(runs);
    }
  }
  r.interval = c.step * every;

  std::vector<double> fractions;
  for (const auto& o : r.runs) {
    fractions.push_back(o.effective_fraction);
    r.interruptions_mean += static_cast<double>(o.interruptions);
    r.lost_work_s_mean += o.lost_work_s;
    r.checkpoint_overhead_s_mean += o.checkpoint_overhead_s;
    r.recovery_s_mean += o.recovery_s;
  }
  const double n = static_cast<double>(r.runs.size());
  r.interruptions_mean /= n;
  r.lost_work_s_mean /= n;
  r.checkpoint_overhead_s_mean /= n;
  r.recovery_s_mean /= n;
  r.fraction = fraction_ci95(fractions);  // a fraction: its interval stays in (0, 1)
  return r;
}

}  // namespace gcsim::workloads::failures
