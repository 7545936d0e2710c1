// The pending-event set: a heap ordered by time, then priority, then
// insertion sequence (SST, ns-3), so that two runs with the same inputs pop
// events in exactly the same order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "sim/time.h"

namespace gcsim::sim {

// Anything that receives events. `tag` is the handler's own payload (a port
// number, a slot index); the engine never interprets it.
class EventHandler {
 public:
  virtual ~EventHandler() = default;
  virtual void handle_event(uint64_t tag) = 0;
};

struct Event {
  Time time;
  int32_t priority = 0;  // lower runs first among events at the same time
  uint64_t sequence = 0;  // insertion order, the final tie-break
  EventHandler* handler = nullptr;
  uint64_t tag = 0;
};

class EventQueue {
 public:
  EventQueue() = default;
  EventQueue(const EventQueue&) = delete;
  EventQueue& operator=(const EventQueue&) = delete;

  void push(Time time, int32_t priority, EventHandler* handler, uint64_t tag);
  // Removes and returns the earliest event. Precondition: !empty().
  Event pop();
  // The earliest event, valid until the next push or pop. Precondition: !empty().
  const Event& top() const;
  // The earliest event's time, without assembling the Event. Precondition: !empty().
  Time next_time() const { return heap_[0].time; }
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  void reserve(size_t n);

 private:
  // The heap holds 16-byte keys so that a node's four children share one
  // 64-byte cache line; the handler, tag and full sequence number live in a
  // side table indexed by `slot`, read once per pop and consulted during
  // sifting only when two keys tie on both time and priority.
  struct Node {
    Time time;
    int32_t priority;
    uint32_t slot;
  };
  struct Payload {
    uint64_t sequence;
    EventHandler* handler;
    uint64_t tag;  // while the slot is free: the next free slot
  };
  struct AlignedFree {
    void operator()(Node* p) const;
  };

  bool earlier(const Node& a, const Node& b) const {
    if (a.time != b.time) return a.time < b.time;
    if (a.priority != b.priority) return a.priority < b.priority;
    return payload_[a.slot].sequence < payload_[b.slot].sequence;
  }
  uint32_t allocate_slot();
  void grow();
  void sift_up(size_t hole, Node moving);

  // heap_[i] is node i; children of i are 4i+1 .. 4i+4. The allocation is
  // offset by three nodes from a 64-byte boundary so each sibling group
  // starts on a cache line.
  std::unique_ptr<Node[], AlignedFree> storage_;
  Node* heap_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;

  std::vector<Payload> payload_;
  uint32_t free_slot_ = kNoSlot;
  uint64_t next_sequence_ = 0;
  mutable Event top_;  // assembled by top()

  static constexpr uint32_t kNoSlot = UINT32_MAX;
};

}  // namespace gcsim::sim
