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

// The simulator's pending events point into a Gpu: it must outlive the run
// of the simulator it was built with.
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
  // duration; GEMMs launched meanwhile see fewer free SMs. SMs not free now
  // are taken from the next compute waves that finish, before any waiting
  // kernel gets them. Throws std::invalid_argument if holds would exceed
  // the GPU's SMs.
  void hold_sms(int count);
  // Gives back SMs of earlier holds (a part not yet granted is cancelled).
  void release_sms(int count);
  int free_sms() const;  // neither running tiles nor held
  int held_sms() const;  // held by communication kernels (granted so far)
  int busy_sms() const;  // running compute tiles

  // HBM capacity ledger (bytes). allocate() returns false when the request
  // would exceed capacity; the caller reports the OOM.
  bool allocate(sim::Bytes bytes);
  void free(sim::Bytes bytes);
  sim::Bytes memory_used() const;
  sim::Bytes memory_peak() const;

 private:
  class Impl;
  GpuSpec spec_;
  int rank_;
  std::unique_ptr<Impl> impl_;  // after spec_: it keeps a reference to it
};

}  // namespace gcsim::models::gpu
