// A kernel on the whiteboard: its roofline time from the kernel description
// (FLOPs at the unit's peak x efficiency, or HBM bytes at the streaming
// rate, whichever is longer) and its waves over the SMs, which is where a
// simulated kernel most often departs from the roofline (the last partial
// wave costs a full tile, Hopper GEMM tiles 128x256).
#pragma once

#include "models/gpu/gpu_spec.h"
#include "models/gpu/kernel.h"
#include "workloads/estimate/estimate_line.h"

namespace gcsim::workloads::estimate {

struct KernelEstimate {
  Line roofline;  // seconds, launch latency and per-wave overheads left out
  Line waves;     // fraction of the SM-wave slots doing work: tiles / (waves x width)
  double wave_count = 0;
  bool memory_bound = false;
};

KernelEstimate estimate_kernel(const models::gpu::GpuSpec& gpu, const models::gpu::KernelDesc& k);

}  // namespace gcsim::workloads::estimate
