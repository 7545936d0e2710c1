// Memory-bound kernels of many small CTAs beside SMs that communication
// kernels hold (issue 16).
//
// PyTorch's elementwise, norm and reduction kernels launch a CTA per few KiB
// (or a grid-stride loop), several resident per SM: the cost model's tiles
// (memory_kernel: one per 64 KiB, at most one per SM) stand for the work's
// share per SM, not for CTAs that each need an SM of their own. So when an
// NCCL kernel holds SMs as such a kernel starts, its work spreads over the
// SMs left in one wave (the real CTAs share them), instead of leaving tiles
// for a second wave; what it loses is bandwidth:
//  - the SMs left draw less of the HBM stack (spread_hbm_bandwidth): one SM's
//    streaming loads reach kSpreadBytesPerSmCycle per SM clock, and S SMs
//    saturate the stack along a smooth knee;
//  - NCCL's own HBM traffic takes its share (interference.h).
// Measured on an H100 with a spinner kernel holding k SMs
// (calibration/measurements/h100-x2/memkern_2026-11-27, fit in
// calibration/fit/memkern_2026-11-27.md): add / mul / copy of 16-512 MiB on
// S of 132 SMs take 1.00x at 108-124 SMs, 1.02-1.08x at 66, 1.3-1.4x at 33,
// 3.8-4.7x at 8 of their time on all 132 (gcsim: 1.01, 1.04, 1.28, 4.2x).
#pragma once

#include <cstdint>

#include "models/gpu/gpu_spec.h"
#include "models/gpu/kernel.h"
#include "sim/config/units.h"

namespace gcsim::models::gpu {

// HBM bytes one SM's streaming loads reach per SM clock cycle (Little's
// law: the bytes it keeps in flight over the loaded memory latency), and the
// sharpness p of the knee where S SMs saturate the stack. Fitted together on
// the H100 (calibration/fit/memkern_fit.py: add, mul, copy of 16/64/256
// MiB with 0-124 of the 132 SMs held): 41.5 B a cycle, 82 GB/s per SM at
// 1.98 GHz, p 3.0; fit mean |error| 2.1% (max 6.0%), held out (512 MiB,
// the other held counts: 150 points) 2.0% (max 9.4%). Physical ranges
// (test_memory_kernel_spread.cpp): 16-128 B a cycle (an SM's L1 takes at
// most 128 B a cycle), p in [1, 8].
inline constexpr double kSpreadBytesPerSmCycle = 41.5;
inline constexpr double kSpreadKnee = 3.0;

// A kernel whose work spreads over the SMs it gets: every memory-bound
// kernel of the cost model (memory_kernel), not the tensor or vector kernels
// (GEMMs, attention), whose CTAs each own an SM.
bool spreads(const KernelDesc& k);

// The same kernel's whole work (flops, bytes, special-function operations,
// unhidden row cycles) split evenly over `tiles` tiles instead of k.tiles.
// Throws std::invalid_argument unless tiles >= 1.
KernelDesc spread_over(const KernelDesc& k, int64_t tiles);

// Whether a kernel's tiles draw HBM along the spread curve
// (spread_bandwidth_per_sm): a spreading kernel with more than one 64 KiB
// tile of work per SM, i.e. one whose CTAs fill every SM it runs on (the
// spinner measurement: kernels confined to S SMs). A grid smaller than
// the SMs (fewer than 132 tiles of at most 64 KiB) keeps the plain per-SM
// share with the fitted sm_bandwidth_headroom (hbm.h; calibrate --fit
// fits it on such kernels).
bool fills_its_sms(const KernelDesc& k);

// Tiles a spreading kernel takes when it starts while `sms_denied` SMs are
// held by communication kernels (held or owed to them):
// min(k.tiles, max(1, its SM cap - sms_denied)); k.tiles for a kernel that
// does not spread or with no SM denied.
int64_t spread_tiles(const GpuSpec& spec, const KernelDesc& k, int sms_denied);

// The HBM bandwidth S = `sms` SMs of a spreading kernel draw alone:
//   D(S) = B q(S) / q(N),  q(S) = ((S h / N)^-p + 1)^(-1/p),
// B the achieved bandwidth, N the SMs, h = kSpreadBytesPerSmCycle x clock x
// N / B (one SM's reach over its even share; 3.60 on the H100, 2.51 on the
// H200), p = kSpreadKnee; D(N) = B. A spec with no SM clock (hand-built
// test GPUs) keeps the plain share's hard knee, B min(1, S x
// sm_bandwidth_headroom / N) (hbm.h). Throws std::invalid_argument unless
// sms >= 1.
sim::Bandwidth spread_hbm_bandwidth(const GpuSpec& spec, int sms);

// Bandwidth one SM of a spreading kernel gets while `active_sms` SMs run
// tiles and `available_fraction` (in (0, 1]) of B is left to them:
//   min(D(active_sms), fraction x B) / active_sms.
sim::Bandwidth spread_bandwidth_per_sm(const GpuSpec& spec, int active_sms,
                                       double available_fraction);

}  // namespace gcsim::models::gpu
