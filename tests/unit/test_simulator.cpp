// The run loop: the clock follows the events, run(until) and stop() end a
// run early without losing events, the past is refused, closures can
// schedule closures, and a seeded run is reproducible.
#include <array>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "catch.h"
#include "sim/engine/simulator.h"

using namespace gcsim::sim;

namespace {

// Records (time in ps, tag) of every event it receives.
class Recorder : public EventHandler {
 public:
  explicit Recorder(Simulator& sim) : sim_(sim) {}
  void handle_event(uint64_t tag) override { log.emplace_back(sim_.now().ps(), tag); }
  std::vector<std::pair<int64_t, uint64_t>> log;

 private:
  Simulator& sim_;
};

Time at_ns(int64_t v) { return Time::zero() + ns(v); }

}  // namespace

TEST_CASE("simulator runs events in order and advances the clock", "[engine]") {
  Simulator sim;
  Recorder r(sim);
  // Scheduled out of order: 30 ns (tag 3), 10 ns (tag 1), 20 ns priority 1
  // (tag 22), 20 ns priority 0 (tag 2). Expected: 1@10, 2@20, 22@20, 3@30.
  sim.schedule_at(at_ns(30), r, 3);
  sim.schedule_at(at_ns(10), r, 1);
  sim.schedule_at(at_ns(20), r, 22, 1);
  sim.schedule_at(at_ns(20), r, 2, 0);
  CHECK(sim.events_pending() == 4);
  CHECK(sim.run() == 4);
  using Log = std::vector<std::pair<int64_t, uint64_t>>;
  CHECK(r.log == Log{{10'000, 1}, {20'000, 2}, {20'000, 22}, {30'000, 3}});
  CHECK(sim.now() == at_ns(30));
  CHECK(sim.events_executed() == 4);
  CHECK(sim.events_pending() == 0);
}

