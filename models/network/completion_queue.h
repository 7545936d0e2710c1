// The flow model's pending drain times: an indexed binary min-heap of
// (time, flow id), so that a flow whose rate changed moves in place instead
// of leaving a stale event behind in the simulator's queue. Ties go to the
// lower id, so the order never depends on insertion history.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include "sim/engine/time.h"

namespace gcsim::models::network {

class CompletionQueue {
 public:
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  bool contains(int32_t id) const {
    return id >= 0 && static_cast<size_t>(id) < pos_.size() && pos_[ix(id)] >= 0;
  }
  // Earliest entry. Precondition: !empty().
  sim::Time top_time() const { return heap_.front().when; }
  int32_t top_id() const { return heap_.front().id; }

  // Inserts `id` or moves it to `when`.
  void set(int32_t id, sim::Time when) {
    if (id < 0) throw std::logic_error("completion queue: negative id");
    if (ix(id) >= pos_.size()) pos_.resize(ix(id) + 1, -1);
    int32_t p = pos_[ix(id)];
    if (p < 0) {
      p = static_cast<int32_t>(heap_.size());
      heap_.push_back({when, id});
      pos_[ix(id)] = p;
      up(p);
      return;
    }
    const sim::Time old = heap_[ix(p)].when;
    heap_[ix(p)].when = when;
    if (when < old) {
      up(p);
    } else {
      down(p);
    }
  }

  void erase(int32_t id) {
    if (!contains(id)) return;
    const int32_t p = pos_[ix(id)];
    pos_[ix(id)] = -1;
    const Entry last = heap_.back();
    heap_.pop_back();
    if (p == static_cast<int32_t>(heap_.size())) return;
    heap_[ix(p)] = last;
    pos_[ix(last.id)] = p;
    up(p);
    down(pos_[ix(last.id)]);
  }

  // Removes and returns the earliest id. Precondition: !empty().
  int32_t pop() {
    const int32_t id = heap_.front().id;
    erase(id);
    return id;
  }

 private:
  struct Entry {
    sim::Time when;
    int32_t id;
  };
  static size_t ix(int32_t i) { return static_cast<size_t>(i); }
  static bool before(const Entry& a, const Entry& b) {
    return a.when != b.when ? a.when < b.when : a.id < b.id;
  }
  void place(int32_t p, const Entry& e) {
    heap_[ix(p)] = e;
    pos_[ix(e.id)] = p;
  }
  void up(int32_t p) {
    const Entry e = heap_[ix(p)];
    while (p > 0) {
      const int32_t parent = (p - 1) / 2;
      if (!before(e, heap_[ix(parent)])) break;
      place(p, heap_[ix(parent)]);
      p = parent;
    }
    place(p, e);
  }
  void down(int32_t p) {
    const Entry e = heap_[ix(p)];
    const auto n = static_cast<int32_t>(heap_.size());
    for (;;) {
      int32_t c = 2 * p + 1;
      if (c >= n) break;
      if (c + 1 < n && before(heap_[ix(c + 1)], heap_[ix(c)])) ++c;
      if (!before(heap_[ix(c)], e)) break;
      place(p, heap_[ix(c)]);
      p = c;
    }
    place(p, e);
  }

  std::vector<Entry> heap_;
  std::vector<int32_t> pos_;  // heap index per id, -1 when absent
};

}  // namespace gcsim::models::network
