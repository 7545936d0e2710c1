// A kernel that holds exactly k SMs of the GPU (both CTA slots of each), so that the
// kernels measured beside it run on the other SMs only (gcsim helper "memkern").
// Built as a shared library and driven from Python through ctypes:
//   nvcc -O2 -std=c++17 -gencode arch=compute_90,code=sm_90 -shared -Xcompiler -fPIC \
//        -o libsm_holder.so sm_holder.cu
// How it pins SMs: the grid is 2 CTAs per SM of 1024 threads each, so the thread limit
// (2048 per SM on Hopper) lets exactly two CTAs live on each SM and none of any other kernel
// beside them.  Every CTA records its %smid and waits at a grid barrier (safe: the whole grid
// fits at once on an idle GPU), so all CTAs are resident, two per SM, before any decides.
// Then an SM is held when its id's rank among the ids present is < k: its two CTAs spin
// (thread 0 polls a stop word in device memory every ~1 us with __nanosleep; the rest wait at
// __syncthreads, issuing nothing), and the CTAs on the other SMs exit.  The holders touch no
// HBM except one word per CTA per microsecond (an L2 atomic).  The last CTA to decide writes
// a ready word into mapped host memory, which the host polls before releasing the kernels it
// times.  Both the barrier and the spin give up after timeout_ns (globaltimer), and set a
// timed-out word, so a bad launch can never hang the measurement.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <thread>

namespace {

// Workspace layout (int32 words of a zeroed device buffer, >= 1024 words).
constexpr int kArrived = 0;   // CTAs that reached the barrier
constexpr int kDecided = 1;   // CTAs that decided hold / leave
constexpr int kStop = 2;      // set to 1 by the host's stream to release the holders
constexpr int kTimedOut = 3;  // 1 if the barrier or the spin gave up
constexpr int kHeldSms = 4;   // SMs held (counted by the held SMs' CTAs, /2)
constexpr int kSmTable = 16;  // [16, 16 + 256): CTAs per %smid
constexpr int kMaxSmid = 256;

__device__ __forceinline__ unsigned sm_id() {
  unsigned r;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
  return r;
}

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void __launch_bounds__(1024, 2)
    hold_sms(int hold, int* ws, volatile int* host_ready, unsigned long long timeout_ns) {
  __shared__ int s_hold;
  __shared__ int s_go;
  const unsigned sm = sm_id();
  if (threadIdx.x == 0) {
    const unsigned long long t0 = global_ns();
    if (sm < kMaxSmid) atomicAdd(&ws[kSmTable + sm], 1);
    __threadfence();
    atomicAdd(&ws[kArrived], 1);
    while (atomicAdd(&ws[kArrived], 0) < static_cast<int>(gridDim.x)) {
      if (global_ns() - t0 > timeout_ns) {
        atomicExch(&ws[kTimedOut], 1);
        break;
      }
      __nanosleep(200);
    }
    __threadfence();
    // Rank of this SM's id among the ids present.
    int rank = 0;
    for (unsigned s = 0; s < sm && s < kMaxSmid; ++s) rank += atomicAdd(&ws[kSmTable + s], 0) > 0;
    s_hold = (sm < kMaxSmid && rank < hold && atomicAdd(&ws[kTimedOut], 0) == 0) ? 1 : 0;
    if (s_hold) atomicAdd(&ws[kHeldSms], 1);
    __threadfence();
    if (atomicAdd(&ws[kDecided], 1) + 1 == static_cast<int>(gridDim.x)) {
      *host_ready = 1;
      __threadfence_system();
    }
  }
  __syncthreads();
  if (!s_hold) return;
  const unsigned long long t0 = global_ns();
  for (;;) {
    if (threadIdx.x == 0) {
      s_go = atomicAdd(&ws[kStop], 0) != 0;
      if (!s_go && global_ns() - t0 > timeout_ns) {
        atomicExch(&ws[kTimedOut], 1);
        s_go = 1;
      }
      if (!s_go) __nanosleep(1000);
    }
    __syncthreads();
    if (s_go) break;
    __syncthreads();
  }
}

volatile int* g_ready_host = nullptr;
int* g_ready_dev = nullptr;

}  // namespace

extern "C" {

// Launches the holder on `stream` (a cudaStream_t as an integer): grid = 2 * sm_count CTAs.
// Returns a cudaError_t (0 = launched).
int holder_launch(int hold, void* ws, int sm_count, unsigned long long timeout_ns, void* stream) {
  if (g_ready_host == nullptr) {
    void* p = nullptr;
    cudaError_t e = cudaHostAlloc(&p, sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable);
    if (e != cudaSuccess) return static_cast<int>(e);
    void* d = nullptr;
    e = cudaHostGetDevicePointer(&d, p, 0);
    if (e != cudaSuccess) return static_cast<int>(e);
    g_ready_host = static_cast<volatile int*>(p);
    g_ready_dev = static_cast<int*>(d);
  }
  *g_ready_host = 0;
  hold_sms<<<2 * sm_count, 1024, 0, static_cast<cudaStream_t>(stream)>>>(
      hold, static_cast<int*>(ws), g_ready_dev, timeout_ns);
  return static_cast<int>(cudaGetLastError());
}

// Polls the ready word from the host: 1 when every CTA has decided, 0 after timeout_s.
int holder_wait_ready(double timeout_s) {
  if (g_ready_host == nullptr) return 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (*g_ready_host == 0) {
    const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
    if (dt.count() > timeout_s) return 0;
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  return 1;
}

// Registers the kernel would use (to check it fits 2 CTAs of 1024 threads per SM).
int holder_regs() {
  cudaFuncAttributes a{};
  if (cudaFuncGetAttributes(&a, hold_sms) != cudaSuccess) return -1;
  return a.numRegs;
}

}  // extern "C"
