// Concurrent communication on one GPU's NVLink: the transfers that move at
// the same time share each direction of the GPU's scale-up port.
//
// A collective on its own moves its wire bytes at the rate the engine plans
// for it (NCCL's algorithm, protocol and channels over an idle link). When
// two communicators are busy on one GPU at once (TP2xDP2: a TP all-reduce on
// the critical path while DDP's bucket all-reduce streams beside it; a
// pipeline send beside a TP all-reduce), their wire bytes leave through the
// same NVLink links, which carry at most `shared_bytes_per_s` a direction
// for all of them together. The analytical network model has no contention,
// so this class shares the port as a fluid: each transfer offers, per GPU and
// direction, its wire bytes over its time alone; while the offered sum on a
// direction exceeds the shared rate, every transfer on it progresses at
// shared rate / offered sum of its own pace alone (proportional shares), the
// slowest of its GPUs' directions setting its pace. A transfer's work is its
// time alone; it ends once it has done that much at those paces, rates
// re-solved whenever a transfer starts or ends (two equal transfers that
// overlap end to end both take 2 r / R of their time alone, R for their sum).
// Used only under the analytical network model: flow and packet share their
// links themselves.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "sim/engine/simulator.h"
#include "sim/engine/time.h"

namespace gcsim::models::cluster {

// Bytes/s one transfer offers on one GPU: out (sent) and in (received).
struct PortLoad {
  int rank = 0;
  double out_bytes_per_s = 0.0;
  double in_bytes_per_s = 0.0;
};

class ScaleUpPorts {
 public:
  // shared_bytes_per_s: what one direction of a GPU's NVLink carries for all
  // transfers together (> 0).
  ScaleUpPorts(sim::Simulator& sim, int num_ranks, double shared_bytes_per_s);

  struct Use;
  // A transfer's data starts moving now with `loads`.
  std::shared_ptr<Use> begin(std::vector<PortLoad> loads);
  // Its data would have moved by now alone (the engine's time): `done` fires
  // once it has also done that much work at its shared pace (now, if it was
  // never slowed); its loads come off then.
  void moved(const std::shared_ptr<Use>& use, std::function<void()> done);

  double shared_bytes_per_s() const { return shared_; }
  // Its pace now: the fraction of its alone rate it moves at (<= 1).
  double pace(const Use& use) const;

  struct Use {
    std::vector<PortLoad> loads;
    sim::Time began;
    sim::Time last;             // progress counted up to here
    double progress_s = 0.0;    // work done, in seconds of its time alone
    double work_s = -1.0;       // its time alone, once known (moved)
    std::function<void()> done;
    uint64_t generation = 0;    // its pending end event's stamp
  };

 private:
  // Counts every active transfer's progress up to now at the paces of the
  // loads as they stood.
  void advance_all();
  // (Re)schedules the end of every transfer whose work is known.
  void schedule_ends();
  void finish(const std::shared_ptr<Use>& use);

  sim::Simulator& sim_;
  double shared_;
  std::vector<double> out_, in_;  // offered bytes/s per GPU and direction
  std::vector<std::shared_ptr<Use>> active_;
};

}  // namespace gcsim::models::cluster
