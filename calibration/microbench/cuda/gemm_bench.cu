#include "gemm_bench.h"

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#include "check.h"
#include "device_buffer.h"

namespace gcsim::microbench {

namespace {

constexpr size_t kWorkspaceBytes = 32u << 20;  // cuBLAS's recommendation for Hopper
constexpr size_t kMaxRotationBytes = 8ull << 30;

struct DtypeConfig {
  ElemType in, out;
  cudaDataType_t in_type, out_type;
  cublasComputeType_t compute;
};

DtypeConfig dtype_config(const std::string& d) {
  if (d == "bf16") return {ElemType::bf16, ElemType::bf16, CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F};
  if (d == "fp16") return {ElemType::fp16, ElemType::fp16, CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F};
  if (d == "tf32") return {ElemType::fp32, ElemType::fp32, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32};
  if (d == "fp32") return {ElemType::fp32, ElemType::fp32, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F};
  // fp8: e4m3 operands, bf16 output (the usual scaled-matmul epilogue).
  return {ElemType::fp8_e4m3, ElemType::bf16, CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F};
}

// cuBLAS computes D (n x m, column-major) = op(A) (n x k) op(B) (k x m):
// the transpose of the row-major C[m,n]. Stored shapes per layout:
struct CublasShape {
  cublasOperation_t ta, tb;
  uint64_t a_rows, a_cols, lda, b_rows, b_cols, ldb;
};

CublasShape cublas_shape(const GemmCase& c) {
  const uint64_t m = c.m, n = c.n, k = c.k;
  if (c.layout == "NN") return {CUBLAS_OP_N, CUBLAS_OP_N, n, k, n, k, m, k};
  if (c.layout == "NT") return {CUBLAS_OP_N, CUBLAS_OP_T, n, k, n, m, k, m};
  return {CUBLAS_OP_T, CUBLAS_OP_N, k, n, k, k, m, k};  // TN
}

size_t align_up(size_t b) { return (b + 255) / 256 * 256; }

// One matmul set up for a case: descriptors, algorithm, rotated operands.
struct Matmul {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool have_algo = false;
  std::string error;
  ~Matmul() {
    if (op) cublasLtMatmulDescDestroy(op);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (d) cublasLtMatrixLayoutDestroy(d);
  }
};

void setup(Matmul& mm, cublasLtHandle_t h, const GemmCase& c, size_t workspace) {
  const DtypeConfig cfg = dtype_config(c.dtype);
  const CublasShape s = cublas_shape(c);
  check(cublasLtMatmulDescCreate(&mm.op, cfg.compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
  check(cublasLtMatmulDescSetAttribute(mm.op, CUBLASLT_MATMUL_DESC_TRANSA, &s.ta, sizeof s.ta),
        "set TRANSA");
  check(cublasLtMatmulDescSetAttribute(mm.op, CUBLASLT_MATMUL_DESC_TRANSB, &s.tb, sizeof s.tb),
        "set TRANSB");
  check(cublasLtMatrixLayoutCreate(&mm.a, cfg.in_type, s.a_rows, s.a_cols, s.lda), "layout A");
  check(cublasLtMatrixLayoutCreate(&mm.b, cfg.in_type, s.b_rows, s.b_cols, s.ldb), "layout B");
  check(cublasLtMatrixLayoutCreate(&mm.d, cfg.out_type, c.n, c.m, c.n), "layout D");
  cublasLtMatmulPreference_t pref;
  check(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &workspace, sizeof workspace),
        "set max workspace");
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t st =
      cublasLtMatmulAlgoGetHeuristic(h, mm.op, mm.a, mm.b, mm.d, mm.d, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS || found == 0) {
    mm.error = "cuBLASLt has no algorithm for this case (status " +
               std::to_string(static_cast<int>(st)) + ")";
    return;
  }
  mm.algo = result.algo;
  mm.have_algo = true;
}

// Host value of one stored element, for the fp64 reference.
double host_value(const std::vector<unsigned char>& raw, size_t i, ElemType t) {
  switch (t) {
    case ElemType::fp32: { float f; std::memcpy(&f, &raw[4 * i], 4); return f; }
    case ElemType::bf16: { __nv_bfloat16 v; std::memcpy(&v, &raw[2 * i], 2); return __bfloat162float(v); }
    case ElemType::fp16: { __half v; std::memcpy(&v, &raw[2 * i], 2); return __half2float(v); }
    case ElemType::fp8_e4m3: { __nv_fp8_e4m3 v; std::memcpy(&v, &raw[i], 1); return static_cast<float>(v); }
  }
  return 0;
}

std::vector<unsigned char> to_host(const void* p, size_t bytes) {
  std::vector<unsigned char> h(bytes);
  check(cudaMemcpy(h.data(), p, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
  return h;
}

void add_reading(JsonObject& o, const NvmlProbe& nvml) {
  const GpuReading r = nvml.read();
  if (!r.ok) return;
  o.add("sm_mhz_after", static_cast<int>(r.sm_mhz))
      .add("mem_mhz_after", static_cast<int>(r.mem_mhz))
      .add("power_w_after", r.power_w)
      .add("clock_event_reasons_after", static_cast<long long>(r.event_reasons));
}

}  // namespace

std::vector<GemmCase> gemm_grid(bool quick, bool has_fp8) {
  std::vector<GemmCase> v;
  auto add = [&](const char* dt, long long m, long long n, long long k, const char* layout,
                 const char* cls, const std::string& tag) {
    if (std::string(dt) == "fp8_e4m3" && !has_fp8) return;
    v.push_back({dt, m, n, k, layout, cls, tag});
  };
  if (quick) {
    add("bf16", 1024, 1024, 1024, "TN", "square", "quick");
    add("bf16", 1024, 1024, 1024, "NN", "square", "quick");
    add("bf16", 1024, 1024, 1024, "NT", "square", "quick");
    add("bf16", 16, 4096, 4096, "TN", "decode", "quick");
    add("fp8_e4m3", 1024, 1024, 1024, "TN", "square", "quick");
    add("tf32", 512, 512, 512, "TN", "square", "quick");
    add("fp32", 512, 512, 512, "TN", "square", "quick");
    return v;
  }
  for (long long s : {256, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192})
    add("bf16", s, s, s, "TN", "square", "square");
  for (long long s : {512, 1024, 2048, 4096, 8192}) add("fp16", s, s, s, "TN", "square", "square");
  for (long long s : {512, 1024, 2048, 4096, 8192}) add("fp8_e4m3", s, s, s, "TN", "square", "square");
  for (long long s : {1024, 2048, 4096, 8192}) add("tf32", s, s, s, "TN", "square", "square");
  for (long long s : {1024, 2048, 4096}) add("fp32", s, s, s, "TN", "square", "square");

  // Decode: M tokens against an N x K weight (Llama-style 4096/8192 hidden,
  // 14336 MLP).
  const long long nk[][2] = {{4096, 4096}, {8192, 8192}, {14336, 4096}, {4096, 14336}};
  for (auto& w : nk)
    for (long long m : {1, 2, 4, 8, 16, 32, 64, 128, 256})
      add("bf16", m, w[0], w[1], "TN", "decode", "decode w" + std::to_string(w[0]) + "x" + std::to_string(w[1]));
  for (long long m : {1, 16, 128}) add("fp16", m, 8192, 8192, "TN", "decode", "decode w8192x8192");
  for (int i = 0; i < 2; ++i)
    for (long long m : {16, 64, 256})
      add("fp8_e4m3", m, nk[i][0], nk[i][1], "TN", "decode",
          "decode w" + std::to_string(nk[i][0]) + "x" + std::to_string(nk[i][1]));

  // Training: 8192 tokens, hidden h, TP degree t; the four linear layers of
  // a transformer block (QKV, attention output, MLP up and down, 4h MLP).
  struct Linear { const char* name; long long n_mult, n_div, k_mult, k_div; };
  const Linear linears[] = {{"qkv", 3, 1, 1, 0}, {"proj", 1, 0, 1, 1}, {"up", 4, 1, 1, 0},
                            {"down", 1, 0, 4, 1}};
  // (n_div / k_div: 1 = divided by t, 0 = not)
  const long long tokens = 8192;
  auto shape = [&](const Linear& l, long long h, long long t, long long& n, long long& k) {
    n = l.n_mult * h / (l.n_div ? t : 1);
    k = l.k_mult * h / (l.k_div ? t : 1);
  };
  for (long long h : {4096, 8192})
    for (long long t : {1, 2, 4, 8})
      for (const Linear& l : linears) {
        long long n, k;
        shape(l, h, t, n, k);
        add("bf16", tokens, n, k, "TN", "train",
            "h" + std::to_string(h) + " tp" + std::to_string(t) + " " + l.name + " fwd");
      }
  for (long long t : {1, 4})
    for (const Linear& l : linears) {
      long long n, k;
      shape(l, 4096, t, n, k);
      const std::string tag = "h4096 tp" + std::to_string(t) + " " + l.name;
      add("bf16", tokens, k, n, "NN", "train_bwd", tag + " dgrad");
      add("bf16", n, k, tokens, "NT", "train_bwd", tag + " wgrad");
    }
  for (const Linear& l : linears) {
    long long n, k;
    shape(l, 4096, 1, n, k);
    add("fp16", tokens, n, k, "TN", "train", std::string("h4096 tp1 ") + l.name + " fwd");
  }
  for (long long t : {1, 8})
    for (const Linear& l : linears) {
      long long n, k;
      shape(l, 8192, t, n, k);
      add("fp8_e4m3", tokens, n, k, "TN", "train",
          "h8192 tp" + std::to_string(t) + " " + l.name + " fwd");
    }

  // Wave boundary on 132 SMs with 128x256 tiles: at 132 / 264 tiles and
  // just past (a few columns more give a second partial wave).
  const long long waves[][2] = {{1408, 3072}, {1536, 3072}, {1536, 2816}, {1536, 2880},
                                {2816, 3072}, {2880, 3072}};
  for (long long k : {4096, 8192})
    for (auto& w : waves) add("bf16", w[0], w[1], k, "TN", "wave", "wave");
  return v;
}

GemmBench::GemmBench(cudaStream_t stream, GpuTimer& timer, const NvmlProbe& nvml, size_t l2_bytes)
    : stream_(stream), timer_(timer), nvml_(nvml), l2_bytes_(l2_bytes) {
  cublasLtHandle_t h;
  check(cublasLtCreate(&h), "cublasLtCreate");
  handle_ = h;
  check(cudaMalloc(&workspace_, kWorkspaceBytes), "cudaMalloc workspace");
}

GemmBench::~GemmBench() {
  if (workspace_) cudaFree(workspace_);
  if (handle_) cublasLtDestroy(static_cast<cublasLtHandle_t>(handle_));
}

JsonObject GemmBench::run(const GemmCase& c) {
  const DtypeConfig cfg = dtype_config(c.dtype);
  JsonObject o;
  o.add("kind", "gemm").add("dtype", c.dtype).add("m", c.m).add("n", c.n).add("k", c.k)
      .add("layout", c.layout).add("class", c.shape_class).add("tag", c.tag);
  Matmul mm;
  setup(mm, static_cast<cublasLtHandle_t>(handle_), c, kWorkspaceBytes);
  if (!mm.have_algo) return o.add("error", mm.error);

  // Operand sets rotated so that their footprint is at least 3x L2.
  const size_t a_bytes = align_up(static_cast<size_t>(c.n) * c.k * elem_bytes(cfg.in));
  const size_t b_bytes = align_up(static_cast<size_t>(c.k) * c.m * elem_bytes(cfg.in));
  const size_t d_bytes = align_up(static_cast<size_t>(c.n) * c.m * elem_bytes(cfg.out));
  const size_t set = a_bytes + b_bytes + d_bytes;
  size_t sets = std::clamp<size_t>((3 * l2_bytes_ + set - 1) / set, 1, 512);
  if (set < (1ull << 30)) sets = std::max<size_t>(sets, 2);
  while (sets > 1 && sets * set > kMaxRotationBytes) --sets;
  DeviceBuffer a(a_bytes * sets), b(b_bytes * sets), d(d_bytes * sets);
  fill_random(a.get(), a.bytes() / elem_bytes(cfg.in), cfg.in, 11 + c.m, 1.0f, stream_);
  fill_random(b.get(), b.bytes() / elem_bytes(cfg.in), cfg.in, 23 + c.n, 1.0f, stream_);
  check(cudaStreamSynchronize(stream_), "fill operands");

  const float alpha = 1.0f, beta = 0.0f;
  auto h = static_cast<cublasLtHandle_t>(handle_);
  auto enqueue = [&](long long rep) {
    const size_t i = static_cast<size_t>(rep) % sets;
    void* dp = d.as<char>() + i * d_bytes;
    check(cublasLtMatmul(h, mm.op, &alpha, a.as<char>() + i * a_bytes, mm.a,
                         b.as<char>() + i * b_bytes, mm.b, &beta, dp, mm.d, dp, mm.d, &mm.algo,
                         workspace_, kWorkspaceBytes, stream_),
          "cublasLtMatmul");
  };
  TimingPlan plan;
  const TimingStats st = timer_.measure(enqueue, plan);
  const double flops = 2.0 * c.m * c.n * c.k;
  o.add("time_us", st.time_us).add("median_us", st.median_us).add("min_us", st.min_us)
      .add("p90_us", st.p90_us).add("reps", st.reps).add("batches", st.batches)
      .add("batch_reps", st.batch_reps).add("backlog_ok", st.backlog_ok)
      .add("host_enqueue_us", st.host_enqueue_us).add("rot_sets", static_cast<long long>(sets))
      .add("tflops", flops / (st.time_us * 1e-6) / 1e12)
      .add("bytes_min", static_cast<double>(a_bytes + b_bytes + d_bytes));
  add_reading(o, nvml_);
  // Rest after heavy cases so the next one starts on a cool, unthrottled
  // GPU (H100 SXM hits its 700 W cap after ~30 ms of large GEMMs).
  const double busy_us = st.time_us * (st.reps + st.batches * st.batch_reps + plan.warmup + 1);
  if (busy_us > 5000) std::this_thread::sleep_for(std::chrono::milliseconds(150));
  return o;
}

bool GemmBench::verify(std::vector<JsonObject>& records) {
  bool all_ok = true;
  const long long m = 96, n = 160, k = 256;
  struct V { const char* dtype; const char* layout; double bound; };
  // Bounds: fp32 accumulation of k=256 products of inputs in [-1,1); the
  // output rounding dominates (bf16 2^-9, fp16 2^-12, tf32 inputs 2^-11).
  const V checks[] = {{"fp32", "TN", 1e-5},  {"tf32", "TN", 5e-3}, {"bf16", "TN", 1e-2},
                      {"bf16", "NN", 1e-2},  {"bf16", "NT", 1e-2}, {"fp16", "TN", 5e-3},
                      {"fp8_e4m3", "TN", 1e-2}};
  for (const V& v : checks) {
    GemmCase c{v.dtype, m, n, k, v.layout, "verify", "verify"};
    const DtypeConfig cfg = dtype_config(c.dtype);
    Matmul mm;
    setup(mm, static_cast<cublasLtHandle_t>(handle_), c, kWorkspaceBytes);
    JsonObject o;
    o.add("check", "gemm").add("dtype", c.dtype).add("layout", c.layout);
    if (!mm.have_algo) {
      records.push_back(o.add("error", mm.error));
      if (c.dtype != "fp8_e4m3") all_ok = false;
      continue;
    }
    const size_t ea = elem_bytes(cfg.in), eo = elem_bytes(cfg.out);
    DeviceBuffer a(n * k * ea), b(k * m * ea), d(align_up(n * m * eo));
    fill_random(a.get(), n * k, cfg.in, 5, 1.0f, stream_);
    fill_random(b.get(), k * m, cfg.in, 7, 1.0f, stream_);
    fill_poison(d.get(), d.bytes(), stream_);
    const float alpha = 1.0f, beta = 0.0f;
    check(cublasLtMatmul(static_cast<cublasLtHandle_t>(handle_), mm.op, &alpha, a.get(), mm.a,
                         b.get(), mm.b, &beta, d.get(), mm.d, d.get(), mm.d, &mm.algo, workspace_,
                         kWorkspaceBytes, stream_),
          "cublasLtMatmul verify");
    check(cudaStreamSynchronize(stream_), "verify sync");
    const auto ha = to_host(a.get(), n * k * ea), hb = to_host(b.get(), k * m * ea),
               hd = to_host(d.get(), n * m * eo);
    // Row-major operands of C[m,n] = P[m,k] Q[k,n] read from cuBLAS's storage.
    auto Q = [&](long long p, long long j) {
      return host_value(ha, c.layout == "TN" ? p + j * k : j + p * n, cfg.in);
    };
    auto P = [&](long long i, long long p) {
      return host_value(hb, c.layout == "NT" ? i + p * m : p + i * k, cfg.in);
    };
    double num = 0, den = 0;
    bool finite = true;
    for (long long i = 0; i < m; ++i)
      for (long long j = 0; j < n; ++j) {
        double ref = 0;
        for (long long p = 0; p < k; ++p) ref += P(i, p) * Q(p, j);
        const double got = host_value(hd, j + i * n, cfg.out);
        finite = finite && std::isfinite(got);
        num += (got - ref) * (got - ref);
        den += ref * ref;
      }
    const double rel = finite ? std::sqrt(num / den) : INFINITY;
    const bool ok = rel <= v.bound;
    all_ok = all_ok && ok;
    records.push_back(o.add("rel_error", finite ? rel : -1.0).add("bound", v.bound).add("ok", ok));
  }
  return all_ok;
}

}  // namespace gcsim::microbench
