#include "models/gpu/power_model.h"

#include <algorithm>
#include <cstdio>

namespace gcsim::models::gpu {

namespace {
std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}
}  // namespace

// Why the ranges (power_model.h):
//  - idle: an idle HGX H100/H200 board reads 60-150 W in nvidia-smi at full
//    clock (measured 80-150 W, calibration/measurements/h100-sxm);
//  - tensor, vector: a 700 W board spends at most ~2x its cap in dynamic
//    power at f_max when nothing limits it (it needs the cap to throttle);
//  - hbm: HBM3/HBM3e stacks draw some 10-60 W each, five or six per board,
//    and moving those bytes through the PHYs, L2 and on-chip network costs
//    as much again (a 1 GiB copy loop on an H100 draws ~380 W above idle);
//  - voltage: CMOS DVFS spans about 0.65-1.1 V, a ratio of 0.5-1;
//  - knee, min clock: Hopper's SM clock table runs from ~0.2 to 1 of f_max;
//  - time constant: the driver's power averaging, between its sampling
//    period (~ms) and the 1 s window nvidia-smi's power.draw averages over;
//  - fast loop: its cap at least the board cap (below it, it would hold
//    sustained work under what the slow loop settles at) and at most 1.5x
//    (an H100's GEMMs draw 1.41x its cap at f_max: a higher fast cap never
//    acts); its window from the driver's sampling period (~1 ms) to 50 ms,
//    and shorter than the slow one's (else it is not the faster loop);
//  - clock share: all of a tile's time scales with the SM clock (1), or a
//    part waits on the L2/HBM domain that keeps its clock (below 1);
//  - HBM device share: a copy's whole path costs hbm_w / peak bandwidth,
//    ~18 pJ/bit on an H100 (490 W at 3.35 TB/s); HBM3 stacks and their
//    PHYs take ~3-7 pJ/bit, so 0.15-0.4 of it; 1 (no sharing) is allowed
//    as the additive model's limit;
//  - memory issue share: 0 (the SMs keep HBM saturated at any clock) up to
//    0.95: a share of 1 or more would leave the kernel SM-bound at f_max,
//    which a memory-bound kernel by definition is not (Little's law: an SM
//    streams bytes in flight / latency, and a part of that latency, the
//    issue slots, LSU, L1 and the crossbar's SM side, runs on the SM clock);
//  - activity hold: 0 to 2 ms, from the driver's power sampling and clock
//    update period (~0.1-1 ms) to well under the fast loop's window (a
//    hold as long as that window would be a second averaging loop).
std::string PowerParams::check() const {
  auto bad = [](const char* key, double v, Range r) {
    return std::string(key) + " = " + num(v) + " lies outside its physical range [" + num(r.lo) +
           ", " + num(r.hi) + "]";
  };
  if (!(cap_w > 0.0)) return "cap must be positive";
  if (!kIdleRange.holds(idle_w)) return bad("idle", idle_w, kIdleRange);
  if (!(idle_w < cap_w)) return "idle must lie below the cap";
  if (!kTensorRange.holds(tensor_w)) return bad("tensor", tensor_w, kTensorRange);
  if (!kVectorRange.holds(vector_w)) return bad("vector", vector_w, kVectorRange);
  if (!kHbmRange.holds(hbm_w)) return bad("hbm", hbm_w, kHbmRange);
  if (!kVoltageRatioRange.holds(min_voltage_ratio)) {
    return bad("min_voltage_ratio", min_voltage_ratio, kVoltageRatioRange);
  }
  if (!kKneeRange.holds(knee_fraction)) return bad("knee_fraction", knee_fraction, kKneeRange);
  if (!kMinClockRange.holds(min_clock_fraction)) {
    return bad("min_clock_fraction", min_clock_fraction, kMinClockRange);
  }
  const double tau_ms = time_constant.seconds() * 1e3;
  if (!kTimeConstantMsRange.holds(tau_ms)) return bad("time_constant (ms)", tau_ms, kTimeConstantMsRange);
  if (!kHbmDeviceShareRange.holds(hbm_device_share)) {
    return bad("hbm_device_share", hbm_device_share, kHbmDeviceShareRange);
  }
  if (!kClockShareRange.holds(clock_bound_share)) {
    return bad("clock_bound_share", clock_bound_share, kClockShareRange);
  }
  if (!kMemoryIssueShareRange.holds(memory_issue_share)) {
    return bad("memory_issue_share", memory_issue_share, kMemoryIssueShareRange);
  }
  const double hold_ms = activity_hold.seconds() * 1e3;
  if (!kActivityHoldMsRange.holds(hold_ms)) return bad("activity_hold (ms)", hold_ms, kActivityHoldMsRange);
  if (!kAttentionTensorShareRange.holds(attention_tensor_share)) {
    return bad("attention_tensor_share", attention_tensor_share, kAttentionTensorShareRange);
  }
  if (instant_limit() && !kInstantCapRatioRange.holds(instant_cap_w / cap_w)) {
    return bad("instant_cap_w over cap_w", instant_cap_w / cap_w, kInstantCapRatioRange);
  }
  if (instant_sustained_w != 0.0 && !(instant_limit() && instant_sustained_w >= cap_w &&
                                      instant_sustained_w <= instant_cap_w)) {
    return "instant_sustained_w must lie between cap_w and instant_cap_w (or be 0)";
  }
  if (fast_loop()) {
    if (!kFastCapRatioRange.holds(fast_cap_w / cap_w)) {
      return bad("fast_cap_w over cap_w", fast_cap_w / cap_w, kFastCapRatioRange);
    }
    const double fast_ms = fast_time_constant.seconds() * 1e3;
    if (!kFastTimeConstantMsRange.holds(fast_ms)) {
      return bad("fast_time_constant (ms)", fast_ms, kFastTimeConstantMsRange);
    }
    if (!(fast_ms < tau_ms)) return "fast_time_constant must be shorter than time_constant";
  }
  return "";
}

