#include "sim/engine/event_queue.h"

#include <algorithm>
#include <bit>

namespace gcsim::sim {

namespace {

// Buckets move into the heap whole while it stays at most this large; a
// larger bucket is split first. BM_HoldHandlers is flat from 32 to 128.
constexpr size_t kWholeBucket = 64;

bool earlier(const Event& a, const Event& b) {
  if (a.time != b.time) return a.time < b.time;
  if (a.priority != b.priority) return a.priority < b.priority;
  return a.sequence < b.sequence;
}

// A 4-ary min-heap on `earlier`: half the depth of a binary heap.
//
// Both sifts carry the moving event in registers and write it once, at its
// final place. Storing it first and reading it back stalls: its fields are
// written by narrow stores and read by wide loads, which the CPU cannot
// forward from the store buffer (~12 cycles, a quarter of the cost of a
// push on a small queue).
constexpr size_t kArity = 4;

void heap_insert(std::vector<Event>& heap, Time time, int32_t priority, uint64_t sequence,
                 EventHandler* handler, uint64_t tag) {
  heap.emplace_back();
  const Event probe{time, priority, sequence, nullptr, 0};
  size_t i = heap.size() - 1;
  while (i > 0) {
    const size_t parent = (i - 1) / kArity;
    if (!earlier(probe, heap[parent])) break;
    heap[i] = heap[parent];
    i = parent;
  }
  heap[i] = Event{time, priority, sequence, handler, tag};
}

// Fills the hole at `i` with `moving` or, if a child is earlier, with that
// child, and so on down.
void sift_down(std::vector<Event>& heap, size_t i, const Event moving) {
  const size_t n = heap.size();
  while (true) {
    const size_t first = i * kArity + 1;
    if (first >= n) break;
    const size_t last = std::min(first + kArity, n);
    size_t best = first;
    for (size_t c = first + 1; c < last; ++c) {
      if (earlier(heap[c], heap[best])) best = c;
    }
    if (!earlier(heap[best], moving)) break;
    heap[i] = heap[best];
    i = best;
  }
  heap[i] = moving;
}

void make_heap(std::vector<Event>& heap) {
  if (heap.size() < 2) return;
  for (size_t i = (heap.size() - 2) / kArity + 1; i-- > 0;) sift_down(heap, i, heap[i]);
}

// The radix bucket of `k` relative to `base`: one plus the position of the
// highest bit in which they differ, 0 when they are equal.
unsigned bucket_of(uint64_t k, uint64_t base) {
  return static_cast<unsigned>(std::bit_width(k ^ base));
}

}  // namespace

void EventQueue::push(Time time, int32_t priority, EventHandler* handler, uint64_t tag) {
  // The Event is built in place in each branch: built once on the stack and
  // copied, its fields' narrow stores would feed the copy's wide loads (the
  // forwarding stall described above).
  const uint64_t sequence = next_sequence_++;
  if (key(time) >= boundary_) {
    const unsigned b = bucket_of(key(time), base_);
    buckets_[b].emplace_back(time, priority, sequence, handler, tag);
    mark_occupied(b);
    return;
  }
  heap_insert(near_, time, priority, sequence, handler, tag);
  if (near_.size() > spill_at_ && boundary_ == kUnbounded) [[unlikely]] spill();
}

Event EventQueue::pop() {
  if (near_.empty()) settle();
  const Event ev = near_.front();
  const Event last = near_.back();
  near_.pop_back();
  if (!near_.empty()) sift_down(near_, 0, last);
  return ev;
}

size_t EventQueue::size() const {
  size_t n = near_.size();
  for (const auto& bucket : buckets_) n += bucket.size();
  return n;
}

void EventQueue::reserve(size_t n) { near_.reserve(std::min(n, kSpill + 1)); }

void EventQueue::spill() {
  base_ = key(near_.front().time);  // the earliest key: none lies below
  boundary_ = base_;
  for (const Event& ev : near_) {
    const unsigned b = bucket_of(key(ev.time), base_);
    buckets_[b].push_back(ev);
    mark_occupied(b);
  }
  near_.clear();
}

void EventQueue::settle() const {
  while (true) {
    const unsigned b = lowest_bucket();
    std::vector<Event>& source = buckets_[b];
    if (b == 0 || source.size() <= kWholeBucket) {
      // Move this bucket and the next ones whole while the heap stays small.
      // Bucket 0 (all at one time) always moves whole: it cannot be split.
      near_.swap(source);  // near_ was empty: no copy
      mark_empty(b);
      while (any_bucketed()) {
        const unsigned next = lowest_bucket();
        std::vector<Event>& more = buckets_[next];
        if (near_.size() + more.size() > kWholeBucket) break;
        near_.insert(near_.end(), more.begin(), more.end());
        more.clear();
        mark_empty(next);
      }
      // The boundary goes just past the latest event moved, not to the end
      // of the last bucket's range: a range can be vast (bucket 64 spans
      // half of all time), and every push below the boundary goes to the
      // heap. With nothing left in the buckets it is unbounded.
      if (any_bucketed()) {
        Key latest = 0;
        for (const Event& ev : near_) latest = std::max(latest, key(ev.time));
        boundary_ = Bound{latest} + 1;
      } else {
        // The heap takes every push again until it has doubled: spilling
        // sooner could thrash, e.g. when thousands of events share one time
        // and come straight back from bucket 0.
        boundary_ = kUnbounded;
        spill_at_ = std::max(kSpill, 2 * near_.size());
      }
      make_heap(near_);
      return;
    }
    // Split a large bucket by its earliest time: relative to that new base
    // each of its events lands in a lower bucket (at least one in bucket 0),
    // while the events of higher buckets keep theirs, since they differ from
    // both bases first at the same bit. Every target is below b <= 64, so
    // the loop keeps the occupancy bits in a register.
    Key lowest = key(source.front().time);
    for (const Event& ev : source) lowest = std::min(lowest, key(ev.time));
    mark_empty(b);
    base_ = lowest;
    boundary_ = lowest;
    uint64_t occupied = 0;
    for (const Event& ev : source) {
      const unsigned to = bucket_of(key(ev.time), lowest);
      buckets_[to].push_back(ev);
      occupied |= uint64_t{1} << to;
    }
    occupied_ |= occupied;
    source.clear();
  }
}

unsigned EventQueue::lowest_bucket() const {
  return occupied_ != 0 ? static_cast<unsigned>(std::countr_zero(occupied_)) : 64;
}

void EventQueue::mark_occupied(unsigned b) const {
  if (b < 64) {
    occupied_ |= uint64_t{1} << b;
  } else {
    occupied_64_ = true;
  }
}

void EventQueue::mark_empty(unsigned b) const {
  if (b < 64) {
    occupied_ &= ~(uint64_t{1} << b);
  } else {
    occupied_64_ = false;
  }
}

}  // namespace gcsim::sim
