// One GPU: an SM array and an HBM stack shared by the kernels running on it,
// and an HBM capacity ledger. Kernels run as waves of tiles over the SMs that
// are free when each wave starts, so wave quantization and the slowdown of a
// GEMM beside an SM-holding communication kernel both appear.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "models/gpu/gpu_spec.h"
#include "models/gpu/kernel.h"
#include "sim/simulator.h"

namespace gcsim::models::gpu {

// Called when a kernel finishes: the time its first tile started on an SM
// and the time its last tile finished.
using KernelDone = std::function<void(sim::Time start, sim::Time end)>;

class Gpu {
 public:
  Gpu(sim::Simulator& sim, const GpuSpec& spec, int rank);
  ~Gpu();
  Gpu(const Gpu&) = delete;
  Gpu& operator=(const Gpu&) = delete;

  const GpuSpec& spec() const { return spec_; }
  int rank() const { return rank_; }

  // Starts `kernel` now (after the launch latency); `done` fires at its end.
  void launch(const KernelDesc& kernel, KernelDone done);

  // Communication kernels hold SMs (one per NCCL channel) for their whole
  // duration; GEMMs launched meanwhile see fewer free SMs. Returns the number
  // actually held (never more than free + those freed by later waves).
  void hold_sms(int count);
  void release_sms(int count);
  int free_sms() const;

  // HBM capacity ledger (bytes). allocate() returns false when the request
  // would exceed capacity; the caller reports the OOM.
  bool allocate(sim::Bytes bytes);
  void free(sim::Bytes bytes);
  sim::Bytes memory_used() const { return memory_used_; }
  sim::Bytes memory_peak() const { return memory_peak_; }

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
  sim::Simulator& sim_;
  GpuSpec spec_;
  int rank_;
  sim::Bytes memory_used_{0};
  sim::Bytes memory_peak_{0};
};

}  // namespace gcsim::models::gpu
