// The pending-event set: a binary heap ordered by time, then priority, then
// insertion sequence (SST, ns-3), so that two runs with the same inputs pop
// events in exactly the same order.
#pragma once

#include <cstdint>
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
  void push(Time time, int32_t priority, EventHandler* handler, uint64_t tag);
  // Removes and returns the earliest event. Precondition: !empty().
  Event pop();
  const Event& top() const { return heap_.front(); }
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  void reserve(size_t n) { heap_.reserve(n); }

 private:
  static bool earlier(const Event& a, const Event& b) {
    if (a.time != b.time) return a.time < b.time;
    if (a.priority != b.priority) return a.priority < b.priority;
    return a.sequence < b.sequence;
  }
  void sift_up(size_t i);
  void sift_down(size_t i);

  std::vector<Event> heap_;
  uint64_t next_sequence_ = 0;
};

}  // namespace gcsim::sim
