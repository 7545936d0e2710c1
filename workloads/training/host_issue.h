// When the host has issued each op of a rank's step. A framework's host
// (Python, the dispatcher, autograd) spends a fixed time per kernel it
// launches (framework_profile.h); with no synchronisation inside a step it
// runs ahead of the GPU, so the n-th launch leaves the host n x that cost
// after the step starts whatever the GPU does, and a kernel starts no
// earlier than its launch. A step of many small kernels thus takes
// max(GPU time, host time), stall by stall, in the stream model.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/engine/time.h"
#include "sim/engine/ir.h"

namespace gcsim::workloads::training {

// Whether the host launches `op` (a kernel, an NCCL collective or p2p);
// memory and delay ops cost it nothing here.
bool host_launches(const Op& op);

// Per op of `program`, in picoseconds after the step starts, when the host
// has issued it: ops are issued in program order, each launch taking
// `per_kernel`. Empty when `per_kernel` is zero (the host never waits).
std::vector<int64_t> host_issue_times(const RankProgram& program, sim::Duration per_kernel);

}  // namespace gcsim::workloads::training
