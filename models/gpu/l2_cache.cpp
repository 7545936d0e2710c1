#include "models/gpu/l2_cache.h"

#include <algorithm>
#include <stdexcept>

#include "models/gpu/hbm.h"

namespace gcsim::models::gpu {

bool l2_holds(const GpuSpec& spec, double bytes) {
  return spec.l2_bandwidth.has_value() && spec.l2_size.count() > 0 &&
         bytes <= static_cast<double>(spec.l2_size.count());
}

sim::Bandwidth l2_bandwidth_per_sm(const GpuSpec& spec, int active_sms, double pull_fraction) {
  if (!spec.l2_bandwidth) throw std::invalid_argument(spec.name + " has no measured L2 bandwidth (l2_bandwidth)");
  if (active_sms < 1) throw std::invalid_argument("L2 bandwidth per SM: at least one SM");
  const double even = spec.l2_bandwidth->bytes_per_s() / static_cast<double>(active_sms);
  const double reach = single_sm_hbm_reach(spec).bytes_per_s() * pull_fraction;
  return sim::Bandwidth::bytes_per_s(std::min(even, reach));
}

}  // namespace gcsim::models::gpu
