#include "sim/report/failures_report.h"

#include <cmath>

#include "sim/report/format.h"
#include "workloads/failures/failure_study.h"

namespace gcsim::cli {

namespace wf = workloads::failures;
using sim::config::Json;

namespace {

// Decided before the study runs, now that the step time is known: a
// checkpoint every step over 106 days of 100 us steps would walk 10^11
// timeline steps. Names checkpoint.interval and the figures that drive it.
void check_study_work(const FailuresSetup& s, const wf::FailureStudyConfig& c) {
  const double hours = c.horizon.seconds() / 3600.0;
  const double failures = c.counts.total_rate_per_hour(c.rates) * hours;
  const wf::StudyWork w = wf::study_work(c, failures);
  if (w.timeline_steps <= wf::kMaxTimelineSteps) return;
  const std::string interval =
      c.interval ? "checkpoint.interval " + human_time(c.interval->seconds())
                 : "checkpoint.interval: search (" + std::to_string(w.intervals) + " intervals from one step up)";
  const std::string message =
      "the failure study would walk " + fmt("%.3g", w.timeline_steps) +
      " timeline steps (checkpoints and failures): simulation.duration " +
      fmt("%.4g h", hours) + " of " + human_time(c.step.seconds()) + " training steps, " +
      interval + ", x " + std::to_string(c.seeds) + " seeds; at most " +
      fmt("%.0f", wf::kMaxTimelineSteps) +
      ": set a longer checkpoint.interval, a shorter simulation.duration or fewer simulation.seeds";
  if (s.checkpoint_at) s.checkpoint_at->fail("interval", message);
  throw sim::config::ConfigError("", 0, "checkpoint.interval", message);
}

}  // namespace

std::string add_failures_results(const FailuresSetup& s, double step_s, Json& summary,
                                 std::string& report) {
  const models::storage::CheckpointStorage storage(s.storage);
  const models::storage::CheckpointCost cost = storage.cost(s.shape, s.mode);

  wf::FailureStudyConfig c;
  c.rates = s.rates;
  c.counts = s.counts;
  c.recovery = s.recovery;
  c.checkpoint = {cost.blocking, cost.durable, cost.load};
  c.step = sim::Duration::from_seconds(step_s);
  if (c.step <= sim::Duration::zero()) c.step = sim::Duration::from_ps(1);
  c.interval = s.interval;
  c.horizon = s.horizon.duration;
  c.seeds = s.horizon.seeds;
  c.base_seed = s.seed;
  check_study_work(s, c);
  const wf::FailureStudyResult r = wf::run_failure_study(c);

  Json j;
  j["interruptions"] = r.interruptions_mean;
  j["lost_work_s"] = r.lost_work_s_mean;
  j["checkpoint_cost_s"] = cost.blocking.seconds();
  j["checkpoint_overhead_s"] = r.checkpoint_overhead_s_mean;
  j["recovery_s"] = r.recovery_s_mean;
  j["effective_training_time_fraction"] = {{"mean", r.fraction.mean},
                                           {"ci95", {r.fraction.lo, r.fraction.hi}}};
  if (r.searched) j["optimal_checkpoint_interval_s"] = r.interval.seconds();
  // Context for the figures above (means over seeds).
  j["checkpoint_interval_s"] = r.interval.seconds();
  j["checkpoint_mode"] = models::storage::checkpoint_mode_name(s.mode);
  j["checkpoint_bytes_per_gpu"] = s.shape.bytes_per_gpu;
  j["checkpoint_durable_s"] = cost.durable.seconds();
  j["checkpoint_load_s"] = cost.load.seconds();
  j["recovery_policy"] = wf::recovery_policy_name(s.recovery.policy);
  j["step_time_s"] = step_s;
  j["duration_s"] = s.horizon.duration.seconds();
  j["seeds"] = s.horizon.seeds;
  // With every rate 0 there is no MTBF and no optimal interval: null, not
  // an infinity the JSON reader would have to special-case.
  const bool fails = std::isfinite(r.job_mtbf_s);
  const auto or_null = [fails](double v) { return fails ? Json(v) : Json(nullptr); };
  j["job_mtbf_s"] = or_null(r.job_mtbf_s);
  j["young_interval_s"] = or_null(r.young_s);
  j["daly_interval_s"] = or_null(r.daly_s);
  Json by_class = Json::object();
  Json counts = Json::object();
  double correlated = 0, spare_waits = 0;
  for (wf::ComponentClass k : wf::kAllComponentClasses) {
    double n = 0;
    for (const auto& o : r.runs) n += static_cast<double>(o.interruptions_by_class[k]);
    by_class[wf::component_class_name(k)] = n / static_cast<double>(r.runs.size());
    counts[wf::component_class_name(k)] = s.counts.count[k];
  }
  for (const auto& o : r.runs) {
    correlated += static_cast<double>(o.correlated_link_failures);
    spare_waits += static_cast<double>(o.spare_waits);
  }
  j["interruptions_by_class"] = by_class;
  j["components"] = counts;
  j["correlated_link_failures"] = correlated / static_cast<double>(r.runs.size());
  j["spare_waits"] = spare_waits / static_cast<double>(r.runs.size());
  summary["failures"] = j;

  const double days = s.horizon.duration.seconds() / 86400.0;
  report += "\n## Failures and checkpoints\n\n";
  report += "| figure | value |\n|---|---|\n";
  report += "| simulated duration | " + fmt("%.1f days", days) + " x " +
            std::to_string(s.horizon.seeds) + " seeds |\n";
  const std::string none = "none (no failures configured: every rate is 0)";
  const std::string mtbf = fails ? fmt("%.2f h", r.job_mtbf_s / 3600) : none;
  const std::string young_daly =
      fails ? fmt("%.0f s", r.young_s) + " / " + fmt("%.0f s", r.daly_s) : none;
  report += "| job MTBF (1 / sum count x rate) | " + mtbf + " |\n";
  report += "| interruptions (mean) | " + fmt("%.1f", r.interruptions_mean) + " |\n";
  report += "| checkpoint interval | " + fmt("%.0f s", r.interval.seconds()) +
            (r.searched ? " (searched)" : "") + " |\n";
  report += "| Young / Daly interval | " + young_daly + " |\n";
  report += "| checkpoint blocking / durable / load | " + fmt("%.2f s", cost.blocking.seconds()) +
            " / " + fmt("%.2f s", cost.durable.seconds()) + " / " +
            fmt("%.2f s", cost.load.seconds()) + " |\n";
  report += "| lost work (mean) | " + fmt("%.0f s", r.lost_work_s_mean) + " |\n";
  report += "| checkpoint overhead (mean) | " + fmt("%.0f s", r.checkpoint_overhead_s_mean) +
            " |\n";
  report += "| recovery (mean) | " + fmt("%.0f s", r.recovery_s_mean) + " |\n";
  report += "| effective training time fraction | " + fmt("%.4f", r.fraction.mean) + " [" +
            fmt("%.4f", r.fraction.lo) + ", " + fmt("%.4f", r.fraction.hi) + "] |\n";

  std::string out;
  out += "failures: " + fmt("%.1f", r.interruptions_mean) + " interruptions in " +
         fmt("%.1f", days) + " days (job MTBF " + mtbf + "); " +
         "effective training time " + fmt("%.4f", r.fraction.mean) + " [" +
         fmt("%.4f", r.fraction.lo) + ", " + fmt("%.4f", r.fraction.hi) + "]\n";
  out += "checkpoint every " + fmt("%.0f s", r.interval.seconds()) +
         (r.searched ? " (best of the search)" : "") + ", blocking " +
         fmt("%.2f s", cost.blocking.seconds()) + "; Young / Daly " + young_daly + "\n";
  return out;
}

}  // namespace gcsim::cli
