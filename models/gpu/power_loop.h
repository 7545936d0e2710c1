// The power measurement's loops run through the Gpu runtime (issue 16):
// what the power fit needs from the runtime (each kernel's activity at a
// given SM clock) and what the fit is checked against (the clock the
// governor settles a loop at).
//
// The kernels are those of calibration/microbench/power_clock_bench.py:
// bf16 8192^3 GEMMs, 1 GiB copies, sigmoid/add/mul over 512 MiB bf16
// tensors, for the held-out set bf16 16384x4096 @ 4096x16384 GEMMs and
// fp32 8192^3 GEMMs on the CUDA cores, for the bursts set's decode
// pattern bf16 256x8192 @ 8192x8192 GEMMs, and for the mix set's roofline
// sweep bf16 M x 8192 @ 8192 x 8192 (gemm_m8 ... gemm_m8192).
#pragma once

#include <string>
#include <vector>

#include "models/gpu/gpu_spec.h"
#include "models/gpu/kernel.h"
#include "models/gpu/power_model.h"

namespace gcsim::models::gpu {

struct NamedKernel {
  std::string name;  // as power_clock_bench.py names its kernel kind
  KernelDesc kernel;
};

// Every kernel kind power_clock_bench.py runs, on `spec`.
std::vector<NamedKernel> power_bench_kernels(const GpuSpec& spec);
// One of them by name (std::invalid_argument naming the kinds if unknown).
KernelDesc power_bench_kernel(const GpuSpec& spec, const std::string& name);

// One kernel's mean over its runs, back to back at a held clock.
struct KernelActivity {
  double duration_s = 0.0;    // launch latency excluded
  double launch_gap_s = 0.0;  // from the launch to the start (the launch latency)
  Activity activity;        // time fractions of the whole GPU over its span
};

// `kernel` run back to back (`runs` times, the first discarded) on a GPU
// whose governor holds the SM clock at `clock` (fraction of f_max): the
// activity the runtime charges it, which the clock governor then averages.
KernelActivity pinned_kernel_activity(const GpuSpec& spec, const KernelDesc& kernel, double clock, int runs = 3);

// `loop` (kernels launched one after another, over and over) run from rest
// for `seconds` with the governor: the time-weighted mean SM clock
// fraction over the second half, as NVML's samples of a running loop read.
double governed_loop_clock(const GpuSpec& spec, const std::vector<KernelDesc>& loop, double seconds);

// `loop` run back to back from rest for `seconds` with the governor: its
// passes per second over the second half over those of the same loop with
// the clock held at f_max, as sustained_gemm.py's cycles measure it (its
// rested rate is the median of the first cycles, at full clock). The
// `pinned` form holds the clock at `pinned` of f_max throughout (1: rested).
double governed_loop_speed(const GpuSpec& spec, const std::vector<KernelDesc>& loop, double seconds);
// `kernel` back to back from rest for `seconds` with the governor: the
// governor's averaged activity (its slow loop's) and the clock it gives a
// kernel starting then, at the end. With an activity hold the averages see
// the highest level of the last hold, not the mean (a GEMM's narrower last
// wave is hidden from them), which only the runtime follows.
struct SettledLoop {
  double clock = 1.0;
  Activity averaged;
};
SettledLoop settled_loop(const GpuSpec& spec, const KernelDesc& kernel, double seconds);
// Per kernel of `loop` (same order): its mean time over the second half
// with the clock held at f_max over its mean time there with the governor,
// as power_clock_bench.py's per-kind steady / rested rates of a cycle read
// (its rested rate is the first kernels', at full clock).
std::vector<double> governed_loop_kernel_speeds(const GpuSpec& spec, const std::vector<KernelDesc>& loop,
                                                double seconds);
double loop_pass_seconds(const GpuSpec& spec, const std::vector<KernelDesc>& loop, double seconds,
                         double pinned = 0.0);

// Bursts of `per_burst` back-to-back `kernel`s, one starting every
// `period_s` (or as soon as the previous burst ends, if later), the GPU
// idle in between, from rest for `seconds`, with the governor: the
// kernels' throughput over the second half over that of a kernel run at
// full clock, as power_clock_bench.py's burst phases measure it (a host
// loop that launches a burst, waits for it, sleeps out the period).
double governed_burst_speed(const GpuSpec& spec, const KernelDesc& kernel, double period_s, int per_burst,
                            double seconds);

}  // namespace gcsim::models::gpu
