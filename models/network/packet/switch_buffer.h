// The shared packet memory of one forwarding node (network switch, NIC,
// NVSwitch): one pool that every queue draws from, limited per queue by the
// Choudhury-Hahne dynamic threshold (IEEE/ACM ToN 1998: a queue may hold at
// most alpha × the free pool, so a few congested queues never starve the
// rest). With PFC the headroom reserved per ingress port lies outside the
// pool (PfcIngress keeps it).
#pragma once

#include <algorithm>
#include <cstdint>

namespace gcsim::models::network {

class SwitchBuffer {
 public:
  SwitchBuffer() = default;
  explicit SwitchBuffer(int64_t shared_capacity) : capacity_(std::max<int64_t>(0, shared_capacity)) {}

  int64_t capacity() const { return capacity_; }
  int64_t used() const { return used_; }
  int64_t free() const { return std::max<int64_t>(0, capacity_ - used_); }
  // The most one queue may hold now (bytes).
  double dynamic_threshold(double alpha) const { return alpha * static_cast<double>(free()); }

  // Lossy admission: a packet fits if the pool has room and its egress
  // queue, with it, stays within the dynamic threshold.
  bool admits(int64_t queue_bytes, int64_t bytes, double alpha) const {
    return bytes <= free() && static_cast<double>(queue_bytes + bytes) <= dynamic_threshold(alpha);
  }
  void take(int64_t bytes) { used_ += bytes; }
  void give_back(int64_t bytes) { used_ -= bytes; }

 private:
  int64_t capacity_ = 0;
  int64_t used_ = 0;
};

}  // namespace gcsim::models::network
