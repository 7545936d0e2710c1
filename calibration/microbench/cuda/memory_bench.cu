#include "memory_bench.h"

#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "check.h"
#include "device_buffer.h"

namespace gcsim::microbench {

namespace {

constexpr int kThreads = 256;
constexpr size_t kMaxRotationBytes = 16ull << 30;
constexpr float kNormEps = 1e-5f;

// 8 bf16 in one 16-byte word.
__device__ inline void unpack8(const uint4& w, float f[8]) {
  const __nv_bfloat162* p = reinterpret_cast<const __nv_bfloat162*>(&w);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 t = __bfloat1622float2(p[i]);
    f[2 * i] = t.x;
    f[2 * i + 1] = t.y;
  }
}

__device__ inline uint4 pack8(const float f[8]) {
  uint4 w;
  __nv_bfloat162* p = reinterpret_cast<__nv_bfloat162*>(&w);
#pragma unroll
  for (int i = 0; i < 4; ++i) p[i] = __floats2bfloat162_rn(f[2 * i], f[2 * i + 1]);
  return w;
}

// Grid-stride loops, four independent 16-byte accesses in flight per thread.
__global__ void copy_kernel(const uint4* __restrict__ in, uint4* __restrict__ out, size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    const uint4 a = in[i], b = in[i + stride], c = in[i + 2 * stride], d = in[i + 3 * stride];
    out[i] = a;
    out[i + stride] = b;
    out[i + 2 * stride] = c;
    out[i + 3 * stride] = d;
  }
  for (; i < n; i += stride) out[i] = in[i];
}

__global__ void read_kernel(const uint4* __restrict__ in, uint4* __restrict__ sink, size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  uint4 acc = make_uint4(0, 0, 0, 0);
  for (; i + 3 * stride < n; i += 4 * stride) {
    const uint4 a = in[i], b = in[i + stride], c = in[i + 2 * stride], d = in[i + 3 * stride];
    acc.x ^= a.x ^ b.x ^ c.x ^ d.x;
    acc.y ^= a.y ^ b.y ^ c.y ^ d.y;
    acc.z ^= a.z ^ b.z ^ c.z ^ d.z;
    acc.w ^= a.w ^ b.w ^ c.w ^ d.w;
  }
  for (; i < n; i += stride) {
    acc.x ^= in[i].x;
    acc.y ^= in[i].y;
    acc.z ^= in[i].z;
    acc.w ^= in[i].w;
  }
  // Never true on random data; keeps the loads from being optimised away.
  if (acc.x == 0x9e3779b9u && acc.y == 0x7f4a7c15u && acc.z == 0x1u && acc.w == 0x2u) sink[0] = acc;
}

__global__ void write_kernel(uint4* __restrict__ out, size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const uint4 v = make_uint4(0x3f803f80u, 0xbf803f80u, 0x3f003f80u, 0x3f80bf00u);  // bf16 +-1, 0.5
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += stride)
    out[i] = v;
}

__global__ void add_kernel(const uint4* __restrict__ a, const uint4* __restrict__ b,
                           uint4* __restrict__ c, size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    float x[8], y[8];
    unpack8(a[i], x);
    unpack8(b[i], y);
#pragma unroll
    for (int e = 0; e < 8; ++e) x[e] += y[e];
    c[i] = pack8(x);
  }
}

// The exact (erf) GELU, as PyTorch's default.
__global__ void gelu_kernel(const uint4* __restrict__ a, uint4* __restrict__ c, size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    float x[8];
    unpack8(a[i], x);
#pragma unroll
    for (int e = 0; e < 8; ++e) x[e] = 0.5f * x[e] * (1.0f + erff(x[e] * 0.70710678118654752f));
    c[i] = pack8(x);
  }
}

// Sum (or max) over the CTA; every thread gets the result.
template <bool kMax>
__device__ float block_reduce(float v, float* shared) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float other = __shfl_xor_sync(0xffffffffu, v, o);
    v = kMax ? fmaxf(v, other) : v + other;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // the previous call's readers are done with `shared`
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  const int warps = blockDim.x / 32;
  v = lane < warps ? shared[lane] : (kMax ? -INFINITY : 0.0f);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float other = __shfl_xor_sync(0xffffffffu, v, o);
    v = kMax ? fmaxf(v, other) : v + other;
  }
  return v;
}

