#include "workloads/failures/job_timeline.h"

#include <algorithm>

namespace gcsim::workloads::failures {

namespace {

class JobRun {
 public:
  JobRun(const JobTimelineConfig& c, const std::vector<FailureEvent>& f)
      : c_(c), f_(f), end_(sim::Time::zero() + c.horizon), pool_(c.recovery.spares) {}

  JobOutcome run() {
    const int64_t step_ps = c_.step.ps();
    // Bounded so that a segment never leaves int64 picoseconds.
    const int64_t every =
        std::clamp<int64_t>(c_.checkpoint_every_steps, 1, c_.horizon.ps() / step_ps + 1);
    const sim::Duration segment = every > sim::Duration::max().ps() / step_ps
                                      ? sim::Duration::max()
                                      : c_.step * every;
    while (t_ < end_) {
      const sim::Time tf = next_failure();
      const sim::Time seg_end = (end_ - t_ < segment) ? end_ : t_ + segment;
      if (tf < seg_end) {
        const int64_t steps = (tf - t_).ps() / step_ps;
        progress_ += steps;
        fail((tf - t_ - c_.step * steps).seconds());
        continue;
      }
      if (seg_end == end_ && end_ - t_ < segment) {
        progress_ += (end_ - t_).ps() / step_ps;
        t_ = end_;
        break;
      }
      progress_ += every;
      t_ = seg_end;
      checkpoint(tf);
    }
    o_.steps = progress_;
    o_.useful_s = static_cast<double>(progress_) * c_.step.seconds();
    o_.effective_fraction = o_.useful_s / c_.horizon.seconds();
    o_.spare_waits = pool_.waits();
    return o_;
  }

 private:
  sim::Time next_failure() const { return next_ < f_.size() ? f_[next_].when : sim::Time::max(); }

  void settle(sim::Time now) {
    if (pending_ && pending_at_ <= now) {
      durable_ = pending_steps_;
      pending_ = false;
    }
  }

  void checkpoint(sim::Time tf) {
    if (pending_ && pending_at_ > t_) {
      // The previous write is still in flight: the next snapshot waits.
      const sim::Time until = std::min({pending_at_, tf, end_});
      o_.checkpoint_overhead_s += (until - t_).seconds();
      t_ = until;
      if (tf == until) return fail(0.0);
      if (t_ == end_) return;
    }
    settle(t_);
    const sim::Time block_end =
        (end_ - t_ < c_.checkpoint.blocking) ? end_ : t_ + c_.checkpoint.blocking;
    if (tf < block_end) {
      o_.checkpoint_overhead_s += (tf - t_).seconds();
      t_ = tf;
      return fail(0.0);  // the checkpoint in progress is lost with the steps
    }
    o_.checkpoint_overhead_s += (block_end - t_).seconds();
    if (block_end == end_ && end_ - t_ < c_.checkpoint.blocking) {
      t_ = end_;
      return;
    }
    ++o_.checkpoints;
    if (c_.checkpoint.durable <= c_.checkpoint.blocking) {
      durable_ = progress_;
    } else {
      pending_ = true;
      pending_steps_ = progress_;
      pending_at_ = (end_ - t_ < c_.checkpoint.durable) ? sim::Time::max() : t_ + c_.checkpoint.durable;
    }
    t_ = block_end;
  }

  // The failure f_[next_] has struck; `partial_s` of an unfinished step is lost too.
  void fail(double partial_s) {
    settle(f_[next_].when);
    pending_ = false;
    o_.lost_work_s += static_cast<double>(progress_ - durable_) * c_.step.seconds() + partial_s;
    progress_ = durable_;
    const RecoveryConfig& r = c_.recovery;
    while (true) {
      const FailureEvent& e = f_[next_++];
      ++o_.interruptions;
      ++o_.interruptions_by_class[e.component];
      o_.correlated_link_failures += e.correlated_links;
      sim::Duration cost = saturating_sum(saturating_sum(r.detection, r.restart), c_.checkpoint.load);
      if (r.policy == RecoveryPolicy::resubmit) cost = saturating_sum(cost, r.queue_wait);
      if (r.policy == RecoveryPolicy::replace && needs_spare(e.component)) {
        cost = saturating_sum(cost, pool_.take(e.when, r.repair));
      }
      const sim::Time done = (end_ - e.when <= cost) ? end_ : e.when + cost;
      const sim::Time tf = next_failure();
      if (tf < done) {  // struck again while recovering: start over
        o_.recovery_s += (tf - e.when).seconds();
        continue;
      }
      o_.recovery_s += (done - e.when).seconds();
      t_ = done;
      return;
    }
  }

  const JobTimelineConfig& c_;
  const std::vector<FailureEvent>& f_;
  const sim::Time end_;
  SparePool pool_;
  JobOutcome o_;
  sim::Time t_ = sim::Time::zero();
  size_t next_ = 0;
  int64_t progress_ = 0;  // steps done since the run began, as the GPUs hold them
  int64_t durable_ = 0;   // steps a restart resumes from
  bool pending_ = false;  // a checkpoint written but not yet durable
  int64_t pending_steps_ = 0;
  sim::Time pending_at_;
};

}  // namespace

JobOutcome simulate_job(const JobTimelineConfig& c, const std::vector<FailureEvent>& failures) {
  return JobRun(c, failures).run();
}

}  // namespace gcsim::workloads::failures
