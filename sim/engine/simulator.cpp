#include "sim/engine/simulator.h"

#include <stdexcept>
#include <string>

namespace gcsim::sim {

Simulator::Simulator(uint64_t seed) : seed_(seed) { queue_.reserve(1024); }

void Simulator::schedule_at(Time when, EventHandler& handler, uint64_t tag, int32_t priority) {
  if (when < now_) {
    throw std::logic_error("event scheduled in the past: " + std::to_string(when.ps()) +
                           " ps < now " + std::to_string(now_.ps()) + " ps");
  }
  queue_.push(when, priority, &handler, tag);
}

void Simulator::call_at(Time when, std::function<void()> fn, int32_t priority) {
  schedule_at(when, closures_, closures_.add(std::move(fn)), priority);
}

uint64_t Simulator::run(Time until) {
  stopped_ = false;
  const uint64_t start = events_executed_;
  last_progress_ = std::chrono::steady_clock::now();
  while (!stopped_ && !queue_.empty() && queue_.next_time() <= until) {
    if (events_executed_ >= event_limit_) {
      limit_ = Limit::events;
      break;
    }
    Event ev = queue_.pop();
    now_ = ev.time;  // monotonic by construction: schedule_at refuses the past
    ev.handler->handle_event(ev.tag);
    // Checking the wall clock costs ~20 ns; do it once per 2^20 events.
    if ((++events_executed_ & 0xFFFFF) == 0) {
      if (progress_) report_progress();
      if (watchdog_ && !watchdog_()) {
        limit_ = Limit::watchdog;
        break;
      }
    }
  }
  return events_executed_ - start;
}

void Simulator::report_progress() {
  auto t = std::chrono::steady_clock::now();
  if (t - last_progress_ >= std::chrono::seconds(1)) {
    last_progress_ = t;
    progress_(now_, events_executed_);
  }
}

uint64_t Simulator::ClosurePool::add(std::function<void()> fn) {
  if (!free_.empty()) {
    uint64_t slot = free_.back();
    free_.pop_back();
    slots_[slot] = std::move(fn);
    return slot;
  }
  slots_.push_back(std::move(fn));
  return slots_.size() - 1;
}

void Simulator::ClosurePool::handle_event(uint64_t slot) {
  // Move out first: the closure may schedule more closures and grow slots_.
  std::function<void()> fn = std::move(slots_[slot]);
  slots_[slot] = nullptr;
  free_.push_back(slot);
  fn();
}

}  // namespace gcsim::sim
