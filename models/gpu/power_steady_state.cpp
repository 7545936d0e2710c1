#include "models/gpu/power_steady_state.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "models/gpu/kernel_cost_model.h"
#include "models/gpu/power_loop.h"
#include "models/gpu/rest_clock.h"

namespace gcsim::models::gpu {

namespace {
// The time-averaged activity of `k` run back to back through the Gpu
// runtime at `clock`: what the runtime charges it, launch gaps included, so
// the closed form and the runtime settle at the same clock.
Activity back_to_back(const GpuSpec& spec, const KernelDesc& k, double clock) {
  const KernelActivity a = pinned_kernel_activity(spec, k, clock);
  const double busy = a.duration_s / (a.duration_s + a.launch_gap_s);
  return Activity{a.activity.tensor * busy, a.activity.vector * busy, a.activity.hbm * busy,
                  a.activity.hbm_unshared * busy};
}
}  // namespace

SteadyState steady_state(const GpuSpec& spec, const KernelDesc& kernel) {
  if (!spec.power.enabled()) throw std::invalid_argument(spec.name + " has no power model");
  SteadyState s;
  // Lower clock -> longer arithmetic -> larger arithmetic share -> more
  // power per unit time: a contraction; the runtime's times are rounded to
  // 1 ps, so it settles to ~1e-9, not to the last bit.
  if (spec.power.activity_hold > sim::Duration::zero()) {
    // The hold's averages follow the highest level of each hold window, which
    // only the runtime's loop gives: run it until settled (20 slow windows).
    const SettledLoop loop = settled_loop(spec, kernel, 20.0 * spec.power.time_constant.seconds());
    s.clock = loop.clock;
    s.activity = loop.averaged;
  } else {
    for (int i = 0; i < 60; ++i) {
      s.activity = back_to_back(spec, kernel, s.clock);
      const double clock = cap_clock(spec.power, s.activity);
      const bool settled = std::abs(clock - s.clock) < 1e-9;
      s.clock = clock;
      if (settled) break;
    }
  }
  const double rest = rest_clock(spec, kernel);
  s.clock = std::min(s.clock, rest);
  s.speed = relative_speed(spec.power, s.clock, rest);
  s.power_w = board_power_w(spec.power, s.activity, s.clock);
  return s;
}

KernelDesc reference_gemm(const GpuSpec& spec) {
  return gemm_kernel(spec, GemmShape{8192, 8192, 8192, 1, Dtype::bf16});
}

double model_sustained_fraction(const GpuSpec& spec) {
  return steady_state(spec, reference_gemm(spec)).speed;
}

}  // namespace gcsim::models::gpu