// One CTA per row, each thread VPT 16-byte words of the row in registers.
template <int VPT, bool kRms>
__global__ void norm_kernel(const uint4* __restrict__ x, const uint4* __restrict__ gamma,
                            const uint4* __restrict__ beta, uint4* __restrict__ y, int vec_per_row) {
  __shared__ float red[32];
  const uint4* xr = x + static_cast<size_t>(blockIdx.x) * vec_per_row;
  uint4* yr = y + static_cast<size_t>(blockIdx.x) * vec_per_row;
  float v[VPT][8];
  float s = 0;
#pragma unroll
  for (int j = 0; j < VPT; ++j) {
    unpack8(xr[threadIdx.x + j * blockDim.x], v[j]);
#pragma unroll
    for (int e = 0; e < 8; ++e) s += v[j][e];
  }
  const float n = 8.0f * vec_per_row;
  const float mean = kRms ? 0.0f : block_reduce<false>(s, red) / n;
  float q = 0;
#pragma unroll
  for (int j = 0; j < VPT; ++j)
#pragma unroll
    for (int e = 0; e < 8; ++e) q += (v[j][e] - mean) * (v[j][e] - mean);
  const float rstd = rsqrtf(block_reduce<false>(q, red) / n + kNormEps);
#pragma unroll
  for (int j = 0; j < VPT; ++j) {
    const int idx = threadIdx.x + j * blockDim.x;
    float g[8], b[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    unpack8(gamma[idx], g);
    if (!kRms) unpack8(beta[idx], b);
#pragma unroll
    for (int e = 0; e < 8; ++e) v[j][e] = (v[j][e] - mean) * rstd * g[e] + b[e];
    yr[idx] = pack8(v[j]);
  }
}

template <int VPT>
__global__ void softmax_kernel(const uint4* __restrict__ x, uint4* __restrict__ y, int vec_per_row) {
  __shared__ float red[32];
  const uint4* xr = x + static_cast<size_t>(blockIdx.x) * vec_per_row;
  uint4* yr = y + static_cast<size_t>(blockIdx.x) * vec_per_row;
  float v[VPT][8];
  float m = -INFINITY;
#pragma unroll
  for (int j = 0; j < VPT; ++j) {
    unpack8(xr[threadIdx.x + j * blockDim.x], v[j]);
#pragma unroll
    for (int e = 0; e < 8; ++e) m = fmaxf(m, v[j][e]);
  }
  m = block_reduce<true>(m, red);
  float s = 0;
#pragma unroll
  for (int j = 0; j < VPT; ++j)
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      v[j][e] = __expf(v[j][e] - m);
      s += v[j][e];
    }
  const float inv = 1.0f / block_reduce<false>(s, red);
#pragma unroll
  for (int j = 0; j < VPT; ++j) {
#pragma unroll
    for (int e = 0; e < 8; ++e) v[j][e] *= inv;
    yr[threadIdx.x + j * blockDim.x] = pack8(v[j]);
  }
}

__global__ void empty_kernel() {}

// Threads per row and 16-byte words per thread for a row of `cols` bf16.
void row_launch_shape(long long cols, int& threads, int& vpt) {
  const long long vecs = cols / 8;
  vpt = vecs > 1024 ? 2 : 1;
  threads = static_cast<int>(vecs / vpt);
}

void launch_row_op(const std::string& op, const uint4* x, const uint4* gamma, const uint4* beta,
                   uint4* y, long long rows, long long cols, cudaStream_t s) {
  int threads, vpt;
  row_launch_shape(cols, threads, vpt);
  const int vec = static_cast<int>(cols / 8);
  const unsigned grid = static_cast<unsigned>(rows);
  if (op == "softmax") {
    if (vpt == 1) softmax_kernel<1><<<grid, threads, 0, s>>>(x, y, vec);
    else softmax_kernel<2><<<grid, threads, 0, s>>>(x, y, vec);
  } else if (op == "rms_norm") {
    if (vpt == 1) norm_kernel<1, true><<<grid, threads, 0, s>>>(x, gamma, beta, y, vec);
    else norm_kernel<2, true><<<grid, threads, 0, s>>>(x, gamma, beta, y, vec);
  } else {
    if (vpt == 1) norm_kernel<1, false><<<grid, threads, 0, s>>>(x, gamma, beta, y, vec);
    else norm_kernel<2, false><<<grid, threads, 0, s>>>(x, gamma, beta, y, vec);
  }
  check_launch(op.c_str());
}

