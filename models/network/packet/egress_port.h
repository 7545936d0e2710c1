// The sending side of one directed link: eight FIFO queues (one per
// priority, i.e. traffic class), the priorities the downstream has paused
// with PFC, and the packet being serialized. Non-empty, unpaused priorities
// are served round robin a packet at a time (ETS with equal weights). Bytes
// count from enqueue until the packet has left the wire's sending end, as a
// store-and-forward buffer holds them.
#pragma once

#include <array>
#include <cstdint>

#include "models/network/packet/packet.h"

namespace gcsim::models::network {

constexpr int kPriorities = 8;

// Picks the next priority among `eligible` (a bit per priority), round robin
// after `last`; -1 when none is eligible.
inline int next_priority_round_robin(uint8_t eligible, uint8_t last) {
  if (eligible == 0) return -1;
  for (int i = 1; i <= kPriorities; ++i) {
    const int p = (last + i) & (kPriorities - 1);
    if (eligible & (1u << p)) return p;
  }
  return -1;
}

class EgressPort {
 public:
  void enqueue(PacketPool& pool, uint32_t packet) {
    const Packet& pk = pool[packet];
    queues_[pk.priority].push(pool, packet);
    bytes_[pk.priority] += pk.bytes;
    nonempty_ |= static_cast<uint8_t>(1u << pk.priority);
  }
  // The next packet to serialize (removed from its queue but still counted
  // in the bytes until finish()), or kNilPacket when every non-empty
  // priority is paused.
  uint32_t dequeue(PacketPool& pool) {
    const int p = next_priority_round_robin(nonempty_ & ~paused_, last_);
    if (p < 0) return kNilPacket;
    last_ = static_cast<uint8_t>(p);
    const uint32_t packet = queues_[p].pop(pool);
    if (queues_[p].empty()) nonempty_ &= static_cast<uint8_t>(~(1u << p));
    return packet;
  }
  // The packet has left: its bytes no longer occupy this queue.
  void finish(int priority, uint32_t bytes) { bytes_[priority] -= bytes; }
  // Removes every queued packet of every priority (a link went down) and
  // returns them as one FIFO; their bytes are released.
  PacketFifo take_all(PacketPool& pool) {
    PacketFifo all;
    for (int p = 0; p < kPriorities; ++p) {
      while (!queues_[p].empty()) {
        const uint32_t packet = queues_[p].pop(pool);
        bytes_[p] -= pool[packet].bytes;
        all.push(pool, packet);
      }
    }
    nonempty_ = 0;
    return all;
  }

  uint32_t queued_bytes(int priority) const { return bytes_[priority]; }
  uint64_t queued_bytes() const {
    uint64_t s = 0;
    for (uint32_t b : bytes_) s += b;
    return s;
  }
  const PacketFifo& queue(int priority) const { return queues_[priority]; }

  bool paused(int priority) const { return paused_ & (1u << priority); }
  uint8_t paused_mask() const { return paused_; }
  void pause(int priority) { paused_ |= static_cast<uint8_t>(1u << priority); }
  void resume(int priority) { paused_ &= static_cast<uint8_t>(~(1u << priority)); }

  bool busy() const { return in_service_ != kNilPacket; }
  uint32_t in_service() const { return in_service_; }
  void set_in_service(uint32_t packet) { in_service_ = packet; }

 private:
  std::array<PacketFifo, kPriorities> queues_{};
  std::array<uint32_t, kPriorities> bytes_{};
  uint32_t in_service_ = kNilPacket;
  uint8_t nonempty_ = 0;
  uint8_t paused_ = 0;
  uint8_t last_ = kPriorities - 1;  // so that priority 0 is served first
};

}  // namespace gcsim::models::network
