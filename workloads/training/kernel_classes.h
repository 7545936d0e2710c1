// Where a step's kernel time goes by kind of kernel, as torch.profiler's
// per-kernel table summed by class reads: GEMM, attention, elementwise
// (activations, residuals, casts, copies, rotary, cross entropy), norm,
// optimizer, communication (NCCL kernels and p2p transfers). Each class is
// the sum of its kernels' durations on an observed rank (overlapping
// kernels count each), averaged over the observed ranks; so unlike the
// step breakdown (step_breakdown.h) the classes need not sum to the step.
// `host_wait_s` is the time kernels were ready on the GPU but not yet
// issued by the framework's host (host_issue.h).
#pragma once

#include <array>
#include <string>
#include <vector>

#include "sim/engine/recorder.h"
#include "workloads/training/training_generator.h"

namespace gcsim::workloads::training {

enum class KernelClass { gemm, attention, elementwise, norm, optimizer, communication };
inline constexpr int kKernelClasses = 6;
const char* kernel_class_name(KernelClass k);

// The class of a training program's `op`, given the category the generator
// tagged it with.
KernelClass kernel_class(const WorkloadGraph& g, const Op& op, OpCategory category);

struct KernelClassTimes {
  std::array<double, kKernelClasses> seconds{};
  double kernels = 0;      // kernels and communication ops launched per step
  double host_wait_s = 0;  // GPU-ready kernels held back by the host
  // Communication from each rank's issue to its end (s): what a profiler's
  // NCCL kernel time counts, the wait for the peers included (an
  // overlapped DP all-reduce waiting for the backward, a pipeline receive
  // waiting out the bubble); seconds[communication] counts from the
  // meeting, the transfer alone.
  double communication_issued_s = 0;
  double of(KernelClass k) const { return seconds[static_cast<size_t>(k)]; }
};

// Mean over `ranks` (each must run a program of `w`), and with `per_rank`
// each rank's own, in the order of `ranks`, from the same pass over
// `records`. `launch_latency`: the GPU's, between a kernel's issue and its
// first tile.
KernelClassTimes kernel_class_times(const WorkloadGraph& g, const TrainingWorkload& w,
                                    const std::vector<sim::OpRecord>& records,
                                    const std::vector<int>& ranks, sim::Duration launch_latency,
                                    std::vector<KernelClassTimes>* per_rank = nullptr);

}  // namespace gcsim::workloads::training
