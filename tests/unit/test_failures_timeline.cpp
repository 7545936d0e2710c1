// The long-horizon job timeline on hand-made failure traces, the
// exponential closed form (Daly 2006), and the searched checkpoint interval
// against Young/Daly.
#include <cmath>

#include "catch.h"
#include "workloads/failures/checkpoint_interval.h"
#include "workloads/failures/failure_study.h"
#include "workloads/failures/job_timeline.h"

using namespace gcsim::workloads::failures;
using gcsim::sim::Duration;
using gcsim::sim::Time;

namespace {

Duration s(double v) { return Duration::from_seconds(v); }

JobTimelineConfig small_job(double durable_s) {
  JobTimelineConfig c;
  c.step = s(10);
  c.checkpoint_every_steps = 6;  // a checkpoint every 60 s of training
  c.checkpoint = {s(5), s(durable_s), s(20)};
  c.recovery.policy = RecoveryPolicy::restart;
  c.recovery.detection = s(10);
  c.recovery.restart = s(30);
  c.horizon = s(1000);
  return c;
}

std::vector<FailureEvent> one_failure_at(double t) {
  FailureEvent e;
  e.when = Time::zero() + s(t);
  e.component = ComponentClass::gpu;
  return {e};
}

}  // namespace

TEST_CASE("failures: timeline of a sync-checkpointed job with one failure", "[failures]") {
  // Train 0-60, ckpt 60-65, train 65-125, ckpt 125-130 (12 steps durable),
  // failure at 150 after 2 more steps: 20 s lost. Recovery 10 + 30 + 20 =
  // 60 s, to 210. Then 12 more checkpoint cycles of 65 s to 990 and one step
  // to 1000: 85 steps = 850 s useful; 14 checkpoints x 5 s = 70 s.
  // 850 + 20 + 70 + 60 = 1000.
  const JobOutcome o = simulate_job(small_job(5), one_failure_at(150));
  CHECK(o.interruptions == 1);
  CHECK(o.lost_work_s == Approx(20));
  CHECK(o.recovery_s == Approx(60));
  CHECK(o.checkpoints == 14);
  CHECK(o.checkpoint_overhead_s == Approx(70));
  CHECK(o.steps == 85);
  CHECK(o.effective_fraction == Approx(0.85));
}

TEST_CASE("failures: an async checkpoint not yet durable does not save the work", "[failures]") {
  // Durable 50 s after it starts: the checkpoint at 125 (12 steps) is
  // durable only at 175, so the failure at 150 falls back to the one taken
  // at 60 (6 steps, durable at 110): 14 - 6 = 8 steps = 80 s lost.
  const JobOutcome o = simulate_job(small_job(50), one_failure_at(150));
  CHECK(o.lost_work_s == Approx(80));
  CHECK(o.recovery_s == Approx(60));
}

TEST_CASE("failures: a failure during recovery starts the recovery over", "[failures]") {
  // Failures at 150 and 190: the first recovery (to 210) is cut at 190
  // (40 s), the second runs 60 s to 250. Two interruptions, 100 s recovery.
  auto f = one_failure_at(150);
  f.push_back(one_failure_at(190)[0]);
  const JobOutcome o = simulate_job(small_job(5), f);
  CHECK(o.interruptions == 2);
  CHECK(o.recovery_s == Approx(100));
  CHECK(o.lost_work_s == Approx(20));
}

TEST_CASE("failures: the spare pool of the replace policy", "[failures]") {
  // One spare, repair 100 s. At 0 the spare is taken (no wait); at 10 the
  // pool is empty and the first node back from repair arrives at 100: 90 s
  // wait; at 200 the node sent to repair at 10 is back: no wait.
  SparePool pool(1);
  CHECK(pool.take(Time::zero(), s(100)) == Duration::zero());
  CHECK(pool.take(Time::zero() + s(10), s(100)).seconds() == Approx(90));
  CHECK(pool.take(Time::zero() + s(200), s(100)) == Duration::zero());
  CHECK(pool.waits() == 1);
}

TEST_CASE("failures: Young and Daly intervals", "[failures]") {
  // delta = 120 s, M = 3600 s: Young sqrt(2 x 120 x 3600) = 929.5 s;
  // Daly: x = 120/7200 = 1/60; 929.5 (1 + 0.04303 + 0.001852) - 120 = 851.2 s.
  CHECK(young_interval(120, 3600) == Approx(929.52).epsilon(1e-4));
  CHECK(daly_interval(120, 3600) == Approx(851.2).epsilon(1e-3));
  CHECK(daly_interval(8000, 3600) == Approx(3600));
}

