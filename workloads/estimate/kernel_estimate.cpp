#include "workloads/estimate/kernel_estimate.h"

#include <algorithm>

#include "models/gpu/kernel_cost_model.h"

namespace gcsim::workloads::estimate {

namespace gpu = ::gcsim::models::gpu;

KernelEstimate estimate_kernel(const gpu::GpuSpec& g, const gpu::KernelDesc& k) {
  KernelEstimate e;
  double peak = 0;
  switch (k.unit) {
    case gpu::ExecUnit::tensor: peak = g.tensor_peak_for(k.dtype).flops_per_s(); break;
    case gpu::ExecUnit::vector: peak = g.vector_fp32_peak.flops_per_s(); break;
    case gpu::ExecUnit::memory: peak = 0; break;
  }
  const double rate = peak * k.efficiency;
  // An L2-resident pass (l2_cache.h) streams at L2's rate, not HBM's.
  const bool from_l2 = k.l2_resident && g.l2_bandwidth.has_value();
  const double stream = (from_l2 ? g.l2_bandwidth->bytes_per_s() : g.hbm_bandwidth.bytes_per_s() * g.efficiency.hbm) *
                        k.bandwidth_efficiency;
  // Memory kernels that compute: the special-function units beside the
  // lanes, and the rows' unhidden cycles (kernel_cost_model.h).
  const double hz = g.sm_clock_ghz * 1e9 * g.sm_count;
  const double sfu = k.sfu_ops_per_tile * static_cast<double>(k.tiles) /
                     (g.sfu_per_clock_per_sm * hz > 0 ? g.sfu_per_clock_per_sm * hz : 1.0);
  const double rows = k.latency_cycles_per_tile * static_cast<double>(k.tiles) / (hz > 0 ? hz : 1.0);
  const double tc = std::max(rate > 0 ? k.total_flops() / rate : 0.0, sfu) + rows;
  const double tm = stream > 0 ? k.total_bytes() / stream : 0.0;
  e.memory_bound = tm > tc;
  // A CTA that walks a chain of dependent loads takes at least its floor in
  // SM cycles, once for each wave of the grid (a split-KV decode's few CTAs).
  const int width = gpu::wave_width(g, k, g.sm_count);
  e.wave_count = static_cast<double>(gpu::wave_count(g, k, g.sm_count));
  const double floor =
      k.latency_floor_cycles_per_tile > 0 && g.sm_clock_ghz > 0
          ? e.wave_count * k.latency_floor_cycles_per_tile / (g.sm_clock_ghz * 1e9)
          : 0.0;
  e.latency_bound = floor > std::max(tc, tm);
  e.roofline = make_line(k.name + " roofline", std::max({tc, tm, floor}), Unit::seconds,
                         std::string("max(FLOPs / (peak x eff), bytes / ") + (from_l2 ? "L2" : "HBM") + " rate) = max(" + num(k.total_flops()) + " / " +
                             num(rate) + ", " + num(k.total_bytes()) + " / " + num(stream) + ")" +
                             (sfu > 0 || rows > 0
                                  ? " with the arithmetic max(lanes, special functions " + num(sfu) +
                                        " s) + unhidden row cycles " + num(rows) + " s"
                                  : std::string()) +
                             (floor > 0 ? "; at least waves x a CTA's latency floor = " + num(e.wave_count) + " x " +
                                              num(floor / e.wave_count) + " s"
                                        : std::string()));
  const double slots = e.wave_count * std::max(1, width);
  e.waves = make_line(k.name + " wave efficiency", slots > 0 ? static_cast<double>(k.tiles) / slots : 1.0,
                      Unit::fraction,
                      "tiles / (waves x width) = " + num(static_cast<double>(k.tiles)) + " / (" + num(e.wave_count) +
                          " x " + num(width) + ")");
  const double per_wave = (g.efficiency.tile_overhead + k.extra_wave_overhead).seconds();
  const double fixed = (g.kernel_launch_latency + k.setup).seconds();
  e.overheads = make_line(k.name + " fixed overheads", fixed + e.wave_count * per_wave, Unit::seconds,
                          "launch + setup + waves x per-wave overhead = " + num(fixed) + " + " + num(e.wave_count) +
                              " x " + num(per_wave));
  return e;
}

KernelMix kernel_mix(const gpu::GpuSpec& g, const std::vector<gpu::KernelDesc>& kernels,
                     const std::vector<bool>& attention) {
  KernelMix mix;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const gpu::KernelDesc& k = kernels[i];
    KernelClassTime& c = i < attention.size() && attention[i] ? mix.attention
                         : k.unit == gpu::ExecUnit::tensor    ? mix.gemm
                                                              : mix.memory;
    ++c.kernels;
    c.roofline_s += estimate_kernel(g, k).roofline.value;
    c.isolated_s += gpu::isolated_time(g, k, g.sm_count).seconds();
    c.launch_s += (g.kernel_launch_latency + k.setup).seconds();
    c.flops += k.total_flops();
    c.bytes += k.total_bytes();
  }
  return mix;
}

}  // namespace gcsim::workloads::estimate
