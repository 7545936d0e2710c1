// Concurrent communication on one GPU's NVLink: the transfers that move at
// the same time take turns on each direction of the GPU's scale-up port.
//
// A collective on its own moves its wire bytes at the rate the engine plans
// for it (NCCL's algorithm, protocol and channels over an idle link). When
// two communicators are busy on one GPU at once (TP2xDP2: a TP all-reduce on
// the critical path while DDP's bucket all-reduce streams beside it; a
// pipeline send beside a TP all-reduce), their wire bytes leave through the
// same NVLink links. The analytical network model has no contention, so this
// class shares the port as a fluid of turns: a transfer alone occupies a
// direction for its offered rate (wire bytes over its time alone) / the rate
// one transfer moves at while it holds the links (`link_bytes_per_s`); beside
// others it waits out their occupancy, so it moves at
//     1 / (1 + sum over the others on its busiest direction of their occupancy)
// of its pace alone. Its work is its time alone; it ends once it has done
// that much, paces re-solved whenever a transfer starts or ends. Measured on
// 4 H100s (two communicators' all-reduces at once, 4-256 MiB): the smaller
// of two transfers loses as much as the larger (a 4 MiB all-reduce, latency-
// bound alone, took 1.95x beside a 25 MiB one), which proportional shares of
// a rate would not give. Used only under the analytical network model: flow
// and packet share their links themselves.
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
  // link_bytes_per_s: what one transfer moves a direction while it holds a
  // GPU's NVLink (> 0).
  ScaleUpPorts(sim::Simulator& sim, int num_ranks, double link_bytes_per_s);

  struct Use;
  // A transfer's data starts moving now with `loads`.
  std::shared_ptr<Use> begin(std::vector<PortLoad> loads);
  // Its data would have moved by now alone (the engine's time): `done` fires
  // once it has also done that much work at its shared pace (now, if it was
  // never slowed); its loads come off then.
  void moved(const std::shared_ptr<Use>& use, std::function<void()> done);

  double link_bytes_per_s() const { return link_; }
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
  double link_;
  std::vector<double> out_, in_;  // offered bytes/s per GPU and direction
  std::vector<std::shared_ptr<Use>> active_;
};

}  // namespace gcsim::models::cluster
