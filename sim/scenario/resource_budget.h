// What a run may use, decided before it starts, and the same limits held
// while it runs. A config is turned into an estimate of the ops it will
// store and run, the memory they take and the events the engine will
// execute (each loader knows its workload's shape); an estimate over the
// limits is refused with exit status 2, naming the key that drives it.
// While the run goes, the engine stops at the event limit and a watchdog
// stops it when resident memory passes the memory limit, so that what the
// estimate misses still ends with a message, not an out-of-memory kill.
//
// Limits: --max-memory SIZE (default: 80% of this machine's memory, the
// least of physical memory, the cgroup's memory.max and ulimit -v) and
// --max-events N (default 1e9, about 15 minutes of simulation on one core).
#pragma once

#include <cstdint>
#include <string>

#include "sim/config/config_reader.h"

namespace gcsim::sim {
class Simulator;
}

namespace gcsim::cli {

inline constexpr uint64_t kDefaultMaxEvents = 1'000'000'000;
inline constexpr double kMachineShare = 0.8;  // of the machine's memory, by default

// Measured on the training generator and the graph loader (README
// "Limits"): bytes per op stored in the IR (with its name and deps), per op
// run (its record and replay state), per op of a hand-written graph (its
// YAML node, resolved config and docs as well), the process's fixed memory,
// and events per op run (kernel waves, collective steps and completions).
inline constexpr double kBytesPerStoredOp = 600;
inline constexpr double kBytesPerRunOp = 80;
inline constexpr double kBytesPerGraphOp = 10'000;
inline constexpr double kBaseBytes = 64.0 * (1 << 20);
inline constexpr double kEventsPerRunOp = 6;
// Serving: bytes per request (its record, KV blocks' bookkeeping, metrics)
// and events per request (arrival, scheduler steps, completion), measured
// on configs/examples/inference_llama3_8b.yaml at 10,000-40,000 requests.
inline constexpr double kBytesPerRequest = 4000;
inline constexpr double kEventsPerRequest = 3;
// Chakra traces, loaded whole: memory per byte of ET file and ET bytes per
// op (an 803 MB export of a 500-layer Llama 3 8B step: 3.85M ops, 5.4 GB).
inline constexpr double kBytesPerTraceByte = 7;
inline constexpr double kTraceBytesPerOp = 210;

struct ResourceLimits {
  double max_memory_bytes = 0;  // > 0
  uint64_t max_events = kDefaultMaxEvents;
  std::string memory_source;    // "--max-memory", or where the machine's figure came from
  bool events_from_flag = false;
  // 80% of this machine's memory, and the default event limit.
  static ResourceLimits machine();
  // All of this machine's memory: physical, or less where the cgroup or ulimit -v says.
  static ResourceLimits machine_total();
  // Text for messages: "22.9 GiB (physical memory; --max-memory raises it)".
  std::string memory_text() const;
  std::string events_text() const;
};

struct ResourceEstimate {
  double stored_ops = 0;  // ops kept in memory (shared programs once)
  double run_ops = 0;     // ops executed, over every simulated rank
  double memory_bytes = 0;
  double events = 0;
  // From op counts with the coefficients above; extra_bytes_per_stored_op
  // adds what a workload keeps beside the IR (a graph's YAML, resolved config).
  static ResourceEstimate from_ops(double stored_ops, double run_ops,
                                   double extra_bytes_per_stored_op = 0);
  bool within(const ResourceLimits& l) const;
  // "about 145 GB of memory and 1.4e+09 events, more than this machine's ..."
  std::string over(const ResourceLimits& l) const;
};

// Refuses an estimate over the limits: `at.fail(key, ...)` with `what`
// (how the estimate was made) and `advice` (what to change).
void enforce(const ResourceEstimate& e, const ResourceLimits& l, const sim::config::ConfigReader& at,
             const std::string& key, const std::string& what, const std::string& advice);

// Resident memory and address space of this process, bytes
// (/proc/self/statm); 0 if unknown.
double resident_memory_bytes();
double virtual_memory_bytes();

// Holds a simulator to the limits while it runs: the event limit, and a
// watchdog on resident memory every 2^20 events. After run(), check()
// throws ConfigError naming the limit the run reached ("" when none).
class RunGuard {
 public:
  RunGuard(sim::Simulator& simulator, const ResourceLimits& limits, const ResourceEstimate& estimate);
  // Throws ConfigError("command line", ...) if the run stopped at a limit.
  void check() const;

 private:
  sim::Simulator& simulator_;
  ResourceLimits limits_;
  ResourceEstimate estimate_;
  double memory_seen_ = 0;
};

}  // namespace gcsim::cli
