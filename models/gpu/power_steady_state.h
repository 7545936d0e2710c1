// The power model's steady states (power_model.h) for closed forms and for
// a step that starts on a GPU already running: back-to-back work of one
// kernel, and the clock and throughput it settles at under the cap.
#pragma once

#include "models/gpu/gpu_spec.h"
#include "models/gpu/kernel.h"
#include "models/gpu/power_model.h"

namespace gcsim::models::gpu {

struct SteadyState {
  double clock = 1.0;   // SM clock over f_max
  double speed = 1.0;   // arithmetic throughput over that at f_max
  Activity activity;    // of the kernel run back to back at that clock
  double power_w = 0.0; // board power
};

// `kernel` back to back on a `spec` GPU (spec.power enabled) once the
// averaged power has settled: the clock is a fixed point, as the kernel's
// arithmetic share of its time changes with the clock. The activity is the
// Gpu runtime's (power_loop.h), launch gaps included: the runtime's loop
// of that kernel settles at this clock.
SteadyState steady_state(const GpuSpec& spec, const KernelDesc& kernel);

// The reference GEMM the sustained clocks were measured with
// (calibration/microbench/sustained_gemm.py): bf16 8192^3.
KernelDesc reference_gemm(const GpuSpec& spec);

// The power model's sustained tensor fraction: the reference GEMM's
// steady-state speed (what sustained_tensor_fraction carries as a constant).
double model_sustained_fraction(const GpuSpec& spec);

}  // namespace gcsim::models::gpu
