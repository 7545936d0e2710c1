// The power model and the power cap's clock governor
// (models/gpu/power_model.h, clock_governor.h), against hand-computed
// figures: P = idle + W a phi(f) + W_hbm (sigma a_hbm + (1 - sigma)
// a_unshared), the cap's clock, the first-order averaging and the energy
// integral.
#include <cmath>
#include <string>

#include "catch.h"
#include "models/gpu/clock_governor.h"
#include "models/gpu/power_model.h"
#include "models/gpu/rest_clock.h"

namespace gpu = gcsim::models::gpu;
namespace sim = gcsim::sim;

namespace {

// Round numbers for hand checks: no voltage scaling (V flat: phi(r) = r).
gpu::PowerParams flat_voltage() {
  gpu::PowerParams p;
  p.cap_w = 700;
  p.idle_w = 100;
  p.tensor_w = 1000;
  p.vector_w = 400;
  p.hbm_w = 200;
  p.min_voltage_ratio = 1.0;
  p.knee_fraction = 0.5;
  p.min_clock_fraction = 0.3;
  p.time_constant = sim::ms(int64_t{100});
  p.clock_bound_share = 1.0;  // all arithmetic time follows the clock: speed = r
  return p;
}

}  // namespace

TEST_CASE("power model: voltage curve and dynamic power scale", "[gpu][power]") {
  gpu::PowerParams p = flat_voltage();
  p.min_voltage_ratio = 0.7;
  p.knee_fraction = 0.5;
  // At and below the knee V = 0.7 V_max; halfway from knee to max 0.85.
  CHECK(gpu::voltage_ratio(p, 0.4) == Approx(0.7));
  CHECK(gpu::voltage_ratio(p, 0.75) == Approx(0.85));
  CHECK(gpu::voltage_ratio(p, 1.0) == Approx(1.0));
  // phi = speed V^2: 0.75 * 0.85^2 with speed = r (share 1).
  CHECK(gpu::dynamic_scale(p, 0.75) == Approx(0.75 * 0.7225));
  CHECK(gpu::dynamic_scale(p, 1.0) == Approx(1.0));
  // Half the tile time clock-bound: speed(0.75) = 1 / (0.5 / 0.75 + 0.5) = 6/7.
  p.clock_bound_share = 0.5;
  CHECK(gpu::dynamic_scale(p, 0.75) == Approx(6.0 / 7.0 * 0.7225));
}

TEST_CASE("power model: board power and the clock that meets the cap", "[gpu][power]") {
  const gpu::PowerParams p = flat_voltage();
  // Tensor pipes busy everywhere, HBM at a quarter: 100 + 1000 r + 50.
  const gpu::Activity gemm{1.0, 0.0, 0.25};
  CHECK(gpu::board_power_w(p, gemm, 1.0) == Approx(1150.0));
  // 100 + 1000 r + 50 = 700  ->  r = 0.55.
  CHECK(gpu::cap_clock(p, gemm) == Approx(0.55).epsilon(1e-9));
  // A memory-bound loop stays under the cap at full clock: 100 + 0.1*400 + 200.
  const gpu::Activity copy{0.0, 0.1, 1.0};
  CHECK(gpu::board_power_w(p, copy, 1.0) == Approx(340.0));
  CHECK(gpu::cap_clock(p, copy) == 1.0);
  // Nothing fits: the clock floor.
  gpu::PowerParams low = p;
  low.cap_w = 200;
  CHECK(gpu::cap_clock(low, gemm) == Approx(0.3));
  // Throughput at half the clock with half the tile time clock-bound:
  // 1 / (0.5 / 0.5 + 0.5).
  gpu::PowerParams half = p;
  half.clock_bound_share = 0.5;
  CHECK(gpu::compute_speed(half, 0.5) == Approx(1.0 / 1.5));
  CHECK(gpu::compute_speed(half, 1.0) == Approx(1.0));
  CHECK(gpu::compute_speed(p, 0.5) == Approx(0.5));
}

