// Warm-up passes for a run whose GPUs start from the periodic steady state
// of their own workload (cluster.clock_start: steady, the default for
// training): a training step is one of many identical steps, so each GPU's
// power governor (models/gpu/clock_governor.h) starts it with the averages
// the step before it left.
//
// A pass simulates the workload once, exactly as the run will, from the
// current start states; each GPU's averages at the pass's end (its
// makespan: the next step starts when the slowest rank ends) give the
// periodic start for that pass's activity timeline (periodic_start: the
// fixed point of start -> end for a linear filter). That timeline moves
// with the clocks the start gives, so passes repeat until no GPU's start
// clock moves by more than kSettledClock of f_max, or kMaxPasses. The first
// pass starts from back-to-back GEMMs' steady state. Deterministic: the same
// scenario gives the same passes and the same states bit for bit.
#pragma once

#include <vector>

#include "models/gpu/clock_governor.h"
#include "sim/scenario/resource_budget.h"
#include "sim/scenario/scenario.h"

namespace gcsim::cli {

// A start clock that moves by less than this fraction of f_max between two
// passes (0.4 MHz on a 1980 MHz H100) has settled: it moves a step's GEMM
// time by ~0.01% (compute_speed's clock-bound share s ~ 0.4-0.6 of it).
inline constexpr double kSettledClock = 2e-4;
// At most this many passes (each a whole simulation of the workload).
inline constexpr int kMaxPasses = 6;

// One pass: the workload simulated once from s.cluster's start states.
struct GovernorPass {
  bool complete = false;  // every op ran (else the rest is empty)
  sim::Duration period;   // the makespan
  std::vector<models::gpu::GovernorState> end;  // per rank, at the makespan
  std::vector<bool> worked;                     // per rank: it ran anything
  std::vector<models::gpu::PowerParams> power;  // per rank
};
GovernorPass run_governor_pass(const Scenario& s, const ResourceLimits& limits);

struct ClockWarmup {
  int passes = 0;            // simulations run before the real one
  bool settled = false;      // the last pass moved no start clock by kSettledClock or more
  double last_change = 0.0;  // the last pass's largest start-clock move (fraction of f_max)
  std::vector<models::gpu::GovernorState> start;  // per rank, what the run starts from
};

// Runs the passes for `s` (its cluster.clock_settle must be set) and puts
// the states into s.cluster.clock_rank_start; a note says what they came
// to. A pass that does not complete (a deadlock, out of memory, a resource
// limit) stops the warm-up with the states so far: the run itself then
// reports the problem.
ClockWarmup settle_clock_start(Scenario& s, const ResourceLimits& limits);

}  // namespace gcsim::cli
