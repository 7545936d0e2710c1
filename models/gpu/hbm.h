// The HBM stack of one GPU: how its bandwidth is shared among the SMs that
// are running tiles, and the ledger of bytes allocated in its capacity.
#pragma once

#include "models/gpu/gpu_spec.h"
#include "sim/config/units.h"

namespace gcsim::models::gpu {

// Achieved HBM bandwidth (bytes/s): datasheet bandwidth x efficiency.hbm.
sim::Bandwidth achieved_hbm_bandwidth(const GpuSpec& spec);

// What one SM's load/store path can pull on its own (bytes/s): the spec's
// measured sm_hbm_reach where it has one, else sm_bandwidth_headroom x the
// achieved bandwidth / sm_count.
sim::Bandwidth single_sm_hbm_reach(const GpuSpec& spec);

// Bandwidth one SM gets while `active_sms` SMs (>= 1) run tiles:
//   min(sm_bandwidth_headroom * B / sm_count, B / active_sms),  B achieved.
// The headroom term is what a single SM's load/store path can pull, so a
// kernel on few SMs cannot reach full bandwidth; the second is the even
// split of the stack among the SMs competing for it.
sim::Bandwidth hbm_bandwidth_per_sm(const GpuSpec& spec, int active_sms);
// The same when only `available_fraction` (in (0, 1]) of the achieved
// bandwidth is left to the SMs' tiles (collectives stream the rest:
// interference.h): min(headroom x B / sm_count, fraction x B / active_sms).
// A fraction of 1 gives the two-argument form exactly.
sim::Bandwidth hbm_bandwidth_per_sm(const GpuSpec& spec, int active_sms, double available_fraction);

class Hbm {
 public:
  explicit Hbm(const GpuSpec& spec) : spec_(spec) {}

  sim::Bandwidth per_sm_share(int active_sms) const {
    return hbm_bandwidth_per_sm(spec_, active_sms);
  }

  // Capacity ledger, in bytes. allocate() refuses (returns false, changes
  // nothing) a request that would exceed capacity: the caller reports OOM.
  bool allocate(sim::Bytes bytes);
  // Throws std::invalid_argument when freeing more than is allocated, which
  // is a bug in the workload's bookkeeping, not a hardware event.
  void free(sim::Bytes bytes);
  sim::Bytes used() const { return used_; }
  sim::Bytes peak() const { return peak_; }
  sim::Bytes capacity() const { return spec_.hbm_capacity; }

 private:
  GpuSpec spec_;  // a copy: the ledger must not outlive a caller's spec
  sim::Bytes used_{0};
  sim::Bytes peak_{0};
};

}  // namespace gcsim::models::gpu
