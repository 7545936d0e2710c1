// The limits a run is held to (sim/scenario/resource_budget.h): estimates from
// op counts with the stated coefficients, the refusal naming the key, and
// the guard that stops a running simulation at either limit.
#include <string>

#include "catch.h"
#include "sim/scenario/resource_budget.h"
#include "sim/config/config_error.h"
#include "sim/engine/simulator.h"

using namespace gcsim;
using cli::ResourceEstimate;
using cli::ResourceLimits;
using sim::config::ConfigError;

namespace {
bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

class Ticker : public sim::EventHandler {
 public:
  explicit Ticker(sim::Simulator& s) : sim_(s) {}
  void handle_event(uint64_t) override { sim_.schedule_in(sim::ns(int64_t{1}), *this); }

 private:
  sim::Simulator& sim_;
};
}  // namespace

TEST_CASE("resource budget: an estimate from op counts", "[config]") {
  // 1e6 ops stored, 2e6 run: 64 MiB + 1e6 x 600 B + 2e6 x 80 B = 827.1 MB;
  // 2e6 x 6 = 1.2e7 events.
  const ResourceEstimate e = ResourceEstimate::from_ops(1e6, 2e6);
  CHECK(e.memory_bytes == Approx(64.0 * 1048576 + 600e6 + 160e6));
  CHECK(e.events == Approx(1.2e7));
  ResourceLimits l;
  l.max_memory_bytes = 1e9;
  l.memory_source = "--max-memory";
  CHECK(e.within(l));
  l.max_memory_bytes = 5e8;
  CHECK_FALSE(e.within(l));
  CHECK(contains(e.over(l), "more than --max-memory 477 MiB"));
  l.max_events = 1000;
  l.events_from_flag = true;
  CHECK(contains(e.over(l), "and --max-events 1000"));
}

TEST_CASE("resource budget: the machine's default is 80% of its memory", "[config]") {
  const ResourceLimits total = ResourceLimits::machine_total();
  const ResourceLimits l = ResourceLimits::machine();
  CHECK(total.max_memory_bytes > 0);
  CHECK(l.max_memory_bytes == Approx(0.8 * total.max_memory_bytes));
  CHECK(l.max_events == 1'000'000'000u);
  CHECK(contains(l.memory_text(), "80% of this machine's"));
}

TEST_CASE("resource budget: the guard stops a run at the event limit", "[config]") {
  sim::Simulator s;
  Ticker t(s);
  s.schedule_at(sim::Time::zero(), t);
  ResourceLimits l = ResourceLimits::machine();
  l.max_events = 5000;
  l.events_from_flag = true;
  const cli::RunGuard guard(s, l, ResourceEstimate::from_ops(10, 10));
  s.run();
  try {
    guard.check();
    FAIL("no limit reported");
  } catch (const ConfigError& e) {
    CHECK(e.key() == "--max-events");
    CHECK(contains(e.message(), "reached --max-events 5000 at simulated time 5 us"));
  }
}

TEST_CASE("resource budget: the guard stops a run whose memory passes the limit", "[config]") {
  sim::Simulator s;
  Ticker t(s);
  s.schedule_at(sim::Time::zero(), t);
  ResourceLimits l = ResourceLimits::machine();
  l.max_memory_bytes = 1e6;  // any process holds more than 1 MB resident
  l.memory_source = "--max-memory";
  const cli::RunGuard guard(s, l, ResourceEstimate::from_ops(10, 10));
  // The watchdog looks at resident memory every 2^20 events.
  CHECK(s.run() == 1u << 20);
  try {
    guard.check();
    FAIL("no limit reported");
  } catch (const ConfigError& e) {
    CHECK(e.key() == "--max-memory");
    CHECK(contains(e.message(), "over --max-memory 1000000 B"));
  }
}
