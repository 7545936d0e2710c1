// A packet in flight and the pool that recycles packets, so that moving one
// costs no heap allocation. Packets are named by their index in the pool;
// queues link them through `next` (an intrusive FIFO, see PacketFifo).
#pragma once

#include <cstdint>
#include <vector>

#include "models/network/fabric.h"

namespace gcsim::models::network {

constexpr uint32_t kNilPacket = UINT32_MAX;

struct Packet {
  enum Flags : uint8_t {
    kEcnMarked = 1,   // congestion experienced (CE) set by a switch
    kUnbuffered = 2,  // a train passing a free port: it took no buffer at the node holding it
  };
  int64_t sent_ps = 0;          // when its source put it on the wire (retransmission timer)
  uint32_t flow = 0;            // the flow (transfer) it belongs to
  uint32_t next = kNilPacket;   // next packet in its queue, or in the free list
  uint32_t seq = 0;             // index within the flow
  uint32_t bytes = 0;           // payload (of all its packets, for a train)
  LinkId link = kNoLink;        // the link it crosses or is queued for
  LinkId in_link = kNoLink;     // the link it arrived on at the node holding it
  uint16_t link_gen = 0;        // the link's generation when sent: a link that went down loses it
  uint16_t hop = 0;             // ECMP: index of its next link in the flow's path
  uint8_t priority = 0;         // traffic class 0..7
  uint8_t flags = 0;
  // A packet train (network.trains): `count` full-MTU packets, seq ..
  // seq + count - 1, sent back to back. Its arrival event is its first
  // packet's; the others follow `spacing_ps` apart (the slowest
  // serialization so far). 1 and 0 for a plain packet.
  uint16_t count = 1;
  int64_t spacing_ps = 0;
};

class PacketPool {
 public:
  uint32_t allocate() {
    if (free_ == kNilPacket) {
      packets_.emplace_back();
      ++in_use_;
      return static_cast<uint32_t>(packets_.size() - 1);
    }
    const uint32_t p = free_;
    free_ = packets_[p].next;
    packets_[p] = Packet{};
    ++in_use_;
    return p;
  }
  void release(uint32_t p) {
    packets_[p].next = free_;
    free_ = p;
    --in_use_;
  }
  Packet& operator[](uint32_t p) { return packets_[p]; }
  const Packet& operator[](uint32_t p) const { return packets_[p]; }
  size_t in_use() const { return in_use_; }

 private:
  std::vector<Packet> packets_;
  uint32_t free_ = kNilPacket;
  size_t in_use_ = 0;
};

// A FIFO of pool packets linked through Packet::next: two words, no heap.
struct PacketFifo {
  uint32_t head = kNilPacket;
  uint32_t tail = kNilPacket;

  bool empty() const { return head == kNilPacket; }
  void push(PacketPool& pool, uint32_t p) {
    pool[p].next = kNilPacket;
    if (tail == kNilPacket) {
      head = p;
    } else {
      pool[tail].next = p;
    }
    tail = p;
  }
  uint32_t pop(PacketPool& pool) {
    const uint32_t p = head;
    head = pool[p].next;
    if (head == kNilPacket) tail = kNilPacket;
    return p;
  }
};

}  // namespace gcsim::models::network
