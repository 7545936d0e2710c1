// A framework pass's time alone on a GPU (us), as the step's kernels run it:
// the pass as the profile's kernel shape, over all the GPU's SMs. Shared by
// the framework profile tests that compare passes with measured kernels.
#pragma once

#include "models/gpu/gpu_spec.h"
#include "models/gpu/kernel_cost_model.h"
#include "workloads/training/framework_profile.h"

namespace gcsim::test {

inline double pass_us(const models::gpu::GpuSpec& gpu, const workloads::training::FrameworkProfile& p,
                      const workloads::training::FrameworkPass& pass) {
  return models::gpu::isolated_time(gpu, models::gpu::memory_kernel(gpu, p.shape(pass)), gpu.sm_count)
             .seconds() *
         1e6;
}

}  // namespace gcsim::test