TEST_CASE("power model: HBM traffic beside arithmetic pays only the devices' share of its path",
          "[gpu][power]") {
  gpu::PowerParams p = flat_voltage();
  p.hbm_device_share = 0.3;
  // A copy (no arithmetic): its whole path, as before: 100 + 200.
  const gpu::Activity copy = gpu::with_unshared({0.0, 0.0, 1.0});
  CHECK(copy.hbm_unshared == 1.0);
  CHECK(gpu::board_power_w(p, copy, 1.0) == Approx(300.0));
  // A weight-streaming GEMM, tensor 0.85 and HBM 0.87 at once: 0.02 of the
  // traffic beside no arithmetic. 100 + 850 + 200 (0.3 x 0.87 + 0.7 x 0.02)
  // = 1005 W, where the additive model (sigma 1) says 100 + 850 + 174.
  const gpu::Activity decode = gpu::with_unshared({0.85, 0.0, 0.87});
  CHECK(decode.hbm_unshared == Approx(0.02));
  CHECK(gpu::board_power_w(p, decode, 1.0) == Approx(1005.0));
  gpu::PowerParams additive = p;
  additive.hbm_device_share = 1.0;
  CHECK(gpu::board_power_w(additive, decode, 1.0) == Approx(1124.0));
  // The governor prices what runs at once: a GEMM wave (tensor 0.9, HBM
  // 0.1) and a collective's HBM stream (0.3) beside it share the on-chip
  // path: memory 200 x 0.3 x 0.4 = 24 W; the stream alone 200 x 0.3 = 60 W.
  gpu::ClockGovernor g(p, sim::Time::zero(), gpu::Activity{});
  gpu::Activity stream;
  stream.hbm = 0.3;
  g.add(sim::Time::zero(), stream, 0.0);
  CHECK(g.power_w() == Approx(160.0));
  g.add(sim::Time::zero(), gpu::Activity{0.9, 0.0, 0.1}, 900.0);
  CHECK(g.power_w() == Approx(100.0 + 900.0 + 24.0));
  // Over 1 s the unshared traffic integrates to 0.
  CHECK(g.activity_seconds(sim::Time::zero() + sim::ms(int64_t{1000})).hbm_unshared == Approx(0.0));
  g.remove(sim::Time::zero() + sim::ms(int64_t{1000}), gpu::Activity{0.9, 0.0, 0.1}, 900.0);
  CHECK(g.power_w() == Approx(160.0));
  CHECK(g.activity_seconds(sim::Time::zero() + sim::ms(int64_t{1500})).hbm_unshared == Approx(0.15));
}

