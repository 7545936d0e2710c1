// What an NCCL collective running on a GPU costs the kernels beside it, and
// what they cost it: the memory-system interference of overlapped
// communication (issue 16).
//
// While a collective moves data on a GPU it (a) holds its channels' SMs
// (Gpu::hold_sms), (b) moves HBM bytes at a rate r_c its algorithm fixes
// (collective_hbm.h: bytes read and written per byte of payload, over its
// planned time), and (c) shares the memory system with the kernels beside it.
// With B the achieved HBM bandwidth and u = r_c / B:
//  - HBM is shared max-min fairly per SM (collective_hbm_share): each side
//    gets its SMs' share of B and what the other leaves (a GEMM leaves the
//    collective all of r, a streaming kernel leaves it c/(a + c) of B; 2x
//    H100, measurements/h100-x2/interference_2026-11-26: an add loses 132/108
//    beside an all-reduce, which runs 2.3-2.9x slower); waves get the rest;
//  - a kernel's arithmetic stretches by 1 + kernel_sensitivity x u: a GEMM's
//    operand loads queue behind the collective's traffic in L2 and DRAM
//    (and, at rested clocks, the board's extra power lowers the SM clock:
//    measured 1800-1920 MHz against 1980 alone on 2x H200);
//  - the collective stretches by collective_stretch: r over its HBM share,
//    times 1 + collective_sensitivity x the fraction of the GPU's SMs
//    running compute tiles (NCCL's channels are latency-bound copy loops:
//    Little's law makes their rate fall as the loaded memory latency rises).
// The two sensitivities are fitted (calibration/fit/interference_compare.py
// --fit on the four "steady" cases of
// calibration/measurements/h200-x2/gemm_beside_nccl_2026-11-22.json) and
// bounded to [0, 1]: 1 would mean a full collective load doubles a GEMM's
// arithmetic time, or a GPU full of compute tiles doubles the memory latency
// a channel sees (loaded DRAM latency on Hopper is at most ~2x unloaded).
#pragma once

namespace gcsim::models::gpu {

struct InterferenceParams {
  // Off for a Gpu or ClusterModel built in code; a scenario turns it on
  // unless network.interference.enabled is false.
  bool enabled = false;
  // Per unit of collective HBM utilisation u, the fraction a compute tile's
  // arithmetic time grows by. Fitted 0.5 on 2x H200 (range [0, 1]).
  double kernel_sensitivity = 0.5;
  // Per unit of busy-SM fraction beside it, the fraction a collective's
  // data movement grows by. Fitted 0.2 on 2x H200 with CTAs dispatched in
  // launch order (0.3 before: the wait for the GEMM's last wave was then
  // charged to the data movement); range [0, 1].
  double collective_sensitivity = 0.2;
  // kernel_sensitivity's counterpart for fused attention kernels
  // (KernelDesc::fused_attention), whose operands stay on chip. Fitted 0.1
  // on 2x H100 (calibration/fit/interference_compare.py --fit-attention):
  // cuDNN SDPA beside 1 GiB collectives ran 1.20-1.22x slower, about its
  // SMs' share (132/108 = 1.22); range [0, 1]
  // (calibration/measurements/h100-x2/attention_beside_nccl_2026-11-26/run2).
  double attention_sensitivity = 0.1;
  // kernel_sensitivity's counterpart for memory-bound kernels
  // (ExecUnit::memory: elementwise, norms, copies) whose tiles the cost model
  // times by their issue rate (PyTorch's non-vectorised passes): measured
  // beside DDP's all-reduces in the DP4 step on 4x H100
  // (calibration/measurements/h100-x4/ddp_bucket_timeline_2026-11-26, the
  // same kernels under no_sync as reference) they slow by about their SMs'
  // share only (silu_backward 1.31x, the SwiGLU cat 1.12x, fp32 muls
  // 1.23-1.24x; alone in the harness beside a 344 MiB all-reduce the cat
  // 1.22x, interference_2026-11-27/call3), where the GEMMs' 0.5 stretched
  // their arithmetic 1.2-1.3x on top. Range [0, 1].
  double memory_sensitivity = 0.0;
  // Fraction of NCCL's staging traffic (its FIFO written and read back, two
  // HBM accesses per byte on the wire) that reaches HBM rather than staying
  // in L2 (models/cluster/collective_hbm.h); range [0, 1], 1 the algorithm's
  // full count.
  double staging_in_hbm = 1.0;
};

// The physical range of both sensitivities (header comment).
inline constexpr double kMinSensitivity = 0.0;
inline constexpr double kMaxSensitivity = 1.0;

// HBM bandwidth (bytes/s) a collective streaming `collective_rate` on
// `collective_sms` SMs gets beside kernels running on `kernel_sms` SMs that
// would pull `kernel_demand` bytes/s at their own pace, with `achieved` the
// stack's bandwidth B: HBM is shared max-min fairly per SM (the memory
// system serves the SMs' outstanding requests alike), so each side gets at
// least its SMs' share c/(a + c) x B, and whatever the other leaves:
//   min(r, max(c x B / (a + c), B - D)).
// A streaming kernel on 108 SMs beside 24 NCCL channels leaves the
// collective 24/132 of B (measured on 2x H100: the all-reduce 2.7x slower,
// the add 132/108 = 1.22x); a GEMM leaves it all it needs.
double collective_hbm_share(double achieved, double kernel_sms, double kernel_demand,
                            int collective_sms, double collective_rate);

// Fraction of B left to the kernel waves: 1 - collective_hbm_share / B.
double kernel_hbm_fraction(double achieved, double kernel_sms, double kernel_demand,
                           int collective_sms, double collective_rate);

// 1 + sensitivity x min(1, collective_rate / achieved): the stretch of a
// compute tile's arithmetic beside collectives streaming that rate.
double kernel_compute_stretch(double achieved, double collective_rate, double sensitivity);

// How much longer a collective's data movement takes on one GPU where, on
// average over its run, `kernel_sms` SMs ran compute tiles demanding
// `kernel_demand` bytes/s and `busy_fraction` of the SMs were busy:
//   max(1, r / collective_hbm_share) x (1 + sensitivity x busy_fraction).
double collective_stretch(double achieved, double kernel_sms, double kernel_demand,
                          int collective_sms, double collective_rate, double busy_fraction,
                          double sensitivity);

}  // namespace gcsim::models::gpu
