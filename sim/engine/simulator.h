// The discrete-event engine: a clock, the pending-event queue and the run
// loop. Components receive a Simulator& (no singletons) and schedule events
// on it; the engine knows nothing about GPUs, networks or workloads.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "sim/engine/event_queue.h"
#include "sim/engine/random.h"
#include "sim/engine/time.h"

namespace gcsim::sim {

// Called about once per wall-clock second during long runs (progress on
// stderr); receives the current simulated time and events executed so far.
using ProgressFn = std::function<void(Time now, uint64_t events)>;

class Simulator {
 public:
  explicit Simulator(uint64_t seed = 1);
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  Time now() const { return now_; }
  uint64_t seed() const { return seed_; }
  uint64_t events_executed() const { return events_executed_; }
  size_t events_pending() const { return queue_.size(); }

  // Schedules handler.handle_event(tag) at an absolute time (not in the past).
  void schedule_at(Time when, EventHandler& handler, uint64_t tag = 0, int32_t priority = 0);
  void schedule_in(Duration delay, EventHandler& handler, uint64_t tag = 0,
                   int32_t priority = 0) {
    schedule_at(now_ + delay, handler, tag, priority);
  }
  // Closure events, for glue code where a handler class would be ceremony.
  // Hot paths (tiles, packets) should use EventHandler directly.
  void call_at(Time when, std::function<void()> fn, int32_t priority = 0);
  void call_in(Duration delay, std::function<void()> fn, int32_t priority = 0) {
    call_at(now_ + delay, std::move(fn), priority);
  }

  // Runs until the queue drains, stop() is called, or the next event lies
  // beyond `until`. Returns the number of events executed by this call.
  uint64_t run(Time until = Time::max());
  void stop() { stopped_ = true; }

  void set_progress(ProgressFn fn) { progress_ = std::move(fn); }

  // Limits, for runs a user's config could make endless: run() stops before
  // the event that would pass `max_events` in all, or when `watchdog`
  // (called every 2^20 events) returns false; limit_reached() says which.
  enum class Limit { none, events, watchdog };
  void set_event_limit(uint64_t max_events) { event_limit_ = max_events; }
  void set_watchdog(std::function<bool()> fn) { watchdog_ = std::move(fn); }
  Limit limit_reached() const { return limit_; }

  // A deterministic stream for one named component ("gpu3/sm", "ecmp/leaf7").
  RandomStream random_stream(std::string_view component) const {
    return RandomStream(seed_, component);
  }

 private:
  // Owns pending closures; the event tag is the slot index.
  class ClosurePool : public EventHandler {
   public:
    uint64_t add(std::function<void()> fn);
    void handle_event(uint64_t slot) override;

   private:
    std::vector<std::function<void()>> slots_;
    std::vector<uint64_t> free_;
  };

  void report_progress();

  EventQueue queue_;
  ClosurePool closures_;
  Time now_ = Time::zero();
  uint64_t seed_;
  uint64_t events_executed_ = 0;
  bool stopped_ = false;
  ProgressFn progress_;
  uint64_t event_limit_ = UINT64_MAX;
  std::function<bool()> watchdog_;
  Limit limit_ = Limit::none;
  std::chrono::steady_clock::time_point last_progress_{};
};

}  // namespace gcsim::sim