namespace {

// Exponential failures with a job MTBF of 1 h: 100 nodes at one failure per
// 100 h each; sync checkpoints of 60 s; recovery 60 + 240 + 60 = 360 s.
FailureStudyConfig hourly_failures() {
  FailureStudyConfig c;
  c.rates.per_hour[ComponentClass::node] = 1.0 / 100.0;
  c.counts.count[ComponentClass::node] = 100;
  c.recovery.policy = RecoveryPolicy::restart;
  c.recovery.detection = s(60);
  c.recovery.restart = s(240);
  c.checkpoint = {s(60), s(60), s(60)};
  c.step = s(10);
  c.horizon = s(100 * 86400.0);
  c.seeds = 10;
  return c;
}

}  // namespace

TEST_CASE("failures: simulated useful fraction matches Daly's closed form", "[failures]") {
  // tau = 900 s, delta = 60 s, R = 360 s, M = 3600 s:
  // segment = 3600 e^0.1 (e^(960/3600) - 1) = 3600 x 1.10517 x 0.30561 = 1215.9 s,
  // useful fraction 900 / 1215.9 = 0.7402.
  FailureStudyConfig c = hourly_failures();
  c.interval = s(900);
  const FailureStudyResult r = run_failure_study(c);
  const double expected = daly_useful_fraction(900, 60, 360, 3600);
  CHECK(expected == Approx(0.7402).epsilon(1e-3));
  INFO("simulated " << r.fraction.mean << " [" << r.fraction.lo << ", " << r.fraction.hi << "]");
  CHECK(r.fraction.lo <= expected);
  CHECK(expected <= r.fraction.hi);
  CHECK(r.job_mtbf_s == Approx(3600));
  CHECK(r.interruptions_mean == Approx(2400).epsilon(0.03));  // 100 days / 1 h
}

TEST_CASE("failures: the searched checkpoint interval lands within 15% of Daly's", "[failures]") {
  // delta = 120 s, M = 3600 s: Daly tau = 851 s (test above). The search
  // grid steps by 8%, from max(step, delta) to 4M, independent of Daly.
  FailureStudyConfig c = hourly_failures();
  c.checkpoint = {s(120), s(120), s(60)};
  const FailureStudyResult r = run_failure_study(c);
  REQUIRE(r.searched);
  INFO("optimum " << r.interval.seconds() << " s, Daly " << r.daly_s << " s");
  CHECK(r.daly_s == Approx(851.2).epsilon(1e-3));
  CHECK(std::fabs(r.interval.seconds() / r.daly_s - 1.0) < 0.15);
}

TEST_CASE("failures: the interval of a fraction stays inside (0, 1)", "[failures]") {
  using gcsim::workloads::failures::fraction_ci95;
  // Three seeds 0.80, 0.85, 0.90: mean 0.85, s = 0.05, se = 0.05 / sqrt(3)
  // = 0.028868, t(2) = 4.303. On the logit scale: logit(0.85) = ln(0.85 /
  // 0.15) = 1.734601, half-width 4.303 x 0.028868 / (0.85 x 0.15) =
  // 0.974250; back: expit(0.760351) = 0.681430, expit(2.708851) = 0.937547.
  const auto r = fraction_ci95({0.80, 0.85, 0.90});
  CHECK(r.mean == Approx(0.85).epsilon(1e-12));
  CHECK(r.lo == Approx(0.681430).epsilon(1e-5));
  CHECK(r.hi == Approx(0.937547).epsilon(1e-5));
  // Two seeds 0.5 and 0.9: the plain t interval 0.7 ± 12.706 x 0.2 is
  // [-1.84, 3.24]; this one is expit(0.847298 ± 12.100952) = [1.296e-5,
  // 0.9999976].
  const auto wide = fraction_ci95({0.5, 0.9});
  CHECK(wide.lo == Approx(1.296e-5).epsilon(1e-3));
  CHECK(wide.hi == Approx(0.9999976).epsilon(1e-6));
  CHECK(wide.lo > 0.0);
  CHECK(wide.hi < 1.0);
  // No failures in any seed: every fraction 1, a point interval.
  const auto all_one = fraction_ci95({1.0, 1.0, 1.0});
  CHECK(all_one.lo == 1.0);
  CHECK(all_one.hi == 1.0);
}
