// Board power of a GPU from what its SMs and HBM are doing, and the SM clock
// a power-capped GPU settles at (issue 16, "clocks from a power model").
//
//   P(a, f) = P_idle + (W_tensor a_tensor + W_vector a_vector) phi(f)
//             + W_mem (sigma a_hbm + (1 - sigma) a_hbm_unshared)
//   phi(f)  = speed(f) (V(f) / V(f_max))^2                (dynamic CMOS power)
//   V(f)    = V_min for f <= f_knee, rising linearly to V(f_max) above it
//
// phi is the arithmetic's work rate (speed, below) times the energy of one
// operation (proportional to V^2): a tile that waits less per cycle at a
// lower clock does more switching per cycle.
//
// a_* are time fractions of the whole GPU (0..1): the share of SM-time spent
// in tensor-core or CUDA-core arithmetic, and HBM traffic over peak
// bandwidth. W_mem is the whole path of that traffic (HBM stacks, PHYs, L2
// and the on-chip network) at full bandwidth; memory-bound loops keep the
// full SM clock (measured), so its share that follows the clock cannot be
// told apart and is taken as fixed. Only a share sigma
// (hbm_device_share) of W_mem is the DRAM stacks, their PHYs and memory
// controllers, paid for every byte; the rest is the on-chip path (L2
// slices, crossbar, the SMs' load/store pipes) that a copy keeps busy but
// an SM doing arithmetic already keeps busy with its own operand traffic
// (a GEMM tile streams its operands through L2 and shared memory far above
// HBM's rate, whether they come from HBM or hit in L2). So that part is
// paid only for HBM traffic beside no arithmetic: a_hbm_unshared =
// max(0, a_hbm - min(1, a_tensor + a_vector)) of what runs at once. A
// weight-streaming GEMM (decode-like: both at ~0.85) then draws about its
// tensor power plus the devices' share of the memory power, not both in
// full. sigma = 1 is the additive model. The driver lowers the SM clock
// until the power averaged over a time constant stays under the board cap;
// cap_clock() is the clock at which a given (averaged) activity draws
// exactly the cap. A second, faster loop (fast_cap_w over
// fast_time_constant, a few ms) holds short excursions under a higher cap:
// it throttles bursts of tens of ms that the slow average never sees at the
// cap (on an H100, 70 ms GEMM bursts every 100 ms run at 0.92 of their
// rested rate). A kernel's arithmetic slows with the clock only in part
// (clock_bound_share): on an H100 the reported SM clock falls ~31% under
// back-to-back GEMMs while their throughput falls ~16%
// (calibration/measurements/h100-sxm/sustained_gemm_2026-11-22.json).
// That was NVML's clock. The SMs' own cycle counter (clock64 against
// globaltimer, calibration/microbench/clock_truth_bench.py) shows what it
// misses: a third, instantaneous limiter (instant_cap_w) that holds every
// kernel from its first microseconds at the clock where its own power
// meets that cap (bf16 8192^3 GEMMs run at 1615 MHz from rest while NVML
// reads 1980), and arithmetic time that follows the effective clock almost
// wholly (share 0.95-1.00 over 1200-1650 MHz). With instant_cap_w set, a
// kernel's calibrated (rested) time is its time at its rest clock
// (rest_clock.h), and a lower clock stretches it by relative_speed(); the
// presets keep the NVML fit (instant_cap_w 0: every kernel rests at f_max)
// and configs/examples/h100_sm_clock.yaml carries the re-fit (README,
// "The SMs' own clock", says why it is not the default).
//
// Every parameter has a physical range (PowerParams::check); the fitted
// values per GPU live in the presets (configs/hardware/*.yaml, `power:`).
#pragma once

#include <string>

#include "sim/engine/time.h"