TEST_CASE("power model: a step charged as one mean keeps its kernels' own unshared traffic",
          "[gpu][power]") {
  gpu::PowerParams p = flat_voltage();
  p.hbm_device_share = 0.3;
  // A serving step, 1 s: a GEMM (tensor 0.95, HBM 0.1) for 0.75 s, then an
  // elementwise pass (HBM 0.9) for 0.25 s. Its mean: tensor 0.7125, HBM
  // 0.3, and the pass's own traffic beside no arithmetic 0.225.
  gpu::Activity mean;
  gpu::accumulate(mean, gpu::with_unshared({0.95, 0.0, 0.1}), 0.75);
  gpu::accumulate(mean, gpu::with_unshared({0.0, 0.0, 0.9}), 0.25);
  CHECK(mean.tensor == Approx(0.7125));
  CHECK(mean.hbm == Approx(0.3));
  CHECK(mean.hbm_unshared == Approx(0.225));
  // The same per kernel from its activity-seconds over its span: the pass
  // (0.225 HBM-s over 0.25 s) all unshared, the GEMM (0.7125 tensor-s,
  // 0.075 HBM-s over 0.75 s) none.
  CHECK(gpu::unshared_hbm_seconds({0.0, 0.0, 0.225}, 0.25) == Approx(0.225));
  CHECK(gpu::unshared_hbm_seconds({0.7125, 0.0, 0.075}, 0.75) == 0.0);
  // Derived from the mean, the pass would hide behind the GEMM's arithmetic
  // (0.3 - 0.7125 < 0): memory 200 x 0.3 x 0.3 = 18 W. Taken from the
  // pieces: 200 (0.3 x 0.3 + 0.7 x 0.225) = 49.5 W, what the two kernels
  // draw one after the other (0.75 x 6 + 0.25 x 180 = 49.5).
  gpu::ClockGovernor derived(p, sim::Time::zero(), gpu::Activity{});
  derived.add(sim::Time::zero(), mean, 712.5);
  CHECK(derived.power_w() == Approx(100.0 + 712.5 + 18.0));
  gpu::ClockGovernor given(p, sim::Time::zero(), gpu::Activity{});
  given.take_unshared_from_pieces();
  given.add(sim::Time::zero(), mean, 712.5);
  CHECK(given.power_w() == Approx(100.0 + 712.5 + 49.5));
  given.remove(sim::Time::zero() + sim::ms(int64_t{1000}), mean, 712.5);
  CHECK(given.power_w() == Approx(100.0));
}

TEST_CASE("power model: parameters outside their physical ranges are named", "[gpu][power]") {
  gpu::PowerParams p = flat_voltage();
  CHECK(p.check().empty());
  p.tensor_w = 5000;
  CHECK(p.check().find("tensor") != std::string::npos);
  p = flat_voltage();
  p.time_constant = sim::ms(int64_t{5000});
  CHECK(p.check().find("time_constant") != std::string::npos);
  p = flat_voltage();
  p.clock_bound_share = 0.05;  // below 0.2
  CHECK(p.check().find("clock_bound_share") != std::string::npos);
  p = flat_voltage();
  p.hbm_device_share = 0.1;  // below 0.15: DRAM stacks cheaper than ~3 pJ/bit
  CHECK(p.check().find("hbm_device_share") != std::string::npos);
  p.hbm_device_share = 1.2;
  CHECK(p.check().find("hbm_device_share") != std::string::npos);
  // A memory-bound tile SM-bound at f_max (share 1 or more) is not memory-bound.
  p = flat_voltage();
  p.memory_issue_share = 1.0;
  CHECK(p.check().find("memory_issue_share") != std::string::npos);
  p.memory_issue_share = -0.1;
  CHECK(p.check().find("memory_issue_share") != std::string::npos);
  // A hold past 2 ms would be a third averaging window, not a sampling delay.
  p = flat_voltage();
  p.activity_hold = sim::ms(int64_t{3});
  CHECK(p.check().find("activity_hold") != std::string::npos);
  // The fast loop: a cap below the board cap, above 1.5x it, a window
  // outside 1-50 ms or not below the slow one.
  p = flat_voltage();
  p.fast_cap_w = p.cap_w * 0.9;
  CHECK(p.check().find("fast_cap_w") != std::string::npos);
  p.fast_cap_w = p.cap_w * 1.6;
  CHECK(p.check().find("fast_cap_w") != std::string::npos);
  p.fast_cap_w = p.cap_w * 1.1;
  p.fast_time_constant = sim::us(int64_t{500});
  CHECK(p.check().find("fast_time_constant") != std::string::npos);
  p.fast_time_constant = sim::ms(int64_t{20});
  CHECK(p.check().empty());
  p.time_constant = sim::ms(int64_t{15});
  CHECK(p.check().find("shorter than time_constant") != std::string::npos);
}

