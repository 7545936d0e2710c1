#include "models/network/packet/dcqcn.h"

#include <algorithm>
#include <cmath>

namespace gcsim::models::network {

DcqcnRateControl::DcqcnRateControl(const DcqcnConfig& cfg, double line_rate_bytes_per_s,
                                   sim::Time now)
    : cfg_(&cfg),
      line_(line_rate_bytes_per_s),
      current_(line_rate_bytes_per_s),
      target_(line_rate_bytes_per_s),
      alpha_base_(now),
      timer_base_(now) {}

void DcqcnRateControl::on_cnp(sim::Time now) {
  advance(now);
  target_ = current_;
  current_ = std::max(cfg_->min_rate.bytes_per_s(), current_ * (1.0 - alpha_ / 2.0));
  alpha_ = (1.0 - cfg_->g) * alpha_ + cfg_->g;
  // A cut restarts the alpha period, the rate-increase timer and byte
  // counter, and both stage counts.
  alpha_base_ = timer_base_ = now;
  bytes_since_event_ = 0;
  byte_stage_ = time_stage_ = 0;
  ++cuts_;
}

void DcqcnRateControl::on_sent(int64_t bytes, sim::Time now) {
  advance(now);
  bytes_since_event_ += bytes;
  const int64_t b = cfg_->byte_counter.count();
  while (bytes_since_event_ >= b) {
    bytes_since_event_ -= b;
    ++byte_stage_;
    increase();
  }
}

void DcqcnRateControl::advance(sim::Time now) {
  const int64_t alpha_ps = cfg_->alpha_period.ps();
  const int64_t k_alpha = (now - alpha_base_).ps() / alpha_ps;
  if (k_alpha > 0) {
    alpha_ *= std::pow(1.0 - cfg_->g, static_cast<double>(k_alpha));
    alpha_base_ = alpha_base_ + sim::Duration::from_ps(k_alpha * alpha_ps);
  }
  const int64_t period_ps = cfg_->rate_increase_period.ps();
  const int64_t k = (now - timer_base_).ps() / period_ps;
  if (k <= 0) return;
  timer_base_ = timer_base_ + sim::Duration::from_ps(k * period_ps);
  // After 4096 hyper-additive steps any line rate is regained; more would
  // change nothing but cost time after a long idle spell.
  const int64_t steps = std::min<int64_t>(k, 4096);
  for (int64_t i = 0; i < steps && current_ < line_; ++i) {
    ++time_stage_;
    increase();
  }
}

void DcqcnRateControl::increase() {
  const int f = cfg_->fast_recovery_steps;
  if (std::max(byte_stage_, time_stage_) < f) {
    // Fast recovery: halfway back to the rate before the cut.
  } else if (std::min(byte_stage_, time_stage_) > f) {
    // Hyper increase, growing with the number of steps past F.
    const int i = std::min(byte_stage_, time_stage_) - f;
    target_ += i * cfg_->hai_rate.bytes_per_s();
  } else {
    target_ += cfg_->ai_rate.bytes_per_s();
  }
  target_ = std::min(target_, line_);
  current_ = std::min(line_, (target_ + current_) / 2.0);
}

}  // namespace gcsim::models::network
