// How a memory-bound kernel's time follows the SM clock (issue 16: layer
// norm and GELU run 8-15% slower at a power-capped clock, measured on an
// H100: calibration/measurements/h100-sxm/power_clock_mix_2026-11-26/).
//
// An SM streams bytes in flight over their latency (Little's law), and a
// part of that latency, with the issue of every load and store and the
// tile's own arithmetic, runs on the SM clock. At f_max a memory-bound
// tile's SM side takes q of its HBM time,
//   q = min(1, memory_issue_share + arithmetic time / HBM time),
// both with every SM streaming (the HBM time per SM is the kernel's own, not
// the share left beside other work); at a clock fraction r below q the SM
// side bounds it: the wave takes q x HBM time / r. At r >= q the HBM bounds
// it as before, so rested results do not move.
#pragma once

#include "models/gpu/gpu_spec.h"
#include "models/gpu/kernel.h"
#include "sim/engine/time.h"

namespace gcsim::models::gpu {

// q above for `kernel` on `spec` (0 when spec.power.memory_issue_share is 0
// or the kernel moves no HBM bytes).
double memory_issue_fraction(const GpuSpec& spec, const KernelDesc& kernel);

// One wave of memory-bound `kernel` at clock fraction `clock` when its SM
// side bounds it: q x its HBM time with every SM streaming / clock, plus the
// per-wave overheads; zero when the clock is at or above q.
sim::Duration memory_issue_wave(const GpuSpec& spec, const KernelDesc& kernel, double clock);

}  // namespace gcsim::models::gpu