TEST_CASE("clock governor: the fast loop throttles a burst the slow average does not see",
          "[gpu][power]") {
  gpu::PowerParams p = flat_voltage();  // tau 100 ms
  const gpu::Activity gemm{1.0, 0.0, 0.25};
  const sim::Time t0 = sim::Time::zero();
  const sim::Time t = t0 + sim::ms(int64_t{30});
  gpu::ClockGovernor slow_only(p, t0, gpu::Activity{});
  p.fast_cap_w = p.cap_w * 1.05;
  p.fast_time_constant = sim::ms(int64_t{5});
  gpu::ClockGovernor both(p, t0, gpu::Activity{});
  slow_only.add(t0, gemm, 800.0);
  both.add(t0, gemm, 800.0);
  // 30 ms into the burst the slow average holds 1 - e^-0.3 = 26% of the
  // activity, the fast one 1 - e^-6 = 99.8%.
  const double r_slow = slow_only.clock(t);
  const double r_both = both.clock(t);
  const double slow_share = 1.0 - std::exp(-0.3), fast_share = 1.0 - std::exp(-6.0);
  CHECK(both.averaged().tensor == Approx(slow_share));
  CHECK(both.averaged_fast().tensor == Approx(fast_share));
  const gpu::Activity fast_avg{fast_share, 0.0, 0.25 * fast_share};
  CHECK(r_slow == Approx(gpu::cap_clock(p, gpu::Activity{slow_share, 0.0, 0.25 * slow_share})));
  CHECK(r_both == Approx(gpu::cap_clock(p, fast_avg, p.fast_cap_w)));
  CHECK(r_both < r_slow);
  // Its average draws the fast cap at that clock.
  CHECK(gpu::board_power_w(p, fast_avg, r_both) == Approx(p.fast_cap_w).epsilon(1e-6));
  // Long after, both averages hold the activity and the slow (lower) cap binds.
  const sim::Time late = t0 + sim::ms(int64_t{2000});
  CHECK(both.clock(late) == Approx(gpu::cap_clock(p, gemm)));
  CHECK(both.clock(late) == Approx(slow_only.clock(late)));
}

TEST_CASE("clock governor: averaged activity, clock and energy from rest", "[gpu][power]") {
  const gpu::PowerParams p = flat_voltage();
  const sim::Time t0 = sim::Time::zero();
  gpu::ClockGovernor g(p, t0, gpu::Activity{});
  // Rested: full clock.
  CHECK(g.clock(t0) == 1.0);
  // Back-to-back tensor work (activity 1, HBM 0.25) drawing 800 W dynamic:
  // 750 W of arithmetic, and the governor's 200 x 0.25 W of memory traffic.
  const gpu::Activity gemm{1.0, 0.0, 0.25};
  g.add(t0, gemm, 750.0);
  // After one time constant the average holds 1 - 1/e of it.
  const sim::Time tau = t0 + sim::ms(int64_t{100});
  const double clock_at_tau = g.clock(tau);
  CHECK(g.averaged().tensor == Approx(1.0 - std::exp(-1.0)));
  CHECK(g.averaged().hbm == Approx(0.25 * (1.0 - std::exp(-1.0))));
  // 100 + 1000 r 0.632 + 200 * 0.158 = 700 -> r = 568.4 / 632.1.
  const double a = 1.0 - std::exp(-1.0);
  CHECK(clock_at_tau == Approx((700.0 - 100.0 - 200.0 * 0.25 * a) / (1000.0 * a)).epsilon(1e-9));
  // Energy: (100 + 800) W for 0.1 s.
  CHECK(g.energy_j(tau) == Approx(90.0));
  // Settled (10 tau): the clock that holds the work itself at the cap.
  CHECK(g.clock(t0 + sim::ms(int64_t{1000})) == Approx(0.55).epsilon(1e-4));
  // Idle recovers the clock: after 10 tau without work, full clock again.
  g.remove(t0 + sim::ms(int64_t{1000}), gemm, 750.0);
  CHECK(g.power_w() == Approx(100.0));
  CHECK(g.clock(t0 + sim::ms(int64_t{2000})) == 1.0);
  CHECK(g.energy_j(t0 + sim::ms(int64_t{2000})) == Approx(900.0 + 100.0));
}