namespace gcsim::models::gpu {

// Time fractions of the whole GPU, each in [0, 1].
struct Activity {
  double tensor = 0.0;  // SM-time in tensor-core arithmetic
  double vector = 0.0;  // SM-time in CUDA-core arithmetic
  double hbm = 0.0;     // HBM bytes per second over the peak bandwidth
  // HBM traffic beside no arithmetic: max(0, hbm - min(1, tensor + vector))
  // of everything running at once (a time fraction like the others once
  // averaged). unshared() gives it for one piece of work alone; the clock
  // governor derives it from its running sums.
  double hbm_unshared = 0.0;
};

// `a`'s HBM traffic beside no arithmetic, `a` running alone.
double unshared_hbm(const Activity& a);
// `a` with hbm_unshared set to unshared_hbm(a).
Activity with_unshared(Activity a);
// unshared_hbm() of one kernel given in activity-seconds over its span (s):
// the same share, in activity-seconds.
double unshared_hbm_seconds(const Activity& activity_s, double span_s);
// to += k x a, field by field (activity-seconds summed over kernels: each
// kernel's own hbm_unshared adds up, where unshared_hbm() of a sum would
// let one kernel's arithmetic hide another's traffic).
void accumulate(Activity& to, const Activity& a, double k = 1.0);

struct PowerParams {
  double cap_w = 0.0;              // board power limit (W); 0: no power model
  double idle_w = 0.0;             // board power with nothing running, at max clock (W)
  double tensor_w = 0.0;           // tensor pipes busy on the whole GPU, at max clock (W)
  double vector_w = 0.0;           // CUDA cores busy on the whole GPU, at max clock (W)
  double hbm_w = 0.0;              // memory traffic at full HBM bandwidth (W)
  double hbm_device_share = 1.0;   // sigma: share of hbm_w in the DRAM devices and PHYs
  double min_voltage_ratio = 0.7;  // V_min / V(f_max)
  double knee_fraction = 0.6;      // f_knee / f_max
  double min_clock_fraction = 0.5; // lowest clock the cap drives the SMs to, over f_max
  sim::Duration time_constant = sim::ms(int64_t{100});  // power averaging window
  double fast_cap_w = 0.0;         // the fast loop's cap (W); 0: no fast loop
  sim::Duration fast_time_constant = sim::ms(int64_t{5});  // the fast loop's averaging window
  double clock_bound_share = 1.0;  // share of an arithmetic tile's time at f_max that scales 1/f
  // The instantaneous limiter's cap (W): a kernel runs at most at the clock
  // where its own power alone meets it, from its first microseconds (no
  // averaging). 0: none (every kernel rests at f_max).
  double instant_cap_w = 0.0;
  // The instantaneous limiter's cap once the power averaged over
  // time_constant sits at cap_w (W): it falls linearly from instant_cap_w
  // at rest (a mixed GEMM/elementwise loop's GEMMs run at 1549 MHz where
  // they rest at 1612, though the loops let its elementwise kernels run at
  // 1715). 0: it stays at instant_cap_w.
  double instant_sustained_w = 0.0;
  // Of a fused attention tile's arithmetic time, the share the tensor pipes
  // are busy; the rest (softmax's exponentials, max and sum) keeps the CUDA
  // cores busy instead (calibration/fit/clock_truth_fit.py: cuDNN's forward rests
  // at 1716 MHz where GEMMs rest at 1612). 1: all tensor, as a GEMM.
  double attention_tensor_share = 1.0;
  // A memory-bound tile's SM side (issuing its loads and stores, and the part
  // of each access's latency spent in SM-clocked pipes and queues) takes this
  // share of its HBM time when every SM streams at f_max: the SMs keep HBM
  // saturated down to this clock fraction and below it the tile is SM-bound,
  // taking (share x HBM time + its arithmetic) x f_max / f. 0: never.
  double memory_issue_share = 0.0;
  // The driver's loops count a fall in the GPU's activity only once it has
  // lasted this long: over a stretch of lower power shorter than it (a
  // layer norm, an add, a short wait between GEMMs) they keep seeing the
  // activity before it, so the clock does not recover there; a longer
  // stretch counts, less this much. Zero: every fall counts at once.
  sim::Duration activity_hold = sim::Duration::zero();

