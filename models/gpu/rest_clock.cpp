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

Activity wave_activity(const GpuSpec& spec, const KernelDesc& kernel, int sms, int active, double length_s,
                       double stretch) {
  if (!(length_s > 0.0)) return {};
  const double share = static_cast<double>(sms) / spec.sm_count;
  const double busy = std::min(1.0, tile_cost(spec, kernel, active).compute.seconds() * stretch / length_s) * share;
  Activity a = arithmetic_activity(spec.power, kernel, busy);
  a.hbm = std::min(1.0, sms * kernel.hbm_bytes_per_tile() / length_s / spec.hbm_bandwidth.bytes_per_s());
  return a;
}

Activity rest_activity(const GpuSpec& spec, const KernelDesc& kernel) {
  if (kernel.tiles <= 0) return {};
  const int sms = wave_width(spec, kernel, spec.sm_count);
  const int active = static_cast<int>(std::min<int64_t>(kernel.tiles, sms));
  const double length = wave_time(spec, kernel, active).seconds();
  if (!(length > 0.0)) return {};
  return with_unshared(wave_activity(spec, kernel, active, active, length, 1.0));
}

double rest_clock(const GpuSpec& spec, const KernelDesc& kernel) {
  if (!spec.power.enabled() || !spec.power.instant_limit()) return 1.0;
  return instant_clock(spec.power, rest_activity(spec, kernel));
}

}  // namespace gcsim::models::gpu
