// GEMMs through cuBLASLt over a grid of shapes: squares, the tall-skinny
// shapes of decode (M = tokens 1..256), transformer training shapes with
// tensor-parallel splits (forward, and the two backward GEMMs), and sizes
// at and just past a wave boundary, in bf16, fp16, fp8 (e4m3, where the GPU
// has it), tf32 and fp32. One record per case, with the shape in the
// simulator's terms: C[m,n] = A[m,k] B[k,n], row-major, as PyTorch sees it.
#pragma once

#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "gpu_timer.h"
#include "json_writer.h"
#include "nvml_probe.h"

namespace gcsim::microbench {

struct GemmCase {
  std::string dtype;   // bf16 | fp16 | fp8_e4m3 | tf32 | fp32
  long long m, n, k;   // C[m,n] = A[m,k] B[k,n]
  // PyTorch's three linear-layer GEMMs in cuBLAS's column-major terms:
  // "TN" forward (Y = X W^T), "NN" input gradient, "NT" weight gradient.
  std::string layout;
  std::string shape_class;  // square | decode | train | train_bwd | wave
  std::string tag;          // what the shape is, e.g. "h4096 tp2 qkv"
};

// The case list; `quick` keeps a few small cases (a smoke test of the build).
std::vector<GemmCase> gemm_grid(bool quick, bool has_fp8);

class GemmBench {
 public:
  GemmBench(cudaStream_t stream, GpuTimer& timer, const NvmlProbe& nvml, size_t l2_bytes);
  ~GemmBench();
  GemmBench(const GemmBench&) = delete;
  GemmBench& operator=(const GemmBench&) = delete;

  // Times one case; on a shape cuBLASLt cannot run, the record says why.
  JsonObject run(const GemmCase& c);
  // Every dtype and layout on a small shape against an fp64 host reference
  // (relative Frobenius error); false if any is off its bound.
  bool verify(std::vector<JsonObject>& records);

 private:
  cudaStream_t stream_;
  GpuTimer& timer_;
  const NvmlProbe& nvml_;
  size_t l2_bytes_;
  void* handle_ = nullptr;  // cublasLtHandle_t
  void* workspace_ = nullptr;
};

}  // namespace gcsim::microbench