bool is_row_op(const std::string& op) {
  return op == "layer_norm" || op == "rms_norm" || op == "softmax";
}

// Tensors read and written by one call (each of `elements` bf16).
void tensors_of(const std::string& op, int& reads, int& writes) {
  reads = 1;
  writes = 1;
  if (op == "read") writes = 0;
  if (op == "write") reads = 0;
  if (op == "add") reads = 2;
}

std::vector<unsigned char> to_host(const void* p, size_t bytes) {
  std::vector<unsigned char> h(bytes);
  check(cudaMemcpy(h.data(), p, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
  return h;
}

float bf16_at(const std::vector<unsigned char>& raw, size_t i) {
  __nv_bfloat16 v;
  std::memcpy(&v, &raw[2 * i], 2);
  return __bfloat162float(v);
}

}  // namespace

std::vector<MemoryCase> memory_grid(bool quick, size_t device_bytes) {
  std::vector<MemoryCase> v;
  const long long mib = 1 << 20;
  if (quick) {
    for (const char* op : {"memcpy", "copy", "read", "write", "add", "gelu"})
      v.push_back({op, 8 * mib, 0, 0});
    for (const char* op : {"layer_norm", "rms_norm", "softmax"}) v.push_back({op, 0, 4096, 4096});
    return v;
  }
  // Bytes per tensor 1 MiB .. 4 GiB (while three tensors fit in a quarter of memory).
  for (const char* op : {"memcpy", "copy", "read", "write"})
    for (long long b = mib; b <= 4096 * mib && 3 * static_cast<size_t>(b) < device_bytes / 4; b *= 2)
      v.push_back({op, b / 2, 0, 0});
  for (const char* op : {"add", "gelu"})
    for (long long b = mib; b <= 1024 * mib; b *= 4) v.push_back({op, b / 2, 0, 0});
  for (const char* op : {"layer_norm", "rms_norm", "softmax"})
    for (long long cols : {1024, 4096, 8192, 16384})
      for (long long total : {1 * mib, 4 * mib, 16 * mib, 64 * mib})
        v.push_back({op, 0, total / cols, cols});
  return v;
}

MemoryBench::MemoryBench(cudaStream_t stream, GpuTimer& timer, const NvmlProbe& nvml,
                         size_t l2_bytes, int sm_count)
    : stream_(stream), timer_(timer), nvml_(nvml), l2_bytes_(l2_bytes), sm_count_(sm_count) {}

JsonObject MemoryBench::run(const MemoryCase& c) {
  const bool row = is_row_op(c.op);
  const long long elements = row ? c.rows * c.cols : c.elements;
  const size_t tensor = static_cast<size_t>(elements) * 2;  // bf16
  int reads, writes;
  tensors_of(c.op, reads, writes);
  const size_t set = tensor * (reads + writes);
  size_t sets = std::clamp<size_t>((3 * l2_bytes_ + set - 1) / set, 1, 512);
  if (set < (1ull << 30)) sets = std::max<size_t>(sets, 2);
  while (sets > 1 && sets * set > kMaxRotationBytes) --sets;

  DeviceBuffer in(reads ? tensor * sets * reads : 16), out(writes ? tensor * sets : 16);
  DeviceBuffer params(row ? 2 * static_cast<size_t>(c.cols) * 2 : 16);
  if (reads) fill_random(in.get(), in.bytes() / 2, ElemType::bf16, 31 + elements, 1.0f, stream_);
  if (row) fill_random(params.get(), params.bytes() / 2, ElemType::bf16, 37, 1.0f, stream_);
  check(cudaStreamSynchronize(stream_), "fill memory inputs");

  const size_t vecs = tensor / 16;
  const unsigned grid =
      static_cast<unsigned>(std::min<size_t>((vecs + kThreads - 1) / kThreads, 8ull * sm_count_));
  const uint4* gamma = params.as<uint4>();
  const uint4* beta = gamma + c.cols / 8;
  auto enqueue = [&](long long rep) {
    const size_t i = static_cast<size_t>(rep) % sets;
    const char* x = in.as<char>() + i * tensor * reads;
    const uint4* x0 = reinterpret_cast<const uint4*>(x);
    const uint4* x1 = reinterpret_cast<const uint4*>(x + tensor);
    uint4* y = reinterpret_cast<uint4*>(out.as<char>() + (writes ? i * tensor : 0));
    if (c.op == "memcpy") {
      check(cudaMemcpyAsync(y, x0, tensor, cudaMemcpyDeviceToDevice, stream_), "cudaMemcpyAsync");
    } else if (c.op == "copy") {
      copy_kernel<<<grid, kThreads, 0, stream_>>>(x0, y, vecs);
      check_launch("copy_kernel");
    } else if (c.op == "read") {
      read_kernel<<<grid, kThreads, 0, stream_>>>(x0, out.as<uint4>(), vecs);
      check_launch("read_kernel");
    } else if (c.op == "write") {
      write_kernel<<<grid, kThreads, 0, stream_>>>(y, vecs);
      check_launch("write_kernel");
    } else if (c.op == "add") {
      add_kernel<<<grid, kThreads, 0, stream_>>>(x0, x1, y, vecs);
      check_launch("add_kernel");
    } else if (c.op == "gelu") {
      gelu_kernel<<<grid, kThreads, 0, stream_>>>(x0, y, vecs);
      check_launch("gelu_kernel");
    } else {
      launch_row_op(c.op, x0, gamma, beta, y, c.rows, c.cols, stream_);
    }
  };
  TimingPlan plan;
  const TimingStats st = timer_.measure(enqueue, plan);
  const double bytes = static_cast<double>(tensor) * (reads + writes);
  JsonObject o;
  o.add("kind", "memory").add("op", c.op).add("dtype", "bf16").add("elements", elements)
      .add("bytes_per_tensor", static_cast<long long>(tensor)).add("bytes", bytes);
  if (row) o.add("rows", c.rows).add("cols", c.cols);
  o.add("time_us", st.time_us).add("median_us", st.median_us).add("min_us", st.min_us)
      .add("p90_us", st.p90_us).add("reps", st.reps).add("batches", st.batches)
      .add("batch_reps", st.batch_reps).add("backlog_ok", st.backlog_ok)
      .add("host_enqueue_us", st.host_enqueue_us).add("rot_sets", static_cast<long long>(sets))
      .add("gbps", bytes / (st.time_us * 1e-6) / 1e9);
  if (!row && c.op != "memcpy") o.add("grid", static_cast<int>(grid)).add("threads", kThreads);
  const GpuReading r = nvml_.read();
  if (r.ok) o.add("sm_mhz_after", static_cast<int>(r.sm_mhz)).add("power_w_after", r.power_w);
  return o;
}

bool MemoryBench::verify(std::vector<JsonObject>& records) {
  const long long rows = 3, cols = 4096, n = rows * cols;
  const size_t bytes = n * 2;
  DeviceBuffer a(bytes), b(bytes), y(bytes), params(2 * cols * 2), sink(16);
  fill_random(a.get(), n, ElemType::bf16, 101, 3.0f, stream_);
  fill_random(b.get(), n, ElemType::bf16, 103, 1.0f, stream_);
  fill_random(params.get(), 2 * cols, ElemType::bf16, 107, 1.0f, stream_);
  check(cudaStreamSynchronize(stream_), "verify fill");
  const auto ha = to_host(a.get(), bytes), hb = to_host(b.get(), bytes),
             hp = to_host(params.get(), 2 * cols * 2);
  const size_t vecs = bytes / 16;
  bool all_ok = true;
  for (const char* op : {"copy", "add", "gelu", "layer_norm", "rms_norm", "softmax"}) {
    fill_poison(y.get(), bytes, stream_);
    const std::string o(op);
    if (o == "copy") copy_kernel<<<4, kThreads, 0, stream_>>>(a.as<uint4>(), y.as<uint4>(), vecs);
    if (o == "add") add_kernel<<<4, kThreads, 0, stream_>>>(a.as<uint4>(), b.as<uint4>(), y.as<uint4>(), vecs);
    if (o == "gelu") gelu_kernel<<<4, kThreads, 0, stream_>>>(a.as<uint4>(), y.as<uint4>(), vecs);
    check_launch(op);
    if (is_row_op(o))
      launch_row_op(o, a.as<uint4>(), params.as<uint4>(), params.as<uint4>() + cols / 8,
                    y.as<uint4>(), rows, cols, stream_);
    check(cudaStreamSynchronize(stream_), "verify kernel");
    const auto hy = to_host(y.get(), bytes);
    std::vector<double> ref(n);
    for (long long r = 0; r < rows; ++r) {
      double mean = 0, sq = 0, mx = -1e30, se = 0;
      for (long long c = 0; c < cols; ++c) {
        const double x = bf16_at(ha, r * cols + c);
        mean += x / cols;
        mx = std::max(mx, x);
      }
      for (long long c = 0; c < cols; ++c) {
        const double x = bf16_at(ha, r * cols + c);
        sq += (o == "rms_norm" ? x * x : (x - mean) * (x - mean)) / cols;
        se += std::exp(x - mx);
      }
      for (long long c = 0; c < cols; ++c) {
        const size_t i = r * cols + c;
        const double x = bf16_at(ha, i), g = bf16_at(hp, c), be = bf16_at(hp, cols + c);
        if (o == "copy") ref[i] = x;
        if (o == "add") ref[i] = x + bf16_at(hb, i);
        if (o == "gelu") ref[i] = 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
        if (o == "layer_norm") ref[i] = (x - mean) / std::sqrt(sq + kNormEps) * g + be;
        if (o == "rms_norm") ref[i] = x / std::sqrt(sq + kNormEps) * g;
        if (o == "softmax") ref[i] = std::exp(x - mx) / se;
      }
    }
    double num = 0, den = 0;
    bool finite = true;
    for (long long i = 0; i < n; ++i) {
      const double got = bf16_at(hy, i);
      finite = finite && std::isfinite(got);
      num += (got - ref[i]) * (got - ref[i]);
      den += ref[i] * ref[i];
    }
    const double rel = finite ? std::sqrt(num / den) : INFINITY;
    const double bound = o == "copy" ? 0.0 : 1e-2;  // bf16 output rounding is 2^-9
    const bool ok = finite && rel <= bound;
    all_ok = all_ok && ok;
    records.push_back(JsonObject().add("check", "memory").add("op", o)
                          .add("rel_error", finite ? rel : -1.0).add("bound", bound).add("ok", ok));
  }
  return all_ok;
}

std::vector<JsonObject> MemoryBench::launch_overhead() {
  std::vector<JsonObject> out;
  auto enqueue = [&](long long) {
    empty_kernel<<<1, 32, 0, stream_>>>();
    check_launch("empty_kernel");
  };
  TimingPlan plan;
  plan.warmup = 20;
  plan.max_reps = 200;
  plan.phase1_target_us = 1e9;  // always max_reps
  plan.batch_target_us = 1e9;   // always max_batch_reps
  plan.max_batch_reps = 200;
  const TimingStats st = timer_.measure(enqueue, plan);
  out.push_back(JsonObject().add("kind", "launch").add("mode", "empty_kernel")
                    .add("time_us", st.time_us).add("median_us", st.median_us)
                    .add("min_us", st.min_us).add("p90_us", st.p90_us).add("reps", st.reps)
                    .add("batch_reps", st.batch_reps).add("backlog_ok", st.backlog_ok)
                    .add("host_enqueue_us", st.host_enqueue_us)
                    .add("note", "time_us: spacing of back-to-back empty kernels on a stream; "
                                 "median_us: one event pair around each"));
  // The same kernels as nodes of a CUDA graph.
  const int nodes = 200;
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  cudaStream_t cap;
  check(cudaStreamCreateWithFlags(&cap, cudaStreamNonBlocking), "cudaStreamCreate");
  check(cudaStreamBeginCapture(cap, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  for (int i = 0; i < nodes; ++i) empty_kernel<<<1, 32, 0, cap>>>();
  check_launch("empty_kernel capture");
  check(cudaStreamEndCapture(cap, &graph), "cudaStreamEndCapture");
  check(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
  auto replay = [&](long long) { check(cudaGraphLaunch(exec, stream_), "cudaGraphLaunch"); };
  TimingPlan gplan;
  gplan.warmup = 3;
  gplan.min_reps = 20;
  gplan.max_reps = 20;
  const TimingStats gs = timer_.measure(replay, gplan);
  out.push_back(JsonObject().add("kind", "launch").add("mode", "cuda_graph_node")
                    .add("time_us", gs.time_us / nodes).add("median_us", gs.median_us / nodes)
                    .add("nodes", nodes).add("backlog_ok", gs.backlog_ok)
                    .add("note", "per kernel node of a replayed graph of 200 empty kernels"));
  check(cudaGraphExecDestroy(exec), "cudaGraphExecDestroy");
  check(cudaGraphDestroy(graph), "cudaGraphDestroy");
  check(cudaStreamDestroy(cap), "cudaStreamDestroy");
  return out;
}

}  // namespace gcsim::microbench
