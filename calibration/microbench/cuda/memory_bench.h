// Memory-bound kernels: HBM copy (cudaMemcpyAsync and our own 16-byte
// vector kernel), streaming read and write, elementwise add and GELU, and
// our own layer norm, RMS norm and softmax (one CTA per row, fp32 math,
// bf16 in and out), over sizes from 1 MiB to several GiB. Bytes in each
// record count every byte read plus every byte written, once.
#pragma once

#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "gpu_timer.h"
#include "json_writer.h"
#include "nvml_probe.h"

namespace gcsim::microbench {

struct MemoryCase {
  std::string op;  // memcpy | copy | read | write | add | gelu | layer_norm | rms_norm | softmax
  long long elements = 0;  // bf16 elements per tensor (memcpy/copy/read/write: bytes / 2)
  long long rows = 0, cols = 0;  // row ops only
};

std::vector<MemoryCase> memory_grid(bool quick, size_t device_bytes);

class MemoryBench {
 public:
  MemoryBench(cudaStream_t stream, GpuTimer& timer, const NvmlProbe& nvml, size_t l2_bytes,
              int sm_count);
  JsonObject run(const MemoryCase& c);
  // Each kernel on a small input against a host reference.
  bool verify(std::vector<JsonObject>& records);
  // An empty kernel: launch spacing back to back, and in a CUDA graph.
  std::vector<JsonObject> launch_overhead();

 private:
  cudaStream_t stream_;
  GpuTimer& timer_;
  const NvmlProbe& nvml_;
  size_t l2_bytes_;
  int sm_count_;
};

}  // namespace gcsim::microbench