TEST_CASE("clock governor: idle gaps shorter than tau raise the clock by the duty cycle",
          "[gpu][power]") {
  const gpu::PowerParams p = flat_voltage();
  const gpu::Activity gemm{1.0, 0.0, 0.0};
  // 50% duty at a 2 ms period (50x shorter than tau), for 2 s (20 tau).
  gpu::ClockGovernor g(p, sim::Time::zero(), gpu::Activity{});
  sim::Time t = sim::Time::zero();
  for (int i = 0; i < 1000; ++i) {
    g.add(t, gemm, 500.0);
    t += sim::ms(int64_t{1});
    g.remove(t, gemm, 500.0);
    t += sim::ms(int64_t{1});
  }
  // The average settles at half the activity (ripple 1 ms / 100 ms), so the
  // clock is the one that holds a = 0.5 at the cap: 100 + 500 r = 700 ->
  // r = 1.2, i.e. full clock; back to back it would be 0.6.
  CHECK(g.averaged().tensor == Approx(0.5).margin(0.01));
  CHECK(g.clock(t) == 1.0);
  gpu::PowerParams hot = p;
  hot.tensor_w = 1600;  // 100 + 800 r = 700 -> r = 0.75 at 50%; 0.375 back to back
  gpu::ClockGovernor h(hot, sim::Time::zero(), gpu::Activity{0.5, 0.0, 0.0});
  CHECK(h.clock(sim::Time::zero()) == Approx(0.75).epsilon(1e-9));
}

TEST_CASE("clock governor: a pinned clock and the integrated activity", "[gpu][power]") {
  gpu::PowerParams p;
  p.cap_w = 700;
  p.idle_w = 100;
  p.tensor_w = 1000;
  p.hbm_w = 200;
  gpu::ClockGovernor g(p, sim::Time::zero(), gpu::Activity{});
  const sim::Time t0 = sim::Time::zero();
  // 2 ms of {tensor 0.5, hbm 0.2}, then nothing: 1e-3 and 4e-4 activity-seconds.
  g.add(t0, gpu::Activity{0.5, 0.0, 0.2}, 0.0);
  const gpu::Activity mid = g.activity_seconds(t0 + sim::ms(int64_t{1}));
  CHECK(mid.tensor == Approx(0.5e-3));
  g.remove(t0 + sim::ms(int64_t{2}), gpu::Activity{0.5, 0.0, 0.2}, 0.0);
  const gpu::Activity a = g.activity_seconds(t0 + sim::ms(int64_t{3}));
  CHECK(a.tensor == Approx(1e-3));
  CHECK(a.vector == 0.0);
  CHECK(a.hbm == Approx(4e-4));
  // Pinned, the clock ignores the activity (a GEMM's worth would throttle).
  g.add(t0 + sim::ms(int64_t{3}), gpu::Activity{1.0, 0.0, 0.1}, 0.0);
  g.pin(0.6);
  CHECK(g.clock(t0 + sim::ms(int64_t{500})) == 0.6);
  g.pin(1.0);
  CHECK(g.clock(t0 + sim::ms(int64_t{501})) == 1.0);
  CHECK_THROWS_AS(g.pin(0.0), std::invalid_argument);
  CHECK_THROWS_AS(g.pin(1.5), std::invalid_argument);
}

