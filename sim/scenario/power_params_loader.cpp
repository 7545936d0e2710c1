#include "sim/scenario/power_params_loader.h"

#include <cstdio>
#include <string>

namespace gcsim::cli {

using models::gpu::PowerParams;
using models::gpu::Range;
using sim::config::ConfigReader;

namespace {
std::string range_text(Range r) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "[%g, %g]", r.lo, r.hi);
  return buf;
}

double in_range(ConfigReader& r, const char* key, double fallback, Range range, const char* doc) {
  const double v = r.get_double(key, fallback, doc);
  if (!range.holds(v)) r.fail(key, std::string("must lie in its physical range ") + range_text(range));
  return v;
}
}  // namespace

PowerParams read_power_params(ConfigReader& gpu, const PowerParams& base) {
  if (!gpu.has("power")) return base;
  namespace g = models::gpu;
  ConfigReader r = gpu.child("power", "board power and the power cap's clock control");
  PowerParams p = base;
  p.cap_w = r.get_double("cap_w", base.cap_w, "board power limit in W (nvidia-smi power.limit)");
  if (!(p.cap_w > 0.0)) r.fail("cap_w", "must be positive");
  p.idle_w = in_range(r, "idle_w", base.idle_w, g::kIdleRange, "board power idle at max clock, W");
  if (!(p.idle_w < p.cap_w)) r.fail("idle_w", "must lie below cap_w");
  p.tensor_w = in_range(r, "tensor_w", base.tensor_w, g::kTensorRange,
                        "tensor pipes busy on every SM at max clock, W");
  p.vector_w = in_range(r, "vector_w", base.vector_w, g::kVectorRange,
                        "CUDA cores busy on every SM at max clock, W");
  p.hbm_w = in_range(r, "hbm_w", base.hbm_w, g::kHbmRange, "HBM at full bandwidth, W");
  p.hbm_device_share = in_range(r, "hbm_device_share", base.hbm_device_share, g::kHbmDeviceShareRange,
                                "share of hbm_w in the DRAM stacks and PHYs (the rest, the on-chip path, "
                                "is shared with arithmetic beside the traffic; 1: none shared)");
  p.min_voltage_ratio = in_range(r, "min_voltage_ratio", base.min_voltage_ratio,
                                 g::kVoltageRatioRange, "core voltage at the knee over that at max clock");
  p.knee_fraction = in_range(r, "knee_fraction", base.knee_fraction, g::kKneeRange,
                             "clock (over max) below which the voltage stays at its minimum");
  p.min_clock_fraction = in_range(r, "min_clock_fraction", base.min_clock_fraction,
                                  g::kMinClockRange, "lowest clock (over max) the cap drives the SMs to");
  p.time_constant = r.get_duration("time_constant", base.time_constant,
                                   "window over which the driver averages power against the cap");
  const double tau_ms = p.time_constant.seconds() * 1e3;
  if (!g::kTimeConstantMsRange.holds(tau_ms)) {
    r.fail("time_constant", "must lie in its physical range " + range_text(g::kTimeConstantMsRange) + " ms");
  }
  p.clock_bound_share = in_range(r, "clock_bound_share", base.clock_bound_share, g::kClockShareRange,
                                 "share of an arithmetic tile's time that scales with the SM clock");
  p.memory_issue_share =
      in_range(r, "memory_issue_share", base.memory_issue_share, g::kMemoryIssueShareRange,
               "a memory-bound tile's SM-side time over its HBM time at max clock (0: never SM-bound)");
  p.activity_hold = r.get_duration("activity_hold", base.activity_hold,
                                   "how long a fall in activity must last before the power loops count it");
  const double hold_ms = p.activity_hold.seconds() * 1e3;
  if (!g::kActivityHoldMsRange.holds(hold_ms)) {
    r.fail("activity_hold", "must lie in its physical range " + range_text(g::kActivityHoldMsRange) + " ms");
  }
  // The fast loop: both keys or neither (fast_cap_w 0 turns it off).
  p.fast_cap_w = r.get_double("fast_cap_w", base.fast_cap_w,
                              "the fast power loop's cap in W (0: none), over the fast window");
  p.fast_time_constant = r.get_duration("fast_time_constant", base.fast_time_constant,
                                        "window over which the driver's fast loop averages power");
  if (p.fast_loop()) {
    if (!g::kFastCapRatioRange.holds(p.fast_cap_w / p.cap_w)) {
      r.fail("fast_cap_w", "over cap_w must lie in its physical range " + range_text(g::kFastCapRatioRange));
    }
    const double fast_ms = p.fast_time_constant.seconds() * 1e3;
    if (!g::kFastTimeConstantMsRange.holds(fast_ms)) {
      r.fail("fast_time_constant",
             "must lie in its physical range " + range_text(g::kFastTimeConstantMsRange) + " ms");
    }
    if (!(fast_ms < tau_ms)) r.fail("fast_time_constant", "must be shorter than time_constant");
  } else if (p.fast_cap_w < 0.0) {
    r.fail("fast_cap_w", "must be positive (or 0: no fast loop)");
  }
  p.attention_tensor_share =
      in_range(r, "attention_tensor_share", base.attention_tensor_share, g::kAttentionTensorShareRange,
               "of a fused attention tile's arithmetic time, the share the tensor pipes are busy (the rest: "
               "softmax on the CUDA cores)");
  // The instantaneous limiter (0: none): at or above cap_w, in its range.
  p.instant_cap_w = r.get_double("instant_cap_w", base.instant_cap_w,
                                 "the instantaneous limiter's cap in W (0: none): a kernel runs at most at "
                                 "the clock where its own power meets it");
  if (p.instant_limit()) {
    if (!g::kInstantCapRatioRange.holds(p.instant_cap_w / p.cap_w)) {
      r.fail("instant_cap_w",
             "over cap_w must lie in its physical range " + range_text(g::kInstantCapRatioRange));
    }
  } else if (p.instant_cap_w < 0.0) {
    r.fail("instant_cap_w", "must be positive (or 0: no instantaneous limiter)");
  }
  p.instant_sustained_w = r.get_double("instant_sustained_w", base.instant_sustained_w,
                                       "the instantaneous limiter's cap in W once the averaged power sits at "
                                       "cap_w (0: it stays at instant_cap_w)");
  if (p.instant_sustained_w != 0.0 &&
      !(p.instant_limit() && p.instant_sustained_w >= p.cap_w && p.instant_sustained_w <= p.instant_cap_w)) {
    r.fail("instant_sustained_w", "must lie between cap_w and instant_cap_w (or be 0)");
  }
  r.finish();
  return p;
}

}  // namespace gcsim::cli
