#include "models/gpu/gpu_throttle.h"

#include <stdexcept>
#include <string>

namespace gcsim::models::gpu {

namespace {
void check_factor(double f, const char* what) {
  if (!(f > 0.0 && f <= 1.0)) {
    throw std::invalid_argument(std::string(what) + " must lie in (0, 1], got " +
                                std::to_string(f));
  }
}
}  // namespace

GpuSpec throttled(const GpuSpec& spec, const Throttle& t) {
  check_factor(t.compute_speed, "compute speed");
  check_factor(t.memory_speed, "memory speed");
  if (!t.slows()) return spec;  // bit for bit the same GPU
  GpuSpec s = spec;
  const double c = t.compute_speed;
  s.sm_clock_ghz *= c;
  for (auto& peak : s.tensor_peak) peak = peak.scaled(c);
  s.vector_fp32_peak = s.vector_fp32_peak.scaled(c);
  // Fixed per-wave and per-kernel SM work takes 1/c as long at c x clock.
  GpuEfficiency& e = s.efficiency;
  e.tile_overhead = e.tile_overhead.scaled(1.0 / c);
  e.gemm_setup = e.gemm_setup.scaled(1.0 / c);
  e.gemm_setup_per_cta = e.gemm_setup_per_cta.scaled(1.0 / c);
  e.attention_tile_overhead = e.attention_tile_overhead.scaled(1.0 / c);
  e.attention_backward_tile_overhead = e.attention_backward_tile_overhead.scaled(1.0 / c);
  for (auto* fam : {&e.cudnn_attention, &e.flash3_attention}) {
    fam->forward.wave_overhead = fam->forward.wave_overhead.scaled(1.0 / c);
    fam->backward.wave_overhead = fam->backward.wave_overhead.scaled(1.0 / c);
    fam->forward.kernel_overhead = fam->forward.kernel_overhead.scaled(1.0 / c);
    fam->backward.kernel_overhead = fam->backward.kernel_overhead.scaled(1.0 / c);
    fam->decode_wave_overhead = fam->decode_wave_overhead.scaled(1.0 / c);
    fam->decode_split_overhead = fam->decode_split_overhead.scaled(1.0 / c);
    fam->decode_kernel_overhead = fam->decode_kernel_overhead.scaled(1.0 / c);
    fam->decode_split_per_doubling = fam->decode_split_per_doubling.scaled(1.0 / c);
    fam->decode_block_latency = fam->decode_block_latency.scaled(1.0 / c);
  }
  s.hbm_bandwidth = s.hbm_bandwidth.scaled(t.memory_speed);
  return s;
}

}  // namespace gcsim::models::gpu