  bool enabled() const { return cap_w > 0.0; }
  bool fast_loop() const { return fast_cap_w > 0.0; }
  bool instant_limit() const { return instant_cap_w > 0.0; }
  // "" when every parameter lies in its physical range, else what is wrong
  // (names the field as the preset spells it).
  std::string check() const;
};

// Physical ranges (why: see power_model.cpp), also asserted by the tests.
struct Range {
  double lo, hi;
  bool holds(double v) const { return v >= lo && v <= hi; }
};
inline constexpr Range kIdleRange{30.0, 250.0};          // W: HGX H100/H200 idle 60-150 W
inline constexpr Range kTensorRange{200.0, 2000.0};      // W
inline constexpr Range kVectorRange{20.0, 800.0};        // W
inline constexpr Range kHbmRange{20.0, 600.0};           // W: stacks, PHYs, L2 and NoC
inline constexpr Range kVoltageRatioRange{0.5, 1.0};
inline constexpr Range kKneeRange{0.2, 0.9};
inline constexpr Range kMinClockRange{0.2, 0.9};
inline constexpr Range kTimeConstantMsRange{5.0, 2000.0};  // ms
inline constexpr Range kFastCapRatioRange{1.0, 1.5};        // fast_cap_w over cap_w
inline constexpr Range kFastTimeConstantMsRange{1.0, 50.0}; // ms, and below time_constant
inline constexpr Range kClockShareRange{0.2, 1.0};
// instant_cap_w over cap_w: at or above the board cap (the averaged loops
// hold that), below the highest draw a GEMM reaches at f_max (~1.5x).
inline constexpr Range kInstantCapRatioRange{1.0, 1.6};
// A fused attention tile does at least its two GEMMs' worth of MMAs: between
// a third of its time (softmax-bound small heads) and all of it.
inline constexpr Range kAttentionTensorShareRange{0.3, 1.0};
inline constexpr Range kHbmDeviceShareRange{0.15, 1.0};
inline constexpr Range kMemoryIssueShareRange{0.0, 0.95};
inline constexpr Range kActivityHoldMsRange{0.0, 2.0};  // ms
// The memory path's part of board power (W), which the clock leaves alone:
// W_mem (sigma a_hbm + (1 - sigma) a_hbm_unshared).
double memory_power_w(const PowerParams& p, const Activity& a);

// V(f) / V(f_max) at clock fraction r = f / f_max.
double voltage_ratio(const PowerParams& p, double r);
// phi(r) = compute_speed(r) V(r)^2: arithmetic's dynamic power at clock
// fraction r over that at f_max.
double dynamic_scale(const PowerParams& p, double r);
// Board power (W) of activity `a` at clock fraction r (a.hbm_unshared as
// given: with_unshared() for one kernel alone).
double board_power_w(const PowerParams& p, const Activity& a, double r);
// The highest clock fraction in [min_clock_fraction, 1] whose power for `a`
// stays at or under `cap_w` (min_clock_fraction when none does); the first
// form against the board cap (p.cap_w).
double cap_clock(const PowerParams& p, const Activity& a);
double cap_clock(const PowerParams& p, const Activity& a, double cap_w);
// The same when the tensor pipes' work runs at most at clock fraction
// `tensor_cap` whatever clock the loops allow (the instantaneous limiter
// holds power-dense kernels below the loops' clock: raising that clock
// above it adds no tensor power). tensor_cap 1: cap_clock.
double cap_clock(const PowerParams& p, const Activity& a, double cap_w, double tensor_cap);
// Arithmetic throughput at clock fraction r over that at f_max:
// 1 / (share / r + 1 - share).
double compute_speed(const PowerParams& p, double r);
// The clock fraction at which activity `a` alone meets instant_cap_w (1
// without an instantaneous limiter): the highest clock it ever runs at.
double instant_clock(const PowerParams& p, const Activity& a);
// The instantaneous limiter's cap (W) when the power averaged over
// time_constant is `averaged_w`: instant_cap_w at idle, falling linearly to
// instant_sustained_w at cap_w (and no further).
double instant_budget_w(const PowerParams& p, double averaged_w);
// Arithmetic throughput at clock fraction r over that at `rest` (the clock
// the work's calibrated time stands for): compute_speed(min(r, rest)) /
// compute_speed(rest), so 1 at and above its rest clock.
double relative_speed(const PowerParams& p, double r, double rest);

}  // namespace gcsim::models::gpu