TEST_CASE("run(until) runs events at until and stops before later ones", "[engine]") {
  Simulator sim;
  Recorder r(sim);
  for (int64_t t : {10, 20, 30, 40}) sim.schedule_at(at_ns(t), r, static_cast<uint64_t>(t));
  // until = 20 ns: the events at 10 and 20 ns run (the bound is inclusive),
  // 30 and 40 stay pending and the clock rests at the last event, 20 ns.
  CHECK(sim.run(at_ns(20)) == 2);
  CHECK(sim.now() == at_ns(20));
  CHECK(sim.events_pending() == 2);
  // until = 25 ns: nothing lies in (20, 25], so nothing runs.
  CHECK(sim.run(at_ns(25)) == 0);
  CHECK(sim.events_pending() == 2);
  // A plain run() finishes the rest; events_executed counts across calls.
  CHECK(sim.run() == 2);
  CHECK(sim.events_executed() == 4);
  CHECK(r.log.back() == std::pair<int64_t, uint64_t>{40'000, 40});
}

TEST_CASE("stop() ends the run after the current event; run() resumes", "[engine]") {
  Simulator sim;
  // A handler that counts and stops the run at its 3rd event.
  struct Stopper : EventHandler {
    explicit Stopper(Simulator& s) : sim(s) {}
    void handle_event(uint64_t) override {
      if (++count == 3) sim.stop();
    }
    Simulator& sim;
    int count = 0;
  } s(sim);
  for (int64_t t = 1; t <= 5; ++t) sim.schedule_at(at_ns(t), s);
  // Events at 1, 2, 3 ns run; the 3rd calls stop(), so 4 and 5 wait.
  CHECK(sim.run() == 3);
  CHECK(sim.now() == at_ns(3));
  CHECK(sim.events_pending() == 2);
  // stop() before run() does not carry over: run() clears it and goes on.
  sim.stop();
  CHECK(sim.run() == 2);
  CHECK(s.count == 5);
  CHECK(sim.events_executed() == 5);
}

TEST_CASE("scheduling in the past throws std::logic_error", "[engine]") {
  Simulator sim;
  Recorder r(sim);
  sim.schedule_at(at_ns(10), r);
  sim.run();
  REQUIRE(sim.now() == at_ns(10));
  CHECK_THROWS_AS(sim.schedule_at(at_ns(9), r), std::logic_error);
  CHECK_THROWS_AS(sim.schedule_in(ps(-1), r), std::logic_error);
  CHECK_THROWS_AS(sim.call_at(at_ns(5), [] {}), std::logic_error);
  // Now itself is allowed (zero delay), and a refused event left no trace.
  CHECK(sim.events_pending() == 0);
  sim.schedule_in(Duration::zero(), r, 7);
  CHECK(sim.run() == 1);
  CHECK(r.log.back() == std::pair<int64_t, uint64_t>{10'000, 7});
}

TEST_CASE("an event scheduled at the current time runs in the same instant", "[engine]") {
  Simulator sim;
  std::vector<std::string> trace;
  // A at 5 ns schedules B at +0 and C at +1 ns; D was already at 5 ns with
  // a later sequence than A but earlier than B. Expected: A, D, B at 5 ns,
  // then C at 6 ns.
  sim.call_at(at_ns(5), [&] {
    trace.push_back("A@" + std::to_string(sim.now().ps()));
    sim.call_in(Duration::zero(), [&] { trace.push_back("B@" + std::to_string(sim.now().ps())); });
    sim.call_in(ns(int64_t{1}), [&] { trace.push_back("C@" + std::to_string(sim.now().ps())); });
  });
  sim.call_at(at_ns(5), [&] { trace.push_back("D@" + std::to_string(sim.now().ps())); });
  sim.run();
  CHECK(trace == std::vector<std::string>{"A@5000", "D@5000", "B@5000", "C@6000"});
}

TEST_CASE("closures can schedule closures", "[engine]") {
  Simulator sim;
  std::vector<int64_t> times;
  // A countdown: each closure records now and schedules the next 3 ns later,
  // 10 in all starting at 2 ns: times 2, 5, 8, ..., 29 ns.
  std::function<void(int)> step = [&](int left) {
    times.push_back(sim.now().ps());
    if (left > 1) sim.call_in(ns(int64_t{3}), [&step, left] { step(left - 1); });
  };
  sim.call_at(at_ns(2), [&] { step(10); });
  CHECK(sim.run() == 10);
  std::vector<int64_t> expected;
  for (int i = 0; i < 10; ++i) expected.push_back(2'000 + 3'000 * i);
  CHECK(times == expected);
  CHECK(sim.events_executed() == 10);
}

TEST_CASE("closure slots are reused and large captures survive", "[engine]") {
  Simulator sim;
  // A capture bigger than std::function's small buffer (a 64-byte array)
  // must arrive intact; 1000 sequential closures each scheduling the next
  // exercise slot reuse. Sum of 0..999 = 499500.
  int64_t sum = 0;
  std::function<void(int)> chain = [&](int i) {
    std::array<int64_t, 8> payload{};
    payload.fill(i);
    sim.call_in(ps(1), [&, payload, i] {
      sum += payload[7];
      if (i + 1 < 1000) chain(i + 1);
    });
  };
  chain(0);
  CHECK(sim.run() == 1000);
  CHECK(sum == 499'500);
  CHECK(sim.now() == Time::from_ps(1000));
}

TEST_CASE("handler and closure events share one order", "[engine]") {
  Simulator sim;
  std::vector<int> trace;
  struct Push : EventHandler {
    explicit Push(std::vector<int>& t) : trace(t) {}
    void handle_event(uint64_t tag) override { trace.push_back(static_cast<int>(tag)); }
    std::vector<int>& trace;
  } h(trace);
  // Same time, same priority: insertion order decides across both kinds.
  sim.schedule_at(at_ns(1), h, 1);
  sim.call_at(at_ns(1), [&] { trace.push_back(2); });
  sim.schedule_at(at_ns(1), h, 3);
  sim.call_at(
      at_ns(1), [&] { trace.push_back(0); }, -1);  // priority -1 first
  sim.run();
  CHECK(trace == std::vector<int>{0, 1, 2, 3});
}

namespace {

// A small random workload: 50 agents each rescheduling itself with a delay
// from its own stream. Returns the trace of (time, agent) for 10k events.
std::vector<std::pair<int64_t, uint64_t>> random_run(uint64_t seed) {
  Simulator sim(seed);
  std::vector<std::pair<int64_t, uint64_t>> trace;
  struct Agent : EventHandler {
    Agent(Simulator& s, uint64_t id, std::vector<std::pair<int64_t, uint64_t>>& t)
        : sim(s), rng(s.random_stream("agent" + std::to_string(id))), trace(t) {}
    void handle_event(uint64_t id) override {
      trace.emplace_back(sim.now().ps(), id);
      // Delays of 0..9 ns in whole ns: many same-time ties.
      sim.schedule_in(ns(static_cast<int64_t>(rng.uniform_int(10))), *this, id);
      if (trace.size() == 10'000) sim.stop();
    }
    Simulator& sim;
    RandomStream rng;
    std::vector<std::pair<int64_t, uint64_t>>& trace;
  };
  std::vector<Agent> agents;
  agents.reserve(50);
  for (uint64_t i = 0; i < 50; ++i) agents.emplace_back(sim, i, trace);
  for (uint64_t i = 0; i < 50; ++i) sim.schedule_at(Time::zero(), agents[i], i);
  sim.run();
  return trace;
}

}  // namespace

TEST_CASE("same seed gives the same event sequence; another seed does not", "[engine]") {
  const auto a = random_run(5);
  const auto b = random_run(5);
  const auto c = random_run(6);
  REQUIRE(a.size() == 10'000);
  CHECK(a == b);
  CHECK(a != c);
}

namespace {

// Reschedules itself 1 ns later, forever: a run without an end.
class Ticker : public EventHandler {
 public:
  explicit Ticker(Simulator& sim) : sim_(sim) {}
  void handle_event(uint64_t) override { sim_.schedule_in(ns(int64_t{1}), *this); }

 private:
  Simulator& sim_;
};

}  // namespace

TEST_CASE("an event limit stops an endless run after exactly that many events", "[engine]") {
  Simulator sim;
  Ticker t(sim);
  sim.schedule_at(Time::zero(), t);
  sim.set_event_limit(12'345);
  CHECK(sim.run() == 12'345);
  CHECK(sim.limit_reached() == Simulator::Limit::events);
  // Event k (from 0) ran at k ns: the last one at 12,344 ns.
  CHECK(sim.now() == at_ns(12'344));
}

TEST_CASE("a watchdog is asked every 2^20 events and can stop the run", "[engine]") {
  Simulator sim;
  Ticker t(sim);
  sim.schedule_at(Time::zero(), t);
  int asked = 0;
  sim.set_watchdog([&asked] { return ++asked < 3; });
  // Asked after 2^20, 2 x 2^20 and 3 x 2^20 events; the third says stop.
  CHECK(sim.run() == 3u << 20);
  CHECK(asked == 3);
  CHECK(sim.limit_reached() == Simulator::Limit::watchdog);
}