TEST_CASE("clock governor: the periodic start of a repeated burst", "[gpu][power]") {
  // A 50 ms period: 40 ms of tensor work (activity 1, HBM 0.25), 10 ms idle.
  // Over one period a first-order average goes A -> A e^-0.5 + B with B =
  // (1 - e^-0.4) e^-0.1 (the burst charged, then decaying over the idle
  // part), so the start that repeats is B / (1 - e^-0.5) = 0.758; the 5 ms
  // loop's is (1 - e^-8) e^-2 / (1 - e^-10) = 0.135.
  gpu::PowerParams p = flat_voltage();  // tau 100 ms, no hold
  p.fast_cap_w = p.cap_w * 1.05;
  p.fast_time_constant = sim::ms(int64_t{5});
  const gpu::Activity gemm{1.0, 0.0, 0.25};
  const sim::Time t0 = sim::Time::zero();
  const sim::Duration period = sim::ms(int64_t{50});
  const double slow = (1.0 - std::exp(-0.4)) * std::exp(-0.1) / (1.0 - std::exp(-0.5));
  const double fast = (1.0 - std::exp(-8.0)) * std::exp(-2.0) / (1.0 - std::exp(-10.0));
  auto one_period = [&](const gpu::GovernorState& start) {
    gpu::ClockGovernor g(p, t0, start);
    g.add(t0, gemm, 800.0);
    g.remove(t0 + sim::ms(int64_t{40}), gemm, 800.0);
    return g.state_at(t0 + period);
  };
  // From rest and from a GPU far above the periodic state, one period's
  // end gives the same periodic start: the filter is linear in its start.
  for (const double a0 : {0.0, 0.9}) {
    const gpu::GovernorState start{gpu::Activity{a0, 0.0, 0.25 * a0}, gpu::Activity{a0, 0.0, 0.25 * a0}};
    const gpu::GovernorState periodic = gpu::periodic_start(p, start, one_period(start), period);
    CHECK(periodic.slow.tensor == Approx(slow).epsilon(1e-9));
    CHECK(periodic.slow.hbm == Approx(0.25 * slow).epsilon(1e-9));
    CHECK(periodic.fast.tensor == Approx(fast).epsilon(1e-6));
    CHECK(periodic.slow.vector == 0.0);
  }
  // Started there, a period ends where it began.
  const gpu::GovernorState periodic{gpu::Activity{slow, 0.0, 0.25 * slow}, gpu::Activity{fast, 0.0, 0.25 * fast}};
  const gpu::GovernorState end = one_period(periodic);
  CHECK(end.slow.tensor == Approx(slow).epsilon(1e-12));
  CHECK(end.fast.tensor == Approx(fast).epsilon(1e-9));
  // The next kernel's clock: the lower of the two loops' (the slow one:
  // 100 + 1000 r 0.758 + 200 x 0.25 x 0.758 = 700 W at r = 0.742; the fast
  // loop's 0.135 would allow more than f_max).
  CHECK(gpu::state_clock(p, periodic) == Approx((600.0 - 50.0 * slow) / (1000.0 * slow)).epsilon(1e-9));
  // A zero period has no fixed point to find: the end stands.
  const gpu::GovernorState same = gpu::periodic_start(p, periodic, end, sim::Duration::zero());
  CHECK(same.slow.tensor == end.slow.tensor);
  CHECK(same.fast.hbm == end.fast.hbm);
}

