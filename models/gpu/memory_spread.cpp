#include "models/gpu/memory_spread.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "models/gpu/hbm.h"
#include "models/gpu/kernel_cost_model.h"

namespace gcsim::models::gpu {

bool spreads(const KernelDesc& k) { return k.unit == ExecUnit::memory && !k.persistent; }

bool fills_its_sms(const KernelDesc& k) {
  return spreads(k) && k.bytes_per_tile > static_cast<double>(kMemoryBytesPerTile);
}

KernelDesc spread_over(const KernelDesc& k, int64_t tiles) {
  if (tiles < 1) throw std::invalid_argument("kernel '" + k.name + "' spread over no tile");
  KernelDesc out = k;
  if (tiles == k.tiles) return out;
  const double scale = static_cast<double>(k.tiles) / static_cast<double>(tiles);
  out.tiles = tiles;
  out.flops_per_tile = k.flops_per_tile * scale;
  out.bytes_per_tile = k.bytes_per_tile * scale;
  out.sfu_ops_per_tile = k.sfu_ops_per_tile * scale;
  out.latency_cycles_per_tile = k.latency_cycles_per_tile * scale;
  return out;
}

int64_t spread_tiles(const GpuSpec& spec, const KernelDesc& k, int sms_denied) {
  if (!spreads(k) || sms_denied <= 0) return k.tiles;
  const int cap = k.max_sms > 0 ? std::min(k.max_sms, spec.sm_count) : spec.sm_count;
  return std::min<int64_t>(k.tiles, std::max(1, cap - sms_denied));
}

sim::Bandwidth spread_hbm_bandwidth(const GpuSpec& spec, int sms) {
  if (sms < 1 || spec.sm_count < 1) {
    throw std::invalid_argument("spread HBM bandwidth needs at least one SM");
  }
  const double b = achieved_hbm_bandwidth(spec).bytes_per_s();
  const double n = spec.sm_count;
  const int s = std::min(sms, spec.sm_count);
  if (!(spec.sm_clock_ghz > 0.0)) {
    // No clock to count the reach in: the plain share's hard knee (hbm.h).
    return sim::Bandwidth::bytes_per_s(b * std::min(1.0, s * spec.sm_bandwidth_headroom / n));
  }
  const double h = kSpreadBytesPerSmCycle * spec.sm_clock_ghz * 1e9 * n / b;
  // q(S): the share of B that S SMs reach, before normalising to q(N).
  const auto q = [h, n](double s) {
    return std::pow(std::pow(s * h / n, -kSpreadKnee) + 1.0, -1.0 / kSpreadKnee);
  };
  return sim::Bandwidth::bytes_per_s(b * q(s) / q(n));
}

sim::Bandwidth spread_bandwidth_per_sm(const GpuSpec& spec, int active_sms,
                                       double available_fraction) {
  if (!(available_fraction > 0.0 && available_fraction <= 1.0)) {
    throw std::invalid_argument("the HBM fraction left to kernels must be in (0, 1]");
  }
  const double b = achieved_hbm_bandwidth(spec).bytes_per_s();
  const double drawn = spread_hbm_bandwidth(spec, active_sms).bytes_per_s();
  return sim::Bandwidth::bytes_per_s(std::min(drawn, available_fraction * b) / active_sms);
}

}  // namespace gcsim::models::gpu
