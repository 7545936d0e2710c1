#include "sim/event_queue.h"

#include <utility>

namespace gcsim::sim {

// A 4-ary heap: half the depth of a binary heap and its children share a
// cache line pair, which matters at tens of millions of events per second.
namespace {
constexpr size_t kArity = 4;
}

void EventQueue::push(Time time, int32_t priority, EventHandler* handler, uint64_t tag) {
  heap_.push_back(Event{time, priority, next_sequence_++, handler, tag});
  sift_up(heap_.size() - 1);
}

Event EventQueue::pop() {
  Event top = heap_.front();
  heap_.front() = heap_.back();
  heap_.pop_back();
  if (!heap_.empty()) sift_down(0);
  return top;
}

void EventQueue::sift_up(size_t i) {
  Event moving = heap_[i];
  while (i > 0) {
    size_t parent = (i - 1) / kArity;
    if (!earlier(moving, heap_[parent])) break;
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i] = moving;
}

void EventQueue::sift_down(size_t i) {
  const size_t n = heap_.size();
  Event moving = heap_[i];
  while (true) {
    size_t first = i * kArity + 1;
    if (first >= n) break;
    size_t last = std::min(first + kArity, n);
    size_t best = first;
    for (size_t c = first + 1; c < last; ++c) {
      if (earlier(heap_[c], heap_[best])) best = c;
    }
    if (!earlier(heap_[best], moving)) break;
    heap_[i] = heap_[best];
    i = best;
  }
  heap_[i] = moving;
}

}  // namespace gcsim::sim
