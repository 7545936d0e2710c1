#include "models/gpu/rest_clock.h"

#include <algorithm>

#include "models/gpu/kernel_cost_model.h"

namespace gcsim::models::gpu {

Activity arithmetic_activity(const PowerParams& p, const KernelDesc& kernel, double busy) {
  Activity a;
  if (kernel.unit == ExecUnit::tensor) {
    const double tensor = kernel.fused_attention ? p.attention_tensor_share : 1.0;
    a.tensor = busy * tensor;
    a.vector = busy * (1.0 - tensor);
  }
  if (kernel.unit == ExecUnit::vector) a.vector = busy;
  return a;
}

Activity rest_activity(const GpuSpec& spec, const KernelDesc& kernel) {
  Activity a;
  if (kernel.tiles <= 0) return a;
  const int sms = wave_width(spec, kernel, spec.sm_count);
  const int64_t tiles_per_wave = std::min<int64_t>(kernel.tiles, sms);
  const int active = static_cast<int>(tiles_per_wave);
  const double length = wave_time(spec, kernel, active).seconds();
  if (!(length > 0.0)) return a;
  const double share = static_cast<double>(active) / spec.sm_count;
  const double busy = std::min(1.0, tile_cost(spec, kernel, active).compute.seconds() / length) * share;
  a = arithmetic_activity(spec.power, kernel, busy);
  a.hbm = std::min(1.0, active * kernel.bytes_per_tile / length / spec.hbm_bandwidth.bytes_per_s());
  return with_unshared(a);
}

double rest_clock(const GpuSpec& spec, const KernelDesc& kernel) {
  if (!spec.power.enabled() || !spec.power.instant_limit()) return 1.0;
  return instant_clock(spec.power, rest_activity(spec, kernel));
}

}  // namespace gcsim::models::gpu
