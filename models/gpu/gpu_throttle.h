// A throttled GPU: the spec of a GPU that runs slower than its datasheet
// without failing (a straggler). Power or thermal capping lowers the SM
// clock, so every rate the SMs produce scales with it: tensor-core and
// CUDA-core peaks (peak = SMs x FLOP/clock x clock) and the per-wave fixed
// costs, which are instructions the SMs execute (prologue, epilogue,
// GEMM setup, flash-attention's per-block work). HBM sits in its own clock
// domain (nvidia-smi shows the memory clock unchanged under SW power cap
// and HW thermal slowdown), so its bandwidth scales only by its own factor,
// for a GPU whose memory clock is locked low or whose HBM is degraded.
// Kernel launch latency (host and front end) and NVLink are left as they
// are; a degraded link is a network fault (network.faults).
#pragma once

#include "models/gpu/gpu_spec.h"

namespace gcsim::models::gpu {

struct Throttle {
  double compute_speed = 1.0;  // SM clock / nominal, in (0, 1]
  double memory_speed = 1.0;   // HBM bandwidth / nominal, in (0, 1]
  bool slows() const { return compute_speed < 1.0 || memory_speed < 1.0; }
};

// `spec` with its SM clock and HBM bandwidth scaled by `t`. Throws
// std::invalid_argument for a factor outside (0, 1].
GpuSpec throttled(const GpuSpec& spec, const Throttle& t);

}  // namespace gcsim::models::gpu
