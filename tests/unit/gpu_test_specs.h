// GPU specs built by hand from datasheets for the GPU-model unit tests, so
// that their expected figures do not move when a preset file is retuned.
#pragma once

#include "models/gpu/gpu_spec.h"

namespace gcsim::test {

// NVIDIA H100 SXM datasheet values (REFERENCE.md): 132 SMs, dense tensor
// peaks, 3350 GB/s HBM3, 80 GB; default GpuEfficiency.
inline models::gpu::GpuSpec h100_datasheet() {
  using models::gpu::Dtype;
  models::gpu::GpuSpec s;
  s.name = "h100-sxm";
  s.source = "NVIDIA H100 datasheet (REFERENCE.md)";
  s.sm_count = 132;
  s.tensor_peak[static_cast<size_t>(Dtype::tf32)] = sim::FlopRate::tflops(494.5);
  s.tensor_peak[static_cast<size_t>(Dtype::bf16)] = sim::FlopRate::tflops(989);
  s.tensor_peak[static_cast<size_t>(Dtype::fp16)] = sim::FlopRate::tflops(989);
  s.tensor_peak[static_cast<size_t>(Dtype::fp8)] = sim::FlopRate::tflops(1979);
  s.tensor_peak[static_cast<size_t>(Dtype::int8)] = sim::FlopRate::tflops(1979);
  s.vector_fp32_peak = sim::FlopRate::tflops(67);
  s.hbm_bandwidth = sim::Bandwidth::gb_per_s(3350);
  s.hbm_capacity = sim::Bytes(80'000'000'000);
  s.kernel_launch_latency = sim::us(int64_t{2});
  s.sm_bandwidth_headroom = 2.0;
  return s;
}

}  // namespace gcsim::test
