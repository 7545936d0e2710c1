// Priority flow control (IEEE 802.1Qbb) at the receiving end of every link:
// per ingress port and priority, the bytes buffered in the node that came
// in through that port, whether Xoff has been sent upstream, and the
// headroom reserved for the port. The node's shared pool is a SwitchBuffer.
//
// Xoff when an ingress priority's bytes exceed min(xoff, alpha × free
// pool); from then on its packets go to the port's headroom, which is sized
// to take everything still on its way. Xon when its bytes fall to
// xon × (threshold now / xoff). The pause itself (a frame that reaches the
// upstream port one link delay later) is the model's business.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "models/network/fabric.h"
#include "models/network/packet/egress_port.h"
#include "models/network/packet/switch_buffer.h"

namespace gcsim::models::network {

class PfcIngress {
 public:
  struct Thresholds {
    int64_t xoff = 0;
    int64_t xon = 0;
    double alpha = 1.0;
  };
  struct Admission {
    bool accepted = false;
    bool in_headroom = false;
    bool send_xoff = false;
  };

  PfcIngress() = default;
  // `headroom[l]`: bytes reserved at the receiving end of link l.
  PfcIngress(std::vector<int64_t> headroom, Thresholds t)
      : thresholds_(t),
        bytes_(headroom.size() * kPriorities, 0),
        in_headroom_(headroom.size() * kPriorities, 0),
        xoff_(headroom.size(), 0),
        headroom_(std::move(headroom)),
        headroom_used_(headroom_.size(), 0) {}

  // A packet of `bytes` arrives through `in` at priority `prio`.
  Admission admit(LinkId in, int prio, int64_t bytes, SwitchBuffer& pool) {
    const size_t i = index(in, prio);
    const auto l = static_cast<size_t>(in);
    const uint8_t bit = static_cast<uint8_t>(1u << prio);
    Admission a;
    if ((xoff_[l] & bit) || bytes > pool.free()) {
      // Paused (or the pool is full): the packet was already on its way.
      if (headroom_used_[l] + bytes > headroom_[l]) return a;  // headroom too small: lost
      headroom_used_[l] += bytes;
      in_headroom_[i] += bytes;
      bytes_[i] += bytes;
      a.accepted = a.in_headroom = true;
      a.send_xoff = !(xoff_[l] & bit);
      xoff_[l] |= bit;
      return a;
    }
    pool.take(bytes);
    bytes_[i] += bytes;
    a.accepted = true;
    if (static_cast<double>(bytes_[i]) > xoff_threshold(pool)) {
      xoff_[l] |= bit;
      a.send_xoff = true;
    }
    return a;
  }

  // A packet that came in through `in` has left the node. Headroom drains
  // first, as switches count it (the bytes above the pool's share are the
  // headroom's, whichever packet leaves), so that it is empty again by the
  // next Xoff. True when the ingress priority must now send Xon.
  bool release(LinkId in, int prio, int64_t bytes, SwitchBuffer& pool) {
    const size_t i = index(in, prio);
    const auto l = static_cast<size_t>(in);
    bytes_[i] -= bytes;
    const int64_t from_headroom = std::min(bytes, in_headroom_[i]);
    in_headroom_[i] -= from_headroom;
    headroom_used_[l] -= from_headroom;
    pool.give_back(bytes - from_headroom);
    const uint8_t bit = static_cast<uint8_t>(1u << prio);
    if (!(xoff_[l] & bit)) return false;
    const double threshold = xoff_threshold(pool);
    const double xon_now = static_cast<double>(thresholds_.xon) * threshold /
                           static_cast<double>(thresholds_.xoff);
    if (static_cast<double>(bytes_[i]) > xon_now) return false;
    xoff_[l] &= static_cast<uint8_t>(~bit);
    return true;
  }

  bool xoff_sent(LinkId in, int prio) const {
    return xoff_[static_cast<size_t>(in)] & (1u << prio);
  }
  int64_t bytes(LinkId in, int prio) const { return bytes_[index(in, prio)]; }
  int64_t headroom(LinkId in) const { return headroom_[static_cast<size_t>(in)]; }
  int64_t headroom_used(LinkId in) const { return headroom_used_[static_cast<size_t>(in)]; }

 private:
  static size_t index(LinkId in, int prio) {
    return static_cast<size_t>(in) * kPriorities + static_cast<size_t>(prio);
  }
  double xoff_threshold(const SwitchBuffer& pool) const {
    return std::min(static_cast<double>(thresholds_.xoff), pool.dynamic_threshold(thresholds_.alpha));
  }

  Thresholds thresholds_;
  std::vector<int64_t> bytes_;        // [link × 8 + priority], all buffered bytes
  std::vector<int64_t> in_headroom_;  // [link × 8 + priority], the headroom's part
  std::vector<uint8_t> xoff_;      // per link, a bit per priority: Xoff sent
  std::vector<int64_t> headroom_;  // per link, reserved bytes
  std::vector<int64_t> headroom_used_;
};

}  // namespace gcsim::models::network
