// The sending side of one directed link: eight FIFO queues (one per
// priority, i.e. traffic class), the priorities the downstream has paused
// with PFC, and until when the serializer is busy with the packet it
// started last. Non-empty, unpaused priorities are served round robin a
// packet at a time (ETS with equal weights). A packet's bytes count in its
// queue from enqueue until it starts serializing (as switches account a
// packet dequeued to the transmitter).
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
  // The next packet to serialize, removed from its queue, or kNilPacket
  // when every non-empty priority is paused.
  uint32_t dequeue(PacketPool& pool) {
    const int p = next_priority_round_robin(waiting(), last_);
    if (p < 0) return kNilPacket;
    last_ = static_cast<uint8_t>(p);
    const uint32_t packet = queues_[p].pop(pool);
    if (queues_[p].empty()) nonempty_ &= static_cast<uint8_t>(~(1u << p));
    bytes_[p] -= pool[packet].bytes;
    return packet;
  }
  // Priorities holding packets, paused or not (a bit each).
  uint8_t queued_mask() const { return nonempty_; }
  // Priorities with packets that could be sent now (a bit each).
  uint8_t waiting() const { return nonempty_ & static_cast<uint8_t>(~paused_); }
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
  // Queued bytes of every priority, plus the packet still serializing at `now_ps`.
  uint64_t queued_bytes(int64_t now_ps) const {
    uint64_t s = now_ps < busy_until_ps_ ? last_bytes_ : 0;
    for (uint32_t b : bytes_) s += b;
    return s;
  }
  const PacketFifo& queue(int priority) const { return queues_[priority]; }

  bool paused(int priority) const { return paused_ & (1u << priority); }
  uint8_t paused_mask() const { return paused_; }
  void pause(int priority) { paused_ |= static_cast<uint8_t>(1u << priority); }
  void resume(int priority) { paused_ &= static_cast<uint8_t>(~(1u << priority)); }

  // The serializer: busy until a time (ps); a wake-up event for that time
  // is pending only while packets wait behind it.
  int64_t busy_until_ps() const { return busy_until_ps_; }
  void start(int64_t until_ps, uint32_t bytes) {
    busy_until_ps_ = until_ps;
    last_bytes_ = bytes;
  }
  bool wake_pending() const { return wake_pending_; }
  void set_wake_pending(bool v) { wake_pending_ = v; }

 private:
  std::array<PacketFifo, kPriorities> queues_{};
  std::array<uint32_t, kPriorities> bytes_{};
  int64_t busy_until_ps_ = 0;
  uint32_t last_bytes_ = 0;
  bool wake_pending_ = false;
  uint8_t nonempty_ = 0;
  uint8_t paused_ = 0;
  uint8_t last_ = kPriorities - 1;  // so that priority 0 is served first
};

}  // namespace gcsim::models::network
