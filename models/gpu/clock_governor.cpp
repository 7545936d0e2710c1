#include "models/gpu/clock_governor.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace gcsim::models::gpu {

ClockGovernor::ClockGovernor(const PowerParams& params, sim::Time start, const Activity& averaged)
    : params_(params), last_(start), averaged_(averaged) {
  if (!params_.enabled()) throw std::invalid_argument("a clock governor needs a power cap");
}

void ClockGovernor::advance(sim::Time now) {
  if (now < last_) throw std::logic_error("clock governor moved back in time");
  if (now == last_) return;
  const double dt = (now - last_).seconds();
  energy_j_ += power_w() * dt;
  activity_s_.tensor += running_.tensor * dt;
  activity_s_.vector += running_.vector * dt;
  activity_s_.hbm += running_.hbm * dt;
  // Exact step response of the first-order filter to constant input.
  const double keep = std::exp(-dt / params_.time_constant.seconds());
  averaged_.tensor = running_.tensor + (averaged_.tensor - running_.tensor) * keep;
  averaged_.vector = running_.vector + (averaged_.vector - running_.vector) * keep;
  averaged_.hbm = running_.hbm + (averaged_.hbm - running_.hbm) * keep;
  last_ = now;
}

void ClockGovernor::add(sim::Time now, const Activity& a, double dynamic_w) {
  advance(now);
  running_.tensor += a.tensor;
  running_.vector += a.vector;
  running_.hbm += a.hbm;
  dynamic_w_ += dynamic_w;
  ++pieces_;
}

void ClockGovernor::remove(sim::Time now, const Activity& a, double dynamic_w) {
  advance(now);
  if (--pieces_ <= 0) {
    pieces_ = 0;
    running_ = Activity{};
    dynamic_w_ = 0.0;
    return;
  }
  running_.tensor = std::max(0.0, running_.tensor - a.tensor);
  running_.vector = std::max(0.0, running_.vector - a.vector);
  running_.hbm = std::max(0.0, running_.hbm - a.hbm);
  dynamic_w_ = std::max(0.0, dynamic_w_ - dynamic_w);
}

double ClockGovernor::clock(sim::Time now) {
  advance(now);
  return pinned_ > 0.0 ? pinned_ : cap_clock(params_, averaged_);
}

void ClockGovernor::pin(double fraction) {
  if (!(fraction > 0.0 && fraction <= 1.0)) throw std::invalid_argument("a pinned clock lies in (0, 1] of f_max");
  pinned_ = fraction;
}

Activity ClockGovernor::activity_seconds(sim::Time until) const {
  const double dt = until > last_ ? (until - last_).seconds() : 0.0;
  return Activity{activity_s_.tensor + running_.tensor * dt, activity_s_.vector + running_.vector * dt,
                  activity_s_.hbm + running_.hbm * dt};
}

double ClockGovernor::energy_j(sim::Time until) const {
  const double dt = until > last_ ? (until - last_).seconds() : 0.0;
  return energy_j_ + power_w() * dt;
}

}  // namespace gcsim::models::gpu
