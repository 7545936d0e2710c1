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

namespace gcsim::workloads::training {

// The same host as a stream of the graph, for code whose host also waits for
// the GPU (`.item()`, `.tolist()`, a blocking copy): before each op the host
// launches, a delay of its launch cost on `host_stream`, which the op waits
// for; after each op of `syncs`, a delay of the sync's cost that waits for
// that op's end, so every launch after it waits for the GPU. Without syncs,
// the k-th launch ends at the time host_issue_times gives (the delays run
// back to back); with them, the launches after a sync are exposed until
// the host is ahead again. `ops` is one rank's list (deps index it); the
// result holds the same ops, deps re-indexed, with the host's delays
// interleaved, each named `launch_name` or `sync_name`.
struct HostSync {
  size_t after = 0;  // index into `ops` of the op the host waits for
  sim::Duration cost;  // reading its result back (copy, wake-up, Python)
};
struct HostLaunchCost {
  sim::Duration kernel;      // one kernel launch from Python
  sim::Duration collective;  // one NCCL collective or p2p call
};
std::vector<Op> with_host_timeline(const std::vector<Op>& ops, uint16_t host_stream,
                                   const HostLaunchCost& cost, const std::vector<HostSync>& syncs,
                                   uint32_t launch_name, uint32_t sync_name);
// The same with each op's own launch (`launch[i]` for `ops[i]`, used only
// where host_launches(ops[i])): a host whose Python calls cost differently
// by kind of op (a router's top-k, an index gather, a GEMM in a loop), each
// kind's delay under its own name.
struct HostCallCost {
  sim::Duration cost;
  uint32_t name = 0;
};
std::vector<Op> with_host_calls(const std::vector<Op>& ops, uint16_t host_stream,
                                const std::vector<HostCallCost>& launch,
                                const std::vector<HostSync>& syncs, uint32_t sync_name);

}  // namespace gcsim::workloads::training
