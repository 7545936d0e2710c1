// Streams a Chrome trace-event JSON file (the format Perfetto and
// chrome://tracing open): one process per GPU, one thread per stream, "X"
// spans for ops and "C" counters for HBM use. Timestamps are microseconds
// printed from integer picoseconds, so output is byte-identical across runs.
#pragma once

#include <fstream>
#include <string>

#include "sim/engine/time.h"

namespace gcsim::sim {

class TraceWriter {
 public:
  // Throws std::runtime_error if the file cannot be created.
  explicit TraceWriter(const std::string& path);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  void process_name(int pid, const std::string& name);
  void thread_name(int pid, int tid, const std::string& name);
  // A span; `args_json` is a JSON object literal or "".
  void span(int pid, int tid, const std::string& name, const char* category, Time start,
            Time end, const std::string& args_json = "");
  void counter(int pid, const std::string& name, Time when, double value);
  void close();

 private:
  void begin_event();
  std::ofstream out_;
  bool first_ = true;
  bool closed_ = false;
};

// "12.345678" µs from picoseconds, exact.
std::string trace_timestamp(Time t);

}  // namespace gcsim::sim
