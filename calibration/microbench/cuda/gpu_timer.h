// Times work enqueued on one stream with CUDA events, the way the
// calibration needs it:
//  - warm-up repetitions first (module load, heuristics, clocks);
//  - the stream is back-logged with a spin kernel before each timed phase,
//    so the GPU never waits for the host while timing (checked: the spin
//    must still be running when the last repetition has been enqueued);
//  - phase 1: one event pair around each repetition -> median, min, p90;
//  - phase 2: batches of back-to-back repetitions with events only at the
//    batch ends -> the median over batches of (batch time / repetitions):
//    the spacing of this kernel in a stream of kernels, which is what the
//    simulator's per-kernel time (launch latency + waves) stands for.
// The enqueue callback gets a running repetition index, so callers rotate
// among input sets (L2 defeated) without keeping their own counter.
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <vector>

namespace gcsim::microbench {

struct TimingPlan {
  int warmup = 3;
  double phase1_target_us = 10'000;  // wall budget of the per-repetition phase
  int min_reps = 7, max_reps = 100;
  double batch_target_us = 400;      // GPU time of one back-to-back batch
  int batches = 7, max_batch_reps = 64;
};

struct TimingStats {
  double time_us = 0;  // back-to-back spacing (phase 2 median)
  double median_us = 0, min_us = 0, p90_us = 0;  // per-repetition event pairs (phase 1)
  int reps = 0, batches = 0, batch_reps = 0;
  double host_enqueue_us = 0;  // host cost of enqueuing one repetition
  bool backlog_ok = true;      // the GPU had queued work throughout both phases
};

class GpuTimer {
 public:
  explicit GpuTimer(cudaStream_t stream);
  ~GpuTimer();
  GpuTimer(const GpuTimer&) = delete;
  GpuTimer& operator=(const GpuTimer&) = delete;

  TimingStats measure(const std::function<void(long long rep)>& enqueue, const TimingPlan& plan);
  // Keeps the GPU busy for about `us` microseconds (clock64 spin, one CTA).
  void spin_us(double us);
  double cycles_per_us() const { return cycles_per_us_; }

 private:
  cudaEvent_t event(size_t i);
  cudaStream_t stream_;
  double cycles_per_us_ = 1000;
  long long rep_ = 0;
  std::vector<cudaEvent_t> events_;
};

double median_of(std::vector<double> v);
double percentile_of(std::vector<double> v, double p);

}  // namespace gcsim::microbench
