// The SM clock as the SMs count it, beside any workload (issue 16, clocks: what NVML's
// clocks.sm reports against the cycles a kernel really gets).
// Built as a shared library and driven from Python through ctypes (clock_truth_bench.py):
//   nvcc -O2 -std=c++17 -gencode arch=compute_90,code=sm_90 -shared -Xcompiler -fPIC \
//        -o libclock_probe.so clock_probe.cu
// probe_launch: one thread on one SM writes (globaltimer ns, clock64 SM cycles) pairs every
// interval_ns until the stop word turns 1 or max_samples are written; its count goes to
// out[0]. The SM clock over any interval is then the cycles between the two times over the
// nanoseconds (every SM of a Hopper GPU runs on the one graphics clock). The thread spins on
// globaltimer between samples (no __nanosleep: a sleeping SM might gate the counter it reads);
// one warp issues a negligible share of one SM and moves no HBM.
// mark_launch: one thread writes globaltimer into marks[index] when the stream reaches it,
// so a workload's kernel boundaries land on the probe's time base.
// stop_launch: sets the stop word from a stream (after the workload it follows).
#include <cuda_runtime.h>

#include <cstdint>

namespace {

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// out layout: out[0] = samples written; then pairs (ns, cycles) from out[2].
__global__ void clock_probe(unsigned long long* out, int max_samples, unsigned long long interval_ns,
                            volatile int* stop) {
  unsigned long long next = global_ns();
  int i = 0;
  for (; i < max_samples; ++i) {
    const unsigned long long t = global_ns();
    const long long c = clock64();
    out[2 + 2 * i] = t;
    out[3 + 2 * i] = static_cast<unsigned long long>(c);
    if (*stop) {
      ++i;
      break;
    }
    next += interval_ns;
    while (global_ns() < next) {
    }
  }
  out[0] = static_cast<unsigned long long>(i);
}

__global__ void mark(unsigned long long* marks, int index) { marks[index] = global_ns(); }

__global__ void set_stop(int* stop) { *stop = 1; }

}  // namespace

extern "C" int probe_launch(void* out, int max_samples, unsigned long long interval_ns, void* stop,
                            void* stream) {
  clock_probe<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<unsigned long long*>(out), max_samples, interval_ns, static_cast<int*>(stop));
  return static_cast<int>(cudaGetLastError());
}

extern "C" int mark_launch(void* marks, int index, void* stream) {
  mark<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<unsigned long long*>(marks), index);
  return static_cast<int>(cudaGetLastError());
}

extern "C" int stop_launch(void* stop, void* stream) {
  set_stop<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<int*>(stop));
  return static_cast<int>(cudaGetLastError());
}
