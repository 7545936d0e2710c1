#include "models/gpu/power_loop.h"

#include <algorithm>
#include <functional>
#include <stdexcept>

#include "models/gpu/gpu.h"
#include "models/gpu/kernel_cost_model.h"
#include "models/gpu/rest_clock.h"
#include "sim/engine/simulator.h"

namespace gcsim::models::gpu {

namespace {

// One GPU under the clock model on its own simulator, run for `seconds`;
// the loops measure over the second half, as the bench does.
struct GovernedRun {
  GovernedRun(const GpuSpec& spec, double seconds, double pinned = 0.0)
      : gpu(sim, spec, 0, clock_model(pinned)),
        end(sim::Time::zero() + sim::Duration::from_seconds(seconds)),
        half(sim::Time::zero() + sim::Duration::from_seconds(seconds / 2)) {}
  static GpuOptions clock_model(double pinned) {
    GpuOptions o;
    o.clock_model = true;
    o.pinned_clock = pinned;
    return o;
  }
  sim::Simulator sim;
  Gpu gpu;
  sim::Time end, half;
};
KernelDesc gemm(const GpuSpec& spec, int64_t m, int64_t n, int64_t k, Dtype dtype) {
  return gemm_kernel(spec, GemmShape{m, n, k, 1, dtype});
}

KernelDesc elementwise(const GpuSpec& spec, int inputs) {
  MemoryOpShape e;
  e.kind = MemoryOpKind::elementwise;
  e.elements = int64_t{256} << 20;  // 256 Mi bf16 elements: 512 MiB per tensor
  e.inputs = inputs;
  return memory_kernel(spec, e);
}

KernelDesc copy_1gib(const GpuSpec& spec) {
  MemoryOpShape c;
  c.kind = MemoryOpKind::memcpy;
  c.elements = int64_t{1} << 30;  // bytes
  c.dtype = Dtype::int8;
  return memory_kernel(spec, c);
}
}  // namespace

std::vector<NamedKernel> power_bench_kernels(const GpuSpec& spec) {
  return {{"gemm", gemm(spec, 8192, 8192, 8192, Dtype::bf16)},
          {"copy", copy_1gib(spec)},
          {"sigmoid", elementwise(spec, 1)},
          {"add", elementwise(spec, 2)},
          {"mul", elementwise(spec, 1)},  // a tensor times a scalar
          {"gemm_wide", gemm(spec, 16384, 16384, 4096, Dtype::bf16)},
          {"gemm_fp32", gemm(spec, 8192, 8192, 8192, Dtype::fp32)},
          {"gemm_decode", gemm(spec, 256, 8192, 8192, Dtype::bf16)},  // --set bursts' decode pattern
          // --set mix's roofline sweep: M x 8192 @ 8192 x 8192, the weights streamed from HBM
          {"gemm_m8", gemm(spec, 8, 8192, 8192, Dtype::bf16)},
          {"gemm_m32", gemm(spec, 32, 8192, 8192, Dtype::bf16)},
          {"gemm_m64", gemm(spec, 64, 8192, 8192, Dtype::bf16)},
          {"gemm_m128", gemm(spec, 128, 8192, 8192, Dtype::bf16)},
          {"gemm_m256", gemm(spec, 256, 8192, 8192, Dtype::bf16)},
          {"gemm_m512", gemm(spec, 512, 8192, 8192, Dtype::bf16)},
          {"gemm_m1024", gemm(spec, 1024, 8192, 8192, Dtype::bf16)},
          {"gemm_m2048", gemm(spec, 2048, 8192, 8192, Dtype::bf16)},
          {"gemm_m8192", gemm(spec, 8192, 8192, 8192, Dtype::bf16)}};
}

KernelDesc power_bench_kernel(const GpuSpec& spec, const std::string& name) {
  std::string names;
  for (auto& k : power_bench_kernels(spec)) {
    if (k.name == name) return k.kernel;
    names += (names.empty() ? "" : ", ") + k.name;
  }
  throw std::invalid_argument("no power bench kernel '" + name + "' (there are " + names + ")");
}

KernelActivity pinned_kernel_activity(const GpuSpec& spec, const KernelDesc& kernel, double clock, int runs) {
  if (runs < 2) throw std::invalid_argument("pinned_kernel_activity needs at least 2 runs");
  sim::Simulator s;
  GpuOptions options;
  options.clock_model = true;
  options.pinned_clock = clock;
  Gpu g(s, spec, 0, options);
  KernelActivity sum;
  int done = 0;
  Activity at_launch;
  sim::Time launched;
  std::function<void()> next = [&] {
    launched = s.now();
    at_launch = g.governor()->activity_seconds(s.now());
    g.launch(kernel, [&](sim::Time start, sim::Time end) {
      // Nothing else runs: what the governor integrated since the launch
      // is this kernel's (the launch latency before it adds nothing).
      const Activity now = g.governor()->activity_seconds(end);
      const double length = (end - start).seconds();
      if (++done > 1) {
        sum.duration_s += length;
        sum.launch_gap_s += (start - launched).seconds();
        sum.activity.tensor += (now.tensor - at_launch.tensor) / length;
        sum.activity.vector += (now.vector - at_launch.vector) / length;
        sum.activity.hbm += (now.hbm - at_launch.hbm) / length;
        sum.activity.hbm_unshared += (now.hbm_unshared - at_launch.hbm_unshared) / length;
      }
      if (done < runs) next();
    });
  };
  s.call_at(sim::Time::zero(), next);
  s.run();
  const double n = runs - 1;
  return KernelActivity{sum.duration_s / n, sum.launch_gap_s / n,
                        Activity{sum.activity.tensor / n, sum.activity.vector / n, sum.activity.hbm / n,
                                 sum.activity.hbm_unshared / n}};
}

double governed_burst_speed(const GpuSpec& spec, const KernelDesc& kernel, double period_s, int per_burst,
                            double seconds) {
  if (!(period_s > 0.0) || per_burst < 1 || !(seconds > period_s)) {
    throw std::invalid_argument("governed_burst_speed needs a period, kernels per burst and time for bursts");
  }
  GovernedRun run(spec, seconds);
  sim::Simulator& s = run.sim;
  Gpu& g = run.gpu;
  const sim::Time end = run.end, half = run.half;
  const sim::Duration period = sim::Duration::from_seconds(period_s);
  double busy_s = 0.0;  // summed kernel time in the second half
  int counted = 0;
  int left = 0;
  sim::Time burst_start;
  std::function<void()> burst;
  std::function<void()> next = [&] {
    g.launch(kernel, [&](sim::Time start, sim::Time stop) {
      if (start >= half) {
        busy_s += (stop - start).seconds();
        ++counted;
      }
      if (--left > 0) return next();
      const sim::Time due = burst_start + period;
      if (due < end) s.call_at(due > s.now() ? due : s.now(), burst);
    });
  };
  burst = [&] {
    burst_start = s.now();
    left = per_burst;
    next();
  };
  s.call_at(sim::Time::zero(), burst);
  s.run();
  if (counted == 0) throw std::invalid_argument("governed_burst_speed: no kernel ran in the second half");
  // The kernel at full clock: pinned, back to back (its launch latency excluded, as CUDA events do).
  const double full_s = pinned_kernel_activity(spec, kernel, 1.0).duration_s;
  return full_s * counted / busy_s;
}

double loop_pass_seconds(const GpuSpec& spec, const std::vector<KernelDesc>& loop, double seconds,
                         double pinned) {
  if (loop.empty() || !(seconds > 0.0)) throw std::invalid_argument("loop_pass_seconds needs kernels and time");
  GovernedRun run(spec, seconds, pinned);
  sim::Simulator& s = run.sim;
  Gpu& g = run.gpu;
  const sim::Time end = run.end, half = run.half;
  size_t i = 0;
  int passes = 0;  // whole passes that started in the second half
  sim::Time pass_start, first_start, last_end;
  std::function<void()> next = [&] {
    if (i % loop.size() == 0) {
      if (s.now() >= end) return;
      pass_start = s.now();
    }
    const bool last = (i + 1) % loop.size() == 0;
    g.launch(loop[i++ % loop.size()], [&, last](sim::Time, sim::Time stop) {
      if (last && pass_start >= half) {
        if (passes++ == 0) first_start = pass_start;
        last_end = stop;
      }
      next();
    });
  };
  s.call_at(sim::Time::zero(), next);
  s.run();
  if (passes == 0) throw std::invalid_argument("loop_pass_seconds: no whole pass in the second half");
  return (last_end - first_start).seconds() / passes;
}

SettledLoop settled_loop(const GpuSpec& spec, const KernelDesc& kernel, double seconds) {
  if (!(seconds > 0.0)) throw std::invalid_argument("settled_loop needs time");
  GovernedRun run(spec, seconds);
  sim::Simulator& s = run.sim;
  Gpu& g = run.gpu;
  const sim::Time end = run.end;
  std::function<void()> next = [&] {
    if (s.now() >= end) return;
    g.launch(kernel, [&](sim::Time, sim::Time) { next(); });
  };
  s.call_at(sim::Time::zero(), next);
  s.run();
  // The clock a kernel starting at the last update would get (ClockGovernor::clock).
  const ClockGovernor& gov = *g.governor();
  const PowerParams& p = spec.power;
  double clock = state_clock(p, GovernorState{gov.averaged(), p.fast_loop() ? gov.averaged_fast() : gov.averaged()});
  if (p.instant_limit()) {
    clock = std::min(clock, cap_clock(p, rest_activity(spec, kernel), state_instant_budget_w(p, gov.averaged())));
  }
  return SettledLoop{clock, gov.averaged()};
}

namespace {
// Mean duration (s) of each kernel of `loop` over the second half of
// `seconds` back to back from rest (pinned > 0: the clock held there).
std::vector<double> loop_kernel_seconds(const GpuSpec& spec, const std::vector<KernelDesc>& loop,
                                        double seconds, double pinned) {
  if (loop.empty() || !(seconds > 0.0)) throw std::invalid_argument("loop_kernel_seconds needs kernels and time");
  GovernedRun run(spec, seconds, pinned);
  sim::Simulator& s = run.sim;
  Gpu& g = run.gpu;
  const sim::Time end = run.end, half = run.half;
  std::vector<double> sum(loop.size(), 0.0);
  std::vector<int> count(loop.size(), 0);
  size_t i = 0;
  std::function<void()> next = [&] {
    if (i % loop.size() == 0 && s.now() >= end) return;
    const size_t at = i++ % loop.size();
    g.launch(loop[at], [&, at](sim::Time start, sim::Time stop) {
      if (start >= half) {
        sum[at] += (stop - start).seconds();
        ++count[at];
      }
      next();
    });
  };
  s.call_at(sim::Time::zero(), next);
  s.run();
  for (size_t k = 0; k < loop.size(); ++k) {
    if (count[k] == 0) throw std::invalid_argument("loop_kernel_seconds: a kernel never ran in the second half");
    sum[k] /= count[k];
  }
  return sum;
}
}  // namespace

std::vector<double> governed_loop_kernel_speeds(const GpuSpec& spec, const std::vector<KernelDesc>& loop,
                                                double seconds) {
  const std::vector<double> rested = loop_kernel_seconds(spec, loop, 0.05, 1.0);
  const std::vector<double> governed = loop_kernel_seconds(spec, loop, seconds, 0.0);
  std::vector<double> speed(loop.size());
  for (size_t k = 0; k < loop.size(); ++k) speed[k] = rested[k] / governed[k];
  return speed;
}

double governed_loop_speed(const GpuSpec& spec, const std::vector<KernelDesc>& loop, double seconds) {
  // The rested pass: a few passes at f_max are enough (every pass is alike).
  const double rested = loop_pass_seconds(spec, loop, 0.05, 1.0);
  return rested / loop_pass_seconds(spec, loop, seconds);
}

double governed_loop_clock(const GpuSpec& spec, const std::vector<KernelDesc>& loop, double seconds) {
  if (loop.empty() || !(seconds > 0.0)) throw std::invalid_argument("governed_loop_clock needs kernels and time");
  GovernedRun run(spec, seconds);
  sim::Simulator& s = run.sim;
  Gpu& g = run.gpu;
  const sim::Time end = run.end, half = run.half;
  double weighted = 0, total = 0;
  size_t i = 0;
  std::function<void()> next = [&] {
    if (s.now() >= end) return;
    const KernelDesc& k = loop[i++ % loop.size()];
    g.launch(k, [&](sim::Time, sim::Time) { next(); });
  };
  // The clock a kernel starting then would get, as the governor moves it,
  // held between reports (the listener reports moves of 1 MHz or more).
  sim::Time last = sim::Time::zero();
  double last_clock = 1.0;
  const double max_mhz = spec.sm_clock_ghz * 1e3;
  g.set_power_listener([&](sim::Time t, double mhz, double) {
    if (t > half) {
      const sim::Time from = last > half ? last : half;
      weighted += last_clock * (t - from).seconds();
      total += (t - from).seconds();
    }
    last = t;
    last_clock = mhz / max_mhz;
  });
  s.call_at(sim::Time::zero(), next);
  s.run();
  if (!(total > 0.0)) return last_clock;
  return weighted / total;
}

}  // namespace gcsim::models::gpu
