// Helpers of the framework profile tests that compare passes with measured
// kernels: a pass by name, and a pass's time alone on a GPU.
#pragma once

#include <string>
#include <vector>

#include "catch.h"
#include "models/gpu/gpu_spec.h"
#include "models/gpu/kernel_cost_model.h"
#include "workloads/training/framework_profile.h"

namespace gcsim::test {

// The pass of `passes` named `name` (fails the test without one).
inline const workloads::training::FrameworkPass& named(const std::vector<workloads::training::FrameworkPass>& passes,
                                                       const std::string& name) {
  for (const auto& p : passes) {
    if (p.name == name) return p;
  }
  FAIL("no pass named '" << name << "'");
  return passes.front();
}

// A pass's time alone (us), as the step's kernels run it: the pass as the
// profile's kernel shape, over all the GPU's SMs.
inline double pass_us(const models::gpu::GpuSpec& gpu, const workloads::training::FrameworkProfile& p,
                      const workloads::training::FrameworkPass& pass) {
  return models::gpu::isolated_time(gpu, models::gpu::memory_kernel(gpu, p.shape(pass)), gpu.sm_count)
             .seconds() *
         1e6;
}

}  // namespace gcsim::test
