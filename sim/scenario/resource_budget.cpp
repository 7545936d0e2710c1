#include "sim/scenario/resource_budget.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "sim/report/format.h"
#include "sim/config/config_error.h"
#include "sim/engine/simulator.h"

namespace gcsim::cli {

namespace {

// "2.3e+09" for large counts, plain below a million.
std::string count(double n) { return n < 1e6 ? fmt("%.0f", n) : fmt("%.2g", n); }

std::string bytes_text(double b) {
  if (b >= 1e12) return fmt("%.3g TB", b / 1e12);
  return human_bytes(b);
}

}  // namespace

ResourceLimits ResourceLimits::machine() {
  // 80% of the least of these: the rest is the OS's and the estimate's margin.
  ResourceLimits l = machine_total();
  l.max_memory_bytes *= kMachineShare;
  return l;
}

ResourceLimits ResourceLimits::machine_total() {
  ResourceLimits l;
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  l.max_memory_bytes = pages > 0 && page > 0 ? static_cast<double>(pages) * page : 16e9;
  l.memory_source = "physical memory";
  // A container's limit (cgroup v2), when lower.
  std::ifstream cg("/sys/fs/cgroup/memory.max");
  std::string text;
  if (cg >> text && text != "max") {
    const double v = std::strtod(text.c_str(), nullptr);
    if (v > 0 && v < l.max_memory_bytes) {
      l.max_memory_bytes = v;
      l.memory_source = "the cgroup's memory.max";
    }
  }
  struct rlimit r{};
  if (getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != RLIM_INFINITY &&
      static_cast<double>(r.rlim_cur) < l.max_memory_bytes) {
    l.max_memory_bytes = static_cast<double>(r.rlim_cur);
    l.memory_source = "ulimit -v";
  }
  return l;
}

std::string ResourceLimits::memory_text() const {
  if (memory_source == "--max-memory") return "--max-memory " + human_bytes(max_memory_bytes);
  return human_bytes(max_memory_bytes) + " (80% of this machine's " +
         human_bytes(max_memory_bytes / kMachineShare) + ", " + memory_source +
         "; --max-memory sets another limit)";
}

std::string ResourceLimits::events_text() const {
  return "--max-events " + count(static_cast<double>(max_events)) +
         (events_from_flag ? "" : " (the default; --max-events raises it)");
}

ResourceEstimate ResourceEstimate::from_ops(double stored_ops, double run_ops,
                                            double extra_bytes_per_stored_op) {
  ResourceEstimate e;
  e.stored_ops = stored_ops;
  e.run_ops = run_ops;
  e.memory_bytes = kBaseBytes + stored_ops * (kBytesPerStoredOp + extra_bytes_per_stored_op) +
                   run_ops * kBytesPerRunOp;
  e.events = run_ops * kEventsPerRunOp;
  return e;
}

bool ResourceEstimate::within(const ResourceLimits& l) const {
  return memory_bytes <= l.max_memory_bytes && events <= static_cast<double>(l.max_events);
}

std::string ResourceEstimate::over(const ResourceLimits& l) const {
  std::string s = "about " + bytes_text(memory_bytes) + " of memory and " + count(events) + " events";
  const bool memory = memory_bytes > l.max_memory_bytes;
  const bool events_over = events > static_cast<double>(l.max_events);
  s += ", more than ";
  if (memory) s += l.memory_text();
  if (memory && events_over) s += " and ";
  if (events_over) s += l.events_text();
  return s;
}

void enforce(const ResourceEstimate& e, const ResourceLimits& l, const sim::config::ConfigReader& at,
             const std::string& key, const std::string& what, const std::string& advice) {
  if (e.within(l)) return;
  at.fail(key, what + ": " + e.over(l) + ". " + advice);
}

double resident_memory_bytes() {
  std::ifstream f("/proc/self/statm");
  double size = 0, resident = 0;
  if (!(f >> size >> resident)) return 0;
  return resident * static_cast<double>(sysconf(_SC_PAGE_SIZE));
}

double virtual_memory_bytes() {
  std::ifstream f("/proc/self/statm");
  double size = 0;
  if (!(f >> size)) return 0;
  return size * static_cast<double>(sysconf(_SC_PAGE_SIZE));
}

RunGuard::RunGuard(sim::Simulator& simulator, const ResourceLimits& limits,
                   const ResourceEstimate& estimate)
    : simulator_(simulator), limits_(limits), estimate_(estimate) {
  simulator_.set_event_limit(limits_.max_events);
  // Under ulimit -v allocations fail by address space, which runs ahead of
  // resident memory: watch what the limit limits.
  const bool address_space = limits_.memory_source == "ulimit -v";
  simulator_.set_watchdog([this, address_space] {
    memory_seen_ = address_space ? virtual_memory_bytes() : resident_memory_bytes();
    return memory_seen_ <= limits_.max_memory_bytes;
  });
}

void RunGuard::check() const {
  using Limit = sim::Simulator::Limit;
  const Limit why = simulator_.limit_reached();
  if (why == Limit::none) return;
  std::string at = " at simulated time " + human_time(simulator_.now().seconds());
  if (estimate_.events > 0) {
    at += " (estimated before the run: " + count(estimate_.events) + " events, " +
          bytes_text(estimate_.memory_bytes) + ")";
  }
  if (why == Limit::events) {
    throw sim::config::ConfigError(
        "command line", 0, "--max-events",
        "the run reached " + limits_.events_text() + at +
            "; nothing was written. Raise --max-events, or shrink the workload");
  }
  throw sim::config::ConfigError(
      "command line", 0, "--max-memory",
      "the run's memory reached " + human_bytes(memory_seen_) + ", over " +
          limits_.memory_text() + at + "; it was stopped before the machine ran out. Shrink the "
          "workload or raise --max-memory");
}

}  // namespace gcsim::cli
