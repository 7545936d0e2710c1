// The power cap's control of one GPU's SM clock over time (power_model.h).
//
// The driver holds the board's power, averaged over a time constant tau,
// under its cap. The governor keeps that average as a first-order filter of
// the GPU's activity (A' = (a - A) / tau, exact for activity that is
// constant between updates) and gives each kernel, when it starts, the
// clock at which the averaged activity draws exactly the cap (or f_max when
// it draws less). Where the preset has a fast loop (fast_cap_w), a second
// filter averages the same activity over fast_time_constant (a few ms) and
// the kernel gets the lower of the two loops' clocks: the fast one holds
// tens-of-ms bursts under its higher cap before the slow average rises. Back-to-back GEMMs so settle at the sustained clock within
// a few tau; idle gaps and memory-bound kernels lower the average and let
// the clock recover, by as much as their share of the last few tau.
// Energy is the integral of the board power, each running piece of work at
// the clock it started with.
//
// Both filters take the highest activity of the last activity_hold (by its
// power at f_max), not the activity now: a fall counts only once it has
// lasted that long (measured on an H100: 0.13 ms idle gaps between 8192^3
// GEMMs leave them as slow as back to back, 0.3-1 ms gaps speed them up
// 6-16%; calibration/measurements/h100-sxm/power_clock_gaps_2026-11-27/).
// Energy and the running activity stay the true ones.
#pragma once

#include <deque>

#include "models/gpu/power_model.h"
#include "sim/engine/time.h"

namespace gcsim::models::gpu {

// The governor's two averages at some instant: what a GPU carries into the
// work that starts then (zero: a rested GPU).
struct GovernorState {
  Activity slow;  // over time_constant
  Activity fast;  // over fast_time_constant (equal to slow where there is no fast loop)
};

// The state a GPU starts a period with when the same work repeats back to
// back, each period `period` long: the fixed point of start -> end. For a
// fixed activity timeline each average is linear in its start, end = start
// k + B with k = exp(-period / tau), so the periodic start is B / (1 - k) =
// (end - start k) / (1 - k), per component and per loop. The timeline itself
// moves with the clocks the start gives, so callers iterate (warm-up passes).
// `start` and `end` are the averages a run of one period began and ended
// with; a zero period returns `end`.
GovernorState periodic_start(const PowerParams& params, const GovernorState& start, const GovernorState& end,
                             sim::Duration period);

// The SM clock fraction (of f_max) a GPU in `state` gives the next kernel:
// the lower of the two loops' cap clocks.
double state_clock(const PowerParams& params, const GovernorState& state);
// The instantaneous limiter's cap (W; 0 without one) for a slow average
// `slow`: power_model.h instant_budget_w of its power at the slow loop's clock.
double state_instant_budget_w(const PowerParams& params, const Activity& slow);

class ClockGovernor {
 public:
  // `averaged` is the filter's state at `start`: zero for a rested GPU, the
  // activity of the work before it for one already running (both loops).
  ClockGovernor(const PowerParams& params, sim::Time start, const Activity& averaged);
  // Each loop from its own average (a recorded or periodic state).
  ClockGovernor(const PowerParams& params, sim::Time start, const GovernorState& state);

  // Work starts or ends now: activity `a` and its arithmetic's power
  // `arithmetic_w` (W_tensor a_tensor + W_vector a_vector at its clock) are
  // added to or removed from what runs. The memory path's power follows
  // from the running sums (memory_power_w: HBM traffic beside arithmetic
  // shares its on-chip part), so a.hbm_unshared is ignored here (but after
  // take_unshared_from_pieces(), below).
  void add(sim::Time now, const Activity& a, double arithmetic_w);
  void remove(sim::Time now, const Activity& a, double arithmetic_w);
  // From now on every piece added is the mean of many kernels run one after
  // another (the serving model's step, one piece over its span), and its
  // a.hbm_unshared, their own traffic beside no arithmetic averaged, is taken
  // as given and summed: the unshared share of the mean would be that of a
  // step where every kernel streams beside the step's mean arithmetic.
  void take_unshared_from_pieces() { unshared_given_ = true; }
  // The clock fraction (of f_max) for work starting now.
  double clock(sim::Time now);
  // Holds the clock at `fraction` of f_max whatever the activity (the
  // power fit asks the runtime for its activity at a measured clock).
  void pin(double fraction);
  bool pinned() const { return pinned_ > 0.0; }
  // The instantaneous limiter's cap now (power_model.h instant_budget_w):
  // from the slow average's power at the loops' clock.
  double instant_budget_w(sim::Time now);

  // The running activity integrated from the start to `until` (>= the last
  // update), in activity-seconds: over a kernel's span, over its length, it
  // is the mean activity that kernel charged.
  Activity activity_seconds(sim::Time until) const;

  // Board power now (W) and energy (J) from the start to `until` (>= the
  // last update).
  double power_w() const { return params_.idle_w + arithmetic_w_ + memory_power_w(params_, running_); }
  double energy_j(sim::Time until) const;
  const Activity& averaged() const { return averaged_; }
  const Activity& averaged_fast() const { return averaged_fast_; }
  // Both averages as they stand at `until` (>= the last update), the levels
  // still held then included: what the GPU carries into work starting then.
  GovernorState state_at(sim::Time until) const;
  const PowerParams& params() const { return params_; }

 private:
  void advance(sim::Time now);
  // Before what runs changes at `now`: the level that ran since since_
  // stays in the filters' input until now + activity_hold.
  void hold_level(sim::Time now);
  // The filters' input at the last update: the highest of the held levels
  // and what runs now.
  const Activity& filter_input() const;
  double demand_w(const Activity& a) const;  // a's power at f_max above idle (W)

  // A level of activity that ran until `until` - activity_hold.
  struct Held {
    sim::Time until;
    Activity level;
    double demand_w = 0.0;
  };
  PowerParams params_;
  sim::Time last_;
  Activity averaged_;
  Activity averaged_fast_;  // over fast_time_constant (used when params_.fast_loop())
  Activity running_;     // summed over what runs now (hbm_unshared: of those sums)
  bool unshared_given_ = false;  // take_unshared_from_pieces()
  double arithmetic_w_ = 0.0;
  int pieces_ = 0;       // work items running: at 0 the sums reset to exact zeros
  double energy_j_ = 0.0;
  Activity activity_s_;  // running activity integrated over time (s)
  double pinned_ = 0.0;  // > 0: the clock fraction pin() holds
  // Held levels, oldest first; each outlasts and outdraws every one after
  // it (a sliding-window maximum), so the front is the highest.
  std::deque<Held> held_;
  sim::Time since_;  // when running_ last changed
};

}  // namespace gcsim::models::gpu
