#include "calibration/fit/power_activity.h"

#include "models/gpu/power_loop.h"

namespace gcsim::calibration {

nlohmann::json power_activity_table(const models::gpu::GpuSpec& spec) {
  namespace gpu = models::gpu;
  nlohmann::json clocks = nlohmann::json::array();
  for (int i = 50; i <= 100; ++i) clocks.push_back(i / 100.0);
  nlohmann::json kernels = nlohmann::json::object();
  for (const gpu::NamedKernel& k : gpu::power_bench_kernels(spec)) {
    nlohmann::json d = nlohmann::json::array(), gap = d, t = d, v = d, h = d, u = d;
    for (const auto& r : clocks) {
      const gpu::KernelActivity a = gpu::pinned_kernel_activity(spec, k.kernel, r.get<double>());
      d.push_back(a.duration_s);
      gap.push_back(a.launch_gap_s);
      t.push_back(a.activity.tensor);
      v.push_back(a.activity.vector);
      h.push_back(a.activity.hbm);
      u.push_back(a.activity.hbm_unshared);
    }
    kernels[k.name] = {{"duration_s", d}, {"launch_gap_s", gap}, {"tensor", t}, {"vector", v}, {"hbm", h},
                       {"hbm_unshared", u}};
  }
  return {{"gpu", spec.name},
          {"sm_clock_mhz", spec.sm_clock_ghz * 1e3},
          {"hbm_bandwidth_bytes_per_s", spec.hbm_bandwidth.bytes_per_s()},
          {"clock_bound_share", spec.power.clock_bound_share},
          {"clocks", clocks},
          {"kernels", kernels}};
}

}  // namespace gcsim::calibration
