#include "models/gpu/clock_governor.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace gcsim::models::gpu {

ClockGovernor::ClockGovernor(const PowerParams& params, sim::Time start, const Activity& averaged)
    : params_(params), last_(start), averaged_(averaged), averaged_fast_(averaged), since_(start) {
  if (!params_.enabled()) throw std::invalid_argument("a clock governor needs a power cap");
}

ClockGovernor::ClockGovernor(const PowerParams& params, sim::Time start, const GovernorState& state)
    : ClockGovernor(params, start, state.slow) {
  averaged_fast_ = state.fast;
}

namespace {
// Exact step response of a first-order filter to constant input `in` over
// `keep` = exp(-dt / tau).
void relax(Activity& avg, const Activity& in, double keep) {
  avg.tensor = in.tensor + (avg.tensor - in.tensor) * keep;
  avg.vector = in.vector + (avg.vector - in.vector) * keep;
  avg.hbm = in.hbm + (avg.hbm - in.hbm) * keep;
  avg.hbm_unshared = in.hbm_unshared + (avg.hbm_unshared - in.hbm_unshared) * keep;
}
}  // namespace

GovernorState periodic_start(const PowerParams& params, const GovernorState& start, const GovernorState& end,
                             sim::Duration period) {
  if (period <= sim::Duration::zero()) return end;
  auto fixed_point = [&](const Activity& a0, const Activity& a1, sim::Duration tau) {
    const double x = period.seconds() / tau.seconds();
    const double keep = std::exp(-x);
    const double gain = -std::expm1(-x);  // 1 - keep, exact for short periods
    // end - start keep is the period's own contribution B, computed once per
    // component; a period far shorter than tau leaves B small but exact to
    // ~1e-16 of the averages, so B / gain keeps ~1e-16 tau / period.
    auto one = [&](double s0, double s1) { return std::max(0.0, (s1 - s0 * keep) / gain); };
    return Activity{one(a0.tensor, a1.tensor), one(a0.vector, a1.vector), one(a0.hbm, a1.hbm),
                    one(a0.hbm_unshared, a1.hbm_unshared)};
  };
  GovernorState p;
  p.slow = fixed_point(start.slow, end.slow, params.time_constant);
  p.fast = params.fast_loop() ? fixed_point(start.fast, end.fast, params.fast_time_constant) : p.slow;
  return p;
}

namespace {
// The loops' clock for averages `slow` and `fast`. Under an instantaneous
// limiter the tensor work of those averages runs at most where a kernel
// keeping the tensor pipes busy meets the limiter's cap now, so the loops
// count its power at that clock, not at theirs.
double loops_clock(const PowerParams& params, const Activity& slow, const Activity& fast) {
  double tensor_cap = 1.0;
  if (params.instant_limit()) {
    Activity busy;
    busy.tensor = 1.0;
    tensor_cap = cap_clock(params, busy, state_instant_budget_w(params, slow));
  }
  const double s = cap_clock(params, slow, params.cap_w, tensor_cap);
  return params.fast_loop() ? std::min(s, cap_clock(params, fast, params.fast_cap_w, tensor_cap)) : s;
}
}  // namespace

double state_clock(const PowerParams& params, const GovernorState& state) {
  return loops_clock(params, state.slow, state.fast);
}

GovernorState ClockGovernor::state_at(sim::Time until) const {
  ClockGovernor copy = *this;
  copy.advance(std::max(until, last_));
  return GovernorState{copy.averaged_, params_.fast_loop() ? copy.averaged_fast_ : copy.averaged_};
}

double ClockGovernor::demand_w(const Activity& a) const {
  return params_.tensor_w * a.tensor + params_.vector_w * a.vector + memory_power_w(params_, a);
}

const Activity& ClockGovernor::filter_input() const {
  if (held_.empty() || held_.front().demand_w <= demand_w(running_)) return running_;
  return held_.front().level;
}

