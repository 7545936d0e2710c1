#include "gpu_timer.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "check.h"

namespace gcsim::microbench {

namespace {

__global__ void spin_kernel(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

double elapsed_us(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0;
  check(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
  return 1000.0 * ms;
}

// True while the event's work has not yet run: the back-log still covers.
bool still_pending(cudaEvent_t e) {
  const cudaError_t q = cudaEventQuery(e);
  if (q == cudaErrorNotReady) {
    (void)cudaGetLastError();  // not an error; keep it out of later checks
    return true;
  }
  check(q, "cudaEventQuery");
  return false;
}

}  // namespace

double median_of(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double percentile_of(std::vector<double> v, double p) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const double pos = p * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

GpuTimer::GpuTimer(cudaStream_t stream) : stream_(stream) {
  // Calibrate the spin: clock64 counts SM cycles, so cycles per us follow
  // the SM clock of the moment; run twice so the second sees loaded clocks.
  const long long cycles = 4'000'000;
  for (int i = 0; i < 2; ++i) {
    check(cudaEventRecord(event(0), stream_), "cudaEventRecord");
    spin_kernel<<<1, 1, 0, stream_>>>(cycles);
    check_launch("spin_kernel");
    check(cudaEventRecord(event(1), stream_), "cudaEventRecord");
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    cycles_per_us_ = static_cast<double>(cycles) / elapsed_us(event(0), event(1));
  }
}

GpuTimer::~GpuTimer() {
  for (cudaEvent_t e : events_) cudaEventDestroy(e);
}

cudaEvent_t GpuTimer::event(size_t i) {
  while (events_.size() <= i) {
    cudaEvent_t e;
    check(cudaEventCreate(&e), "cudaEventCreate");
    events_.push_back(e);
  }
  return events_[i];
}

void GpuTimer::spin_us(double us) {
  spin_kernel<<<1, 1, 0, stream_>>>(static_cast<long long>(us * cycles_per_us_));
  check_launch("spin_kernel");
}

TimingStats GpuTimer::measure(const std::function<void(long long)>& enqueue,
                              const TimingPlan& plan) {
  TimingStats st;
  // Warm-up, timing the host side of enqueueing.
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  const auto h0 = std::chrono::steady_clock::now();
  for (int i = 0; i < plan.warmup; ++i) enqueue(rep_++);
  const auto h1 = std::chrono::steady_clock::now();
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize warm-up");
  st.host_enqueue_us =
      std::max(2.0, std::chrono::duration<double, std::micro>(h1 - h0).count() /
                        std::max(1, plan.warmup));
  // Events cost host time too (~2 us a pair); the spin must cover it all,
  // at the slowest SM clock: a factor 2 on the calibrated rate.
  const double per_rep_host_us = st.host_enqueue_us + 4.0;

  // One repetition alone for the size of the phases.
  spin_us(100);
  check(cudaEventRecord(event(0), stream_), "cudaEventRecord");
  enqueue(rep_++);
  check(cudaEventRecord(event(1), stream_), "cudaEventRecord");
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize estimate");
  const double est_us = std::max(0.5, elapsed_us(event(0), event(1)));

  // Phase 1: an event pair around each repetition.
  st.reps = static_cast<int>(std::clamp(std::ceil(plan.phase1_target_us / est_us),
                                        static_cast<double>(plan.min_reps),
                                        static_cast<double>(plan.max_reps)));
  event(2 * st.reps + 2);
  spin_us(std::min(2.0 * st.reps * per_rep_host_us + 100.0, 200'000.0));
  check(cudaEventRecord(event(0), stream_), "cudaEventRecord gate");
  for (int r = 0; r < st.reps; ++r) {
    check(cudaEventRecord(event(2 + 2 * r), stream_), "cudaEventRecord");
    enqueue(rep_++);
    check(cudaEventRecord(event(3 + 2 * r), stream_), "cudaEventRecord");
  }
  st.backlog_ok = still_pending(event(0));
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize phase 1");
  std::vector<double> per;
  for (int r = 0; r < st.reps; ++r) per.push_back(elapsed_us(event(2 + 2 * r), event(3 + 2 * r)));
  st.median_us = median_of(per);
  st.min_us = *std::min_element(per.begin(), per.end());
  st.p90_us = percentile_of(per, 0.9);

  // Phase 2: back-to-back batches.
  st.batches = plan.batches;
  st.batch_reps = static_cast<int>(std::clamp(std::ceil(plan.batch_target_us / est_us), 1.0,
                                              static_cast<double>(plan.max_batch_reps)));
  const int total = st.batches * st.batch_reps;
  event(st.batches + 2);
  spin_us(std::min(2.0 * total * st.host_enqueue_us + 2.0 * st.batches * 4.0 + 100.0, 200'000.0));
  check(cudaEventRecord(event(0), stream_), "cudaEventRecord gate");
  check(cudaEventRecord(event(1), stream_), "cudaEventRecord");
  for (int b = 0; b < st.batches; ++b) {
    for (int r = 0; r < st.batch_reps; ++r) enqueue(rep_++);
    check(cudaEventRecord(event(2 + b), stream_), "cudaEventRecord");
  }
  st.backlog_ok = still_pending(event(0)) && st.backlog_ok;
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize phase 2");
  std::vector<double> spacing;
  for (int b = 0; b < st.batches; ++b) {
    spacing.push_back(elapsed_us(event(1 + b), event(2 + b)) / st.batch_reps);
  }
  st.time_us = median_of(spacing);
  return st;
}

}  // namespace gcsim::microbench
