#include "models/gpu/power_steady_state.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "models/gpu/kernel_cost_model.h"

namespace gcsim::models::gpu {

namespace {
// Activity of `k` on all SMs with its arithmetic stretched by 1 / speed.
Activity activity_at(const GpuSpec& spec, const KernelDesc& k, double speed) {
  const int sms = std::min<int>(spec.sm_count, static_cast<int>(std::max<int64_t>(1, k.tiles)));
  const double stretch = 1.0 / speed;
  const double length = wave_time(spec, k, sms, stretch).seconds();
  const double share = static_cast<double>(sms) / spec.sm_count;
  const double busy = std::min(1.0, tile_cost(spec, k, sms).compute.seconds() * stretch / length) * share;
  Activity a;
  if (k.unit == ExecUnit::tensor) a.tensor = busy;
  if (k.unit == ExecUnit::vector) a.vector = busy;
  a.hbm = std::min(1.0, sms * k.bytes_per_tile / length / spec.hbm_bandwidth.bytes_per_s());
  return a;
}
}  // namespace

SteadyState steady_state(const GpuSpec& spec, const KernelDesc& kernel) {
  if (!spec.power.enabled()) throw std::invalid_argument(spec.name + " has no power model");
  SteadyState s;
  // Lower clock -> longer arithmetic -> larger arithmetic share -> more
  // power per unit time: a contraction, settled well inside 1e-9 in a few
  // dozen rounds.
  for (int i = 0; i < 60; ++i) {
    s.activity = activity_at(spec, kernel, s.speed);
    const double clock = cap_clock(spec.power, s.activity);
    const bool settled = std::abs(clock - s.clock) < 1e-12;
    s.clock = clock;
    s.speed = compute_speed(spec.power, clock);
    if (settled) break;
  }
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
