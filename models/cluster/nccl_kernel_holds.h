// The SMs each rank's NCCL kernel holds on its GPU, from that rank's own
// issue of a communication op to the op's end. NCCL launches its kernel
// (one CTA per channel) when the rank issues the op, and the CTAs spin on
// their GPU while they wait for the peers: measured on 2x H100
// (calibration/measurements/h100-x2/attention_beside_nccl_2026-11-26/run2),
// cuDNN attention (one CTA per SM) ran 1.13-1.18x slower beside an
// all-reduce kernel that only waited for a late peer, 1.06-1.13x beside a
// waiting recv. A send whose parts fit NCCL's per-channel buffers posts
// them without its peer and exits (1.00-1.02x beside one): its hold ends
// after posting (posts_for).
//
// The cluster model asks for a hold at a rank's issue (issue), pairs the
// holds of a meeting's parties with the op when the last party arrives
// (met, then take_meeting), and gives them back at the op's end (release).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "models/gpu/gpu.h"
#include "sim/engine/ir.h"
#include "sim/engine/simulator.h"

namespace gcsim::models::cluster {

struct KernelHold {
  int rank = 0;
  int sms = 0;
  bool granted = false;   // all its SMs held (the kernel is resident)
  bool released = false;  // given back (its op ended, or a send posted)
  // A send that fits NCCL's buffers: its SMs come back this long after the
  // grant (its posting), whether or not the peer is there.
  std::optional<sim::Duration> posts_for;
  // Its op's, once the parties have met: called at the grant.
  std::function<void()> on_grant;
};

// After every ordinary event of an instant (priority 0) and before the
// GPUs' scheduling pass (priority 1'000'000, see gpu::GpuOptions): a hold
// asked for at this priority comes after every kernel launched at its
// instant.
constexpr int32_t kAfterLaunchesPriority = 999'999;

class NcclKernelHolds {
 public:
  NcclKernelHolds(sim::Simulator& sim, std::vector<std::unique_ptr<gpu::Gpu>>& gpus)
      : sim_(sim), gpus_(gpus) {}

  // `rank` issued `op`: its kernel asks for `sms` SMs of its GPU now, in
  // launch order among the rank's kernels (gpu::Gpu::hold_sms), or with
  // `after_launches` once the kernels launched at this instant have been.
  void issue(int rank, const workloads::Op& op, int sms, std::optional<sim::Duration> posts_for,
             bool after_launches);
  // A party of the meeting about to run: its hold (if it asked for one)
  // joins the meeting.
  void met(int rank, const workloads::Op& op);
  // The holds of the meeting's parties, in the order they met; empties it.
  std::vector<std::shared_ptr<KernelHold>> take_meeting();
  // A hold of `sms` SMs on `rank`'s GPU, asked for as issue() says.
  std::shared_ptr<KernelHold> hold(int rank, int sms, std::optional<sim::Duration> posts_for,
                                   bool after_launches);
  // Gives the hold's SMs back (once; only after its grant).
  void release(KernelHold& h);
  // SMs `rank`'s GPU could still promise to a new hold.
  int room(int rank) const;

 private:
  sim::Simulator& sim_;
  std::vector<std::unique_ptr<gpu::Gpu>>& gpus_;
  void request(const std::shared_ptr<KernelHold>& h);
  // Issued and not yet met, by (rank, op): one op is in flight at most
  // once per rank (stream order).
  std::map<std::pair<int, const workloads::Op*>, std::shared_ptr<KernelHold>> issued_;
  std::vector<std::shared_ptr<KernelHold>> meeting_;
};

}  // namespace gcsim::models::cluster
