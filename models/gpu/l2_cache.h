// The L2 cache as a pass over freshly written tensors sees it. Hopper's L2
// (50-60 MiB) keeps the lines a kernel writes: the next kernel reading them
// hits L2 as long as everything the pass reads and writes still fits, and
// then streams at L2's rate, not HBM's. A decode step's activations (a few
// MiB at batch 256) and a short prefill's live there; a training step's
// (tens of MiB a tensor) and its weights, gradients and optimizer state do
// not. Measured on one H200 (gpu_spec.h l2_bandwidth): a vectorized add over
// 4-16 MiB inputs a fill just wrote runs at ~5.4 TB/s where the same inputs
// from HBM run at ~4.3.
#pragma once

#include "models/gpu/gpu_spec.h"
#include "sim/config/units.h"

namespace gcsim::models::gpu {

// Whether `bytes` (all a pass reads and writes) stay resident in L2: the GPU
// has a measured L2 bandwidth, a known L2 size, and the bytes fit in it.
bool l2_holds(const GpuSpec& spec, double bytes);

// Bandwidth one SM gets from L2 while `active_sms` (>= 1) SMs stream from
// it: min(l2_bandwidth / active_sms, pull_fraction x one SM's reach). The
// reach is hbm.h's single_sm_hbm_reach, not a rate of L2's own: it was
// fitted on serving steps' few-row reductions (the norms' mean, the
// sampler's argmax), which read activations and logits the kernels before
// them had just written, so it already is what one SM pulls from L2 (those
// reductions run 2.3x slower after an L2 flush: calibration/measurements/
// h200-x1/calibration_set_2026-11-28 row_reduce.json). `pull_fraction` in
// (0, 1]: KernelDesc::sm_pull_fraction. Throws when the spec has no L2 rate.
sim::Bandwidth l2_bandwidth_per_sm(const GpuSpec& spec, int active_sms, double pull_fraction);

}  // namespace gcsim::models::gpu
