// Concurrent communication on one GPU's NVLink: the transfers that move at
// the same time share each direction of the GPU's scale-up port.
//
// A collective on its own moves its wire bytes at the rate the engine plans
// for it (NCCL's algorithm, protocol and channels over an idle link). When
// two communicators are busy on one GPU at once (TP2xDP2: a TP all-reduce on
// the critical path while DDP's bucket all-reduce streams beside it; a
// pipeline send beside a TP all-reduce), their wire bytes leave through the
// same NVLink links, whose payload rate (links x link rate x NVLink's payload
// share, 18 x 25 GB/s x 0.824 = 371 GB/s a direction on an H100) bounds
// their sum. The analytical network model has no contention, so this class
// keeps, per GPU and direction, the bytes/s each transfer in flight offers
// (its wire bytes over its planned time) and their time integral. When a
// transfer's data has moved, it is stretched by the excess demand it met:
//   stretch = max over its GPUs and directions of
//             max(1, (own rate + others' mean rate over its interval) / payload rate),
// the time the link needs to carry every byte offered while it ran, shared
// in proportion to the rates (two equal transfers that overlap end to end
// both take 2 r / R of their time alone, which is R for their sum).
// Approximate where transfers overlap in part (the mean stands for the
// profile). Used only under the analytical network model: the flow and
// packet models share their links themselves.
#pragma once

#include <memory>
#include <utility>
#include <vector>

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
  // payload_bytes_per_s: what one direction of a GPU's NVLink carries (> 0).
  ScaleUpPorts(int num_ranks, double payload_bytes_per_s);

  // A transfer in flight: its loads and the integrals when it began.
  struct Use {
    std::vector<PortLoad> loads;
    std::vector<std::pair<double, double>> at_begin;  // (out, in) integrals, bytes
    sim::Time began;
  };
  // Registers `loads` from `now`.
  std::shared_ptr<Use> begin(std::vector<PortLoad> loads, sim::Time now);
  // The factor (>= 1) by which the link stretches the transfer's time from
  // its begin to `now`.
  double stretch(const Use& use, sim::Time now);
  // Takes the loads off at `now`.
  void end(const Use& use, sim::Time now);

  double payload_bytes_per_s() const { return payload_; }

 private:
  struct Direction {
    double load = 0.0;      // bytes/s offered now
    double integral = 0.0;  // bytes offered since time zero, up to `last`
    sim::Time last = sim::Time::zero();
  };
  void advance(Direction& d, sim::Time now) const;

  double payload_;
  std::vector<Direction> out_, in_;
};

}  // namespace gcsim::models::cluster