double voltage_ratio(const PowerParams& p, double r) {
  if (r <= p.knee_fraction) return p.min_voltage_ratio;
  const double rise = (r - p.knee_fraction) / (1.0 - p.knee_fraction);
  return p.min_voltage_ratio + (1.0 - p.min_voltage_ratio) * std::min(rise, 1.0);
}

double dynamic_scale(const PowerParams& p, double r) {
  const double v = voltage_ratio(p, r);
  return compute_speed(p, r) * v * v;
}

double unshared_hbm(const Activity& a) {
  return std::max(0.0, a.hbm - std::min(1.0, a.tensor + a.vector));
}

Activity with_unshared(Activity a) {
  a.hbm_unshared = unshared_hbm(a);
  return a;
}

double unshared_hbm_seconds(const Activity& activity_s, double span_s) {
  if (!(span_s > 0.0)) return 0.0;
  const Activity mean{activity_s.tensor / span_s, activity_s.vector / span_s, activity_s.hbm / span_s};
  return unshared_hbm(mean) * span_s;
}

void accumulate(Activity& to, const Activity& a, double k) {
  to.tensor += k * a.tensor;
  to.vector += k * a.vector;
  to.hbm += k * a.hbm;
  to.hbm_unshared += k * a.hbm_unshared;
}

double memory_power_w(const PowerParams& p, const Activity& a) {
  return p.hbm_w * (p.hbm_device_share * a.hbm + (1.0 - p.hbm_device_share) * a.hbm_unshared);
}

double board_power_w(const PowerParams& p, const Activity& a, double r) {
  return p.idle_w + (p.tensor_w * a.tensor + p.vector_w * a.vector) * dynamic_scale(p, r) +
         memory_power_w(p, a);
}

double cap_clock(const PowerParams& p, const Activity& a) { return cap_clock(p, a, p.cap_w); }

namespace {
// The highest clock fraction in [min_clock_fraction, 1] at which `power`
// (board power in W against the clock fraction, rising with it) stays at
// or under cap_w: bisect to well under 1 MHz.
template <typename Power>
double highest_clock_under(const PowerParams& p, double cap_w, const Power& power) {
  if (power(1.0) <= cap_w) return 1.0;
  double lo = p.min_clock_fraction, hi = 1.0;
  if (power(lo) >= cap_w) return lo;
  for (int i = 0; i < 40; ++i) {
    const double mid = 0.5 * (lo + hi);
    (power(mid) > cap_w ? hi : lo) = mid;
  }
  return lo;
}
}  // namespace

double cap_clock(const PowerParams& p, const Activity& a, double cap_w) {
  return highest_clock_under(p, cap_w, [&](double r) { return board_power_w(p, a, r); });
}

double cap_clock(const PowerParams& p, const Activity& a, double cap_w, double tensor_cap) {
  if (tensor_cap >= 1.0) return cap_clock(p, a, cap_w);
  return highest_clock_under(p, cap_w, [&](double r) {
    return p.idle_w + p.tensor_w * a.tensor * dynamic_scale(p, std::min(r, tensor_cap)) +
           p.vector_w * a.vector * dynamic_scale(p, r) + memory_power_w(p, a);
  });
}

double compute_speed(const PowerParams& p, double r) {
  return 1.0 / (p.clock_bound_share / r + 1.0 - p.clock_bound_share);
}

double instant_clock(const PowerParams& p, const Activity& a) {
  return p.instant_limit() ? cap_clock(p, a, p.instant_cap_w) : 1.0;
}

double instant_budget_w(const PowerParams& p, double averaged_w) {
  if (!p.instant_limit() || !(p.instant_sustained_w > 0.0)) return p.instant_cap_w;
  const double x = std::clamp((averaged_w - p.idle_w) / (p.cap_w - p.idle_w), 0.0, 1.0);
  return p.instant_cap_w - (p.instant_cap_w - p.instant_sustained_w) * x;
}

double relative_speed(const PowerParams& p, double r, double rest) {
  if (r >= rest) return 1.0;
  return compute_speed(p, r) / compute_speed(p, rest);
}

}  // namespace gcsim::models::gpu
