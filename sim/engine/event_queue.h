// The pending-event set, ordered by time, then priority, then insertion
// sequence (SST, ns-3), so that two runs with the same inputs pop events in
// exactly the same order.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/engine/time.h"

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

// A radix heap (Ahuja, Mehlhorn, Orlin and Tarjan 1990) on the time, in
// front of a small 4-ary heap on the full order. A discrete-event simulator
// never schedules before the event it is running, which is what a radix
// heap needs; in exchange a push is O(1) and an event moves between buckets
// a few times, by sequential scans instead of the cache-missing walks of a
// comparison heap. Up to a few hundred pending events it is the 4-ary heap
// alone, which is faster there; beyond, the buckets beat the heap alone by
// 1.1x at 10^3 pending events, 1.4x at 10^4, 1.6x at 10^5 and 2.8x at 10^6
// (scripts/bench, BM_HoldHandlers).
//
// Events with keys below `boundary_` sit in `near_`, the heap; the rest sit
// in radix buckets. When near_ runs dry the lowest buckets move into it
// whole while they are small, and a large one is first split by its
// earliest time. Every event in near_ precedes every bucketed event, so
// pushing any time, even one earlier than the last popped, keeps the order
// exact. top() may refill near_, so even a const EventQueue must not be
// read from two threads at once.
class EventQueue {
 public:
  void push(Time time, int32_t priority, EventHandler* handler, uint64_t tag);
  // Removes and returns the earliest event. Precondition: !empty().
  Event pop();
  // The earliest event, valid until the next push or pop. Precondition: !empty().
  const Event& top() const {
    if (near_.empty()) settle();
    return near_.front();
  }
  // The earliest event's time. Precondition: !empty().
  Time next_time() const { return top().time; }
  bool empty() const { return near_.empty() && !any_bucketed(); }
  size_t size() const;
  // Sizes the heap for up to n events (buckets grow on demand).
  void reserve(size_t n);

 private:
  using Key = uint64_t;             // a time as an unsigned key of the same order
  using Bound = unsigned __int128;  // a bound on keys; 2^64 is past every key
  static Key key(Time t) { return static_cast<Key>(t.ps()) ^ (Key{1} << 63); }

  // Refills near_ from the lowest buckets. Changes neither which events are
  // pending nor their order, so the const accessors may call it.
  // Precondition: near_ is empty and the queue is not.
  void settle() const;
  // Files everything in near_ into the buckets. Precondition: none is bucketed.
  void spill();
  // The lowest non-empty bucket. Precondition: there is one.
  unsigned lowest_bucket() const;
  bool any_bucketed() const { return occupied_ != 0 || occupied_64_; }
  void mark_occupied(unsigned b) const;
  void mark_empty(unsigned b) const;

  // Bucket b > 0 holds the events whose key first differs from base_ at bit
  // b-1, so every event in bucket b precedes every event in bucket b+1;
  // bucket 0 holds those whose key equals base_. Buckets are unordered.
  mutable std::array<std::vector<Event>, 65> buckets_;
  mutable uint64_t occupied_ = 0;  // bit b set iff bucket b < 64 is non-empty
  mutable bool occupied_64_ = false;
  mutable Key base_ = 0;  // no bucketed key is below it
  mutable std::vector<Event> near_;  // a 4-ary heap on (time, priority, sequence)
  // Every event in near_ has a key below boundary_, every bucketed event one
  // at or above it, and base_ <= boundary_. kUnbounded while no event is
  // bucketed, so that a small queue is simply the heap.
  static constexpr Bound kUnbounded = ~Bound{0};
  mutable Bound boundary_ = kUnbounded;
  // While no event is bucketed the heap takes every push until it holds
  // spill_at_: kSpill, or twice what it held when the buckets last ran dry.
  // A few hundred pending events are faster in a 4-ary heap alone
  // (BM_Chains/64, BM_LayeredDag/64), a thousand faster with buckets
  // (BM_HoldHandlers/1000). The doubling rule keeps spills amortised O(1):
  // without it, thousands of events at one time would come back from
  // bucket 0 and spill again on the next push.
  static constexpr size_t kSpill = 256;
  mutable size_t spill_at_ = kSpill;
  uint64_t next_sequence_ = 0;
};

}  // namespace gcsim::sim
