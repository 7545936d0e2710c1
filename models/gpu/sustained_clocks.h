// A GPU at its sustained clocks: what a power-capped GPU delivers once
// back-to-back tensor-core work has pushed it to its power limit.
//
// Measured on an H100 SXM (700 W; calibration/measurements/h100-sxm/
// sustained_gemm_2026-11-22.json, calibration/microbench/sustained_gemm.py):
// within the first second of back-to-back GEMMs the SM clock falls from
// 1980 MHz to ~1300 MHz (NVML reason "SW power cap") and throughput settles
// at 0.84-0.85 of the rested rate, flat for the next 30 s. Memory-bound
// kernels and attention-free phases keep the full clock (same file, idle and
// memory sections), so only tensor-core work is derated; the datasheet peaks
// stay as they are, so MFU keeps its usual denominator.
#pragma once

#include "models/gpu/gpu_spec.h"

namespace gcsim::models::gpu {

// `spec` with its tensor-core efficiencies (GEMM per dtype, flash attention
// forward and backward) scaled by spec.sustained_tensor_fraction.
GpuSpec at_sustained_clocks(const GpuSpec& spec);

}  // namespace gcsim::models::gpu
