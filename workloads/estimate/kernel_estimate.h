// A kernel on the whiteboard: its roofline time from the kernel description
// (FLOPs at the unit's peak x efficiency, or HBM bytes at the streaming
// rate, whichever is longer) and its waves over the SMs, which is where a
// simulated kernel most often departs from the roofline (the last partial
// wave costs a full tile, Hopper GEMM tiles 128x256).
#pragma once

#include <vector>

#include "models/gpu/gpu_spec.h"
#include "models/gpu/kernel.h"
#include "workloads/estimate/estimate_line.h"

namespace gcsim::workloads::estimate {

struct KernelEstimate {
  Line roofline;  // seconds, launch latency and per-wave overheads left out
  Line waves;     // fraction of the SM-wave slots doing work: tiles / (waves x width)
  Line overheads;  // launch latency + setup + waves x (tile overhead + extra per-wave overhead)
  double wave_count = 0;
  bool memory_bound = false;
  // The kernel's CTAs' latency floor (KernelDesc::latency_floor_cycles_per_tile,
  // once a wave) is above both the arithmetic and the bytes.
  bool latency_bound = false;
};

KernelEstimate estimate_kernel(const models::gpu::GpuSpec& gpu, const models::gpu::KernelDesc& k);

// A list of kernels (one rank's step) summed by class: roofline time and
// the GPU model's isolated time (launch latency, setup, waves with their
// overheads, the last partial wave at full cost), which is what a
// simulated stream of kernels adds up to when nothing overlaps.
struct KernelClassTime {
  int64_t kernels = 0;
  double roofline_s = 0;
  double isolated_s = 0;
  double launch_s = 0;       // launch latency and setup, included in isolated_s
  double flops = 0;
  double bytes = 0;
};
struct KernelMix {
  KernelClassTime gemm;       // tensor-core GEMMs (unit tensor, not attention)
  KernelClassTime attention;  // flash attention kernels
  KernelClassTime memory;     // HBM- or CUDA-core-bound: norms, activations, copies, optimizer
  double isolated_s() const { return gemm.isolated_s + attention.isolated_s + memory.isolated_s; }
  double roofline_s() const { return gemm.roofline_s + attention.roofline_s + memory.roofline_s; }
};
// `attention[i]` says whether kernels[i] is an attention kernel.
KernelMix kernel_mix(const models::gpu::GpuSpec& gpu, const std::vector<models::gpu::KernelDesc>& kernels,
                     const std::vector<bool>& attention);

}  // namespace gcsim::workloads::estimate
