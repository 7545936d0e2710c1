#include "sim/engine/trace_writer.h"

#include <cinttypes>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace gcsim::sim {

namespace {
std::string quoted(const std::string& s) { return nlohmann::json(s).dump(); }
}  // namespace

std::string trace_timestamp(Time t) {
  const int64_t p = t.ps();
  char buf[48];
  std::snprintf(buf, sizeof buf, "%" PRId64 ".%06" PRId64, p / 1'000'000, p % 1'000'000);
  return buf;
}

TraceWriter::TraceWriter(const std::string& path) : out_(path) {
  if (!out_) throw std::runtime_error("cannot create trace file " + path);
  out_ << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
}

TraceWriter::~TraceWriter() { close(); }

void TraceWriter::begin_event() {
  if (!first_) out_ << ",\n";
  first_ = false;
}

void TraceWriter::process_name(int pid, const std::string& name) {
  begin_event();
  out_ << "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" << pid
       << ",\"args\":{\"name\":" << quoted(name) << "}}";
  begin_event();
  out_ << "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":" << pid
       << ",\"args\":{\"sort_index\":" << pid << "}}";
}

void TraceWriter::thread_name(int pid, int tid, const std::string& name) {
  begin_event();
  out_ << "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" << pid << ",\"tid\":" << tid
       << ",\"args\":{\"name\":" << quoted(name) << "}}";
}

void TraceWriter::span(int pid, int tid, const std::string& name, const char* category,
                       Time start, Time end, const std::string& args_json) {
  begin_event();
  out_ << "{\"ph\":\"X\",\"name\":" << quoted(name) << ",\"cat\":\"" << category
       << "\",\"pid\":" << pid << ",\"tid\":" << tid << ",\"ts\":" << trace_timestamp(start)
       << ",\"dur\":" << trace_timestamp(Time::zero() + (end - start));
  if (!args_json.empty()) out_ << ",\"args\":" << args_json;
  out_ << "}";
}

void TraceWriter::counter(int pid, const std::string& name, Time when, double value) {
  begin_event();
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", value);
  out_ << "{\"ph\":\"C\",\"name\":" << quoted(name) << ",\"pid\":" << pid
       << ",\"ts\":" << trace_timestamp(when) << ",\"args\":{\"value\":" << buf << "}}";
}

void TraceWriter::close() {
  if (closed_) return;
  closed_ = true;
  out_ << "\n]}\n";
  out_.close();
}

}  // namespace gcsim::sim