// The instantaneous limiter and a kernel's rest clock (power_model.h
// instant_clock / relative_speed, rest_clock.h arithmetic_activity), by hand.
TEST_CASE("power model: instantaneous limiter and speed against the rest clock", "[gpu][power]") {
  gpu::PowerParams p = flat_voltage();
  // No limiter: every kernel rests at f_max.
  CHECK(gpu::instant_clock(p, gpu::Activity{0.9, 0.0, 0.0}) == 1.0);
  // P(r) = 100 + 1000 x 0.9 x r (flat voltage, share 1): 820 W at r = 720 / 900 = 0.8.
  p.instant_cap_w = 820;
  CHECK(p.check().empty());
  CHECK(gpu::instant_clock(p, gpu::Activity{0.9, 0.0, 0.0}) == Approx(0.8).epsilon(1e-9));
  // A memory-bound kernel (100 + 200 x 0.9 = 280 W at f_max) is never held.
  CHECK(gpu::instant_clock(p, gpu::Activity{0.0, 0.0, 0.9}) == 1.0);
  // Share 1: speed is r over the rest clock; 1 at or above it.
  CHECK(gpu::relative_speed(p, 0.6, 0.8) == Approx(0.75));
  CHECK(gpu::relative_speed(p, 0.9, 0.8) == 1.0);
  // Share 0.5: 1 / (0.5 / 0.6 + 0.5) = 0.75 over 1 / (0.5 / 0.8 + 0.5) = 0.8889: 0.84375.
  p.clock_bound_share = 0.5;
  CHECK(gpu::relative_speed(p, 0.6, 0.8) == Approx(0.84375));
  // Its range: at or above the board cap, at most 1.6x it.
  p.instant_cap_w = 650;
  CHECK(p.check().find("instant_cap_w") != std::string::npos);
  p.instant_cap_w = 1200;
  CHECK(p.check().find("instant_cap_w") != std::string::npos);
  p.instant_cap_w = 0;
  p.attention_tensor_share = 0.2;
  CHECK(p.check().find("attention_tensor_share") != std::string::npos);
}

TEST_CASE("power model: a fused attention's arithmetic splits between tensor pipes and CUDA cores",
          "[gpu][power]") {
  gpu::PowerParams p = flat_voltage();
  p.attention_tensor_share = 0.675;
  gpu::KernelDesc gemm;
  gemm.unit = gpu::ExecUnit::tensor;
  gpu::KernelDesc attention = gemm;
  attention.fused_attention = true;
  gpu::KernelDesc copy;
  copy.unit = gpu::ExecUnit::memory;
  const gpu::Activity g = gpu::arithmetic_activity(p, gemm, 0.8);
  CHECK(g.tensor == Approx(0.8));
  CHECK(g.vector == 0.0);
  const gpu::Activity a = gpu::arithmetic_activity(p, attention, 0.8);
  CHECK(a.tensor == Approx(0.54));   // 0.8 x 0.675
  CHECK(a.vector == Approx(0.26));   // 0.8 x 0.325
  // Its power at f_max: 100 + 1000 x 0.54 + 400 x 0.26 = 744 W, the GEMM's 900 W.
  CHECK(gpu::board_power_w(p, a, 1.0) == Approx(744.0));
  CHECK(gpu::board_power_w(p, g, 1.0) == Approx(900.0));
  const gpu::Activity c = gpu::arithmetic_activity(p, copy, 0.8);
  CHECK(c.tensor == 0.0);
  CHECK(c.vector == 0.0);
}

// The loops' clock when the instantaneous limiter holds tensor work below
// it (power_model.h cap_clock with tensor_cap), by hand on flat voltage
// (phi(r) = r): a 0.9 tensor + 0.5 vector load draws 100 + 900 r + 200 r.
TEST_CASE("power model: the loops' clock with tensor work held below it", "[gpu][power]") {
  gpu::PowerParams p = flat_voltage();
  const gpu::Activity a{0.9, 0.5, 0.0};
  // Uncapped: 100 + 1100 r = 700 at r = 0.5455.
  CHECK(gpu::cap_clock(p, a, 700.0) == Approx(600.0 / 1100.0).epsilon(1e-9));
  CHECK(gpu::cap_clock(p, a, 700.0, 1.0) == gpu::cap_clock(p, a, 700.0));
  // Tensor work held at 0.4: 100 + 360 + 200 r = 700 at r = 1.2, so f_max.
  CHECK(gpu::cap_clock(p, a, 700.0, 0.4) == 1.0);
  // Held at 0.5: 100 + 450 + 200 r = 700 at r = 0.75; higher than uncapped.
  CHECK(gpu::cap_clock(p, a, 700.0, 0.5) == Approx(0.75).epsilon(1e-9));
}
