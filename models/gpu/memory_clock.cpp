#include "models/gpu/memory_clock.h"

#include <algorithm>
#include <stdexcept>

#include "models/gpu/kernel_cost_model.h"

namespace gcsim::models::gpu {

double memory_issue_fraction(const GpuSpec& spec, const KernelDesc& kernel) {
  const double share = spec.power.memory_issue_share;
  if (!(share > 0.0) || !(kernel.bytes_per_tile > 0.0)) return 0.0;
  // Every SM streaming: the HBM time per SM of the kernel at full occupancy.
  const TileCost c = tile_cost(spec, kernel, spec.sm_count);
  return std::min(1.0, share + c.compute.seconds() / c.memory.seconds());
}

sim::Duration memory_issue_wave(const GpuSpec& spec, const KernelDesc& kernel, double clock) {
  if (!(clock > 0.0 && clock <= 1.0)) throw std::invalid_argument("a clock fraction lies in (0, 1]");
  const double q = memory_issue_fraction(spec, kernel);
  if (!(clock < q)) return sim::Duration::zero();
  const sim::Duration hbm = tile_cost(spec, kernel, spec.sm_count).memory;
  return sim::Duration::from_seconds(hbm.seconds() * q / clock) + spec.efficiency.tile_overhead +
         kernel.extra_wave_overhead;
}

}  // namespace gcsim::models::gpu
