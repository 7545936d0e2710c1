// ECN marking at a switch's egress queue, RED-like on the instantaneous
// queue length as DCQCN's congestion point does (Zhu et al., SIGCOMM 2015,
// §3.1): no mark below kmin bytes, probability rising linearly to pmax at
// kmax, always above kmax.
#pragma once

#include <cstdint>

#include "models/network/packet/packet_config.h"
#include "sim/engine/random.h"

namespace gcsim::models::network {

class EcnMarker {
 public:
  EcnMarker() = default;
  explicit EcnMarker(const EcnConfig& cfg)
      : enabled_(cfg.enabled),
        kmin_(cfg.kmin.count()),
        kmax_(cfg.kmax.count()),
        pmax_(cfg.pmax) {}

  // Probability of marking a packet that finds `queue_bytes` ahead of it.
  double probability(int64_t queue_bytes) const {
    if (!enabled_ || queue_bytes <= kmin_) return 0.0;
    if (queue_bytes > kmax_) return 1.0;
    return pmax_ * static_cast<double>(queue_bytes - kmin_) / static_cast<double>(kmax_ - kmin_);
  }
  // Draws only when the probability lies strictly between 0 and 1, so that
  // an uncongested run consumes no random numbers.
  bool mark(int64_t queue_bytes, sim::RandomStream& rng) const {
    const double p = probability(queue_bytes);
    if (p <= 0.0) return false;
    if (p >= 1.0) return true;
    return rng.uniform() < p;
  }

 private:
  bool enabled_ = false;
  int64_t kmin_ = 0;
  int64_t kmax_ = 0;
  double pmax_ = 0.0;
};

}  // namespace gcsim::models::network
