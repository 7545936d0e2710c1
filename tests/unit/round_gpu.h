// A GPU of round figures for hand-computed kernel times: 100 SMs at 2 GHz,
// 1000 TF/s bf16 tensor, 50 TF/s fp32 vector, 3000 GB/s HBM at efficiency
// 0.9 (2.7e12 B/s achieved), 80 GB, launch 2 us, tile overhead 0. Tests add
// the efficiencies of the kernel family they check.
#pragma once

#include <cstdint>

#include "models/gpu/gpu_spec.h"

namespace gcsim::test {

inline models::gpu::GpuSpec round_gpu_100sm() {
  namespace gpu = models::gpu;
  gpu::GpuSpec s;
  s.name = "round";
  s.sm_count = 100;
  s.sm_clock_ghz = 2.0;
  s.tensor_peak[static_cast<size_t>(gpu::Dtype::bf16)] = sim::FlopRate::tflops(1000);
  s.vector_fp32_peak = sim::FlopRate::tflops(50);
  s.hbm_bandwidth = sim::Bandwidth::gb_per_s(3000);
  s.hbm_capacity = sim::Bytes(80'000'000'000);
  s.kernel_launch_latency = sim::us(int64_t{2});
  s.efficiency.hbm = 0.9;
  s.efficiency.tile_overhead = sim::Duration::zero();
  return s;
}

}  // namespace gcsim::test