void ClockGovernor::hold_level(sim::Time now) {
  if (params_.activity_hold > sim::Duration::zero() && now > since_) {
    const double w = demand_w(running_);
    while (!held_.empty() && held_.back().demand_w <= w) held_.pop_back();
    held_.push_back(Held{now + params_.activity_hold, running_, w});
  }
  since_ = now;
}

void ClockGovernor::advance(sim::Time now) {
  if (now < last_) throw std::logic_error("clock governor moved back in time");
  if (now == last_) return;
  const double dt = (now - last_).seconds();
  energy_j_ += power_w() * dt;
  activity_s_.tensor += running_.tensor * dt;
  activity_s_.vector += running_.vector * dt;
  activity_s_.hbm += running_.hbm * dt;
  activity_s_.hbm_unshared += running_.hbm_unshared * dt;
  // The filters, piece by piece between the held levels' expiries.
  sim::Time t = last_;
  while (t < now) {
    while (!held_.empty() && held_.front().until <= t) held_.pop_front();
    const sim::Time to = !held_.empty() && held_.front().until < now ? held_.front().until : now;
    const double piece = (to - t).seconds();
    const Activity& in = filter_input();
    relax(averaged_, in, std::exp(-piece / params_.time_constant.seconds()));
    if (params_.fast_loop()) relax(averaged_fast_, in, std::exp(-piece / params_.fast_time_constant.seconds()));
    t = to;
  }
  last_ = now;
}

void ClockGovernor::add(sim::Time now, const Activity& a, double arithmetic_w) {
  advance(now);
  hold_level(now);
  running_.tensor += a.tensor;
  running_.vector += a.vector;
  running_.hbm += a.hbm;
  running_.hbm_unshared =
      unshared_given_ ? std::min(running_.hbm, running_.hbm_unshared + a.hbm_unshared) : unshared_hbm(running_);
  arithmetic_w_ += arithmetic_w;
  ++pieces_;
}

void ClockGovernor::remove(sim::Time now, const Activity& a, double arithmetic_w) {
  advance(now);
  hold_level(now);
  if (--pieces_ <= 0) {
    pieces_ = 0;
    running_ = Activity{};
    arithmetic_w_ = 0.0;
    return;
  }
  running_.tensor = std::max(0.0, running_.tensor - a.tensor);
  running_.vector = std::max(0.0, running_.vector - a.vector);
  running_.hbm = std::max(0.0, running_.hbm - a.hbm);
  running_.hbm_unshared = unshared_given_
                              ? std::clamp(running_.hbm_unshared - a.hbm_unshared, 0.0, running_.hbm)
                              : unshared_hbm(running_);
  arithmetic_w_ = std::max(0.0, arithmetic_w_ - arithmetic_w);
}

double ClockGovernor::clock(sim::Time now) {
  advance(now);
  if (pinned_ > 0.0) return pinned_;
  return loops_clock(params_, averaged_, params_.fast_loop() ? averaged_fast_ : averaged_);
}

double state_instant_budget_w(const PowerParams& params, const Activity& slow) {
  if (!params.instant_limit()) return 0.0;
  return instant_budget_w(params, board_power_w(params, slow, cap_clock(params, slow)));
}

double ClockGovernor::instant_budget_w(sim::Time now) {
  advance(now);
  return state_instant_budget_w(params_, averaged_);
}

void ClockGovernor::pin(double fraction) {
  if (!(fraction > 0.0 && fraction <= 1.0)) throw std::invalid_argument("a pinned clock lies in (0, 1] of f_max");
  pinned_ = fraction;
}

Activity ClockGovernor::activity_seconds(sim::Time until) const {
  const double dt = until > last_ ? (until - last_).seconds() : 0.0;
  return Activity{activity_s_.tensor + running_.tensor * dt, activity_s_.vector + running_.vector * dt,
                  activity_s_.hbm + running_.hbm * dt, activity_s_.hbm_unshared + running_.hbm_unshared * dt};
}

double ClockGovernor::energy_j(sim::Time until) const {
  const double dt = until > last_ ? (until - last_).seconds() : 0.0;
  return energy_j_ + power_w() * dt;
}

}  // namespace gcsim::models::gpu
