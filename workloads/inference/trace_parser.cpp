#include "workloads/inference/trace_parser.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>

namespace gcsim::workloads::inference {

namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> f;
  std::string cur;
  std::istringstream in(line);
  while (std::getline(in, cur, ',')) f.push_back(trim(cur));
  if (!line.empty() && line.back() == ',') f.push_back("");
  return f;
}

bool parse_number(const std::string& s, double& v) {
  if (s.empty()) return false;
  char* end = nullptr;
  v = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && std::isfinite(v);
}

}  // namespace

TraceParser::Column TraceParser::column_named(const std::string& n) {
  if (n == "arrival_s" || n == "arrival" || n == "timestamp") return kArrival;
  if (n == "prompt_tokens" || n == "prompt" || n == "input_tokens" || n == "input_length") {
    return kPrompt;
  }
  if (n == "output_tokens" || n == "output" || n == "output_length") return kOutput;
  if (n == "prefix_id" || n == "prefix") return kPrefix;
  return kNone;
}

const char* TraceParser::column_text(Column c) {
  switch (c) {
    case kArrival: return "arrival_s";
    case kPrompt: return "prompt_tokens";
    case kOutput: return "output_tokens";
    case kPrefix: return "prefix_id";
    case kNone: break;
  }
  return "?";
}

// Checks one field's value and stores it into `row`.
void TraceParser::set_field(TraceRow& row, Column c, double v, int line) {
  const auto fail = [&](const std::string& why) {
    throw TraceError{line, std::string(column_text(c)) + " " + why};
  };
  switch (c) {
    case kArrival:
      if (v < 0) fail("must not be negative");
      row.arrival_s = v;
      break;
    case kPrompt:
    case kOutput:
      if (v < 1 || v != std::floor(v) || v > 1e9) fail("must be a whole number of tokens >= 1");
      (c == kPrompt ? row.prompt : row.output) = static_cast<int64_t>(v);
      break;
    case kPrefix:
      if (v < 0 || v != std::floor(v) || v > 9e15) fail("must be a whole number >= 0");
      row.prefix_id = static_cast<int64_t>(v);
      break;
    case kNone: break;
  }
}

void TraceParser::add_line(const std::string& raw, int line) {
  const std::string s = trim(raw);
  if (s.empty() || s[0] == '#') return;
  TraceRow row;
  row.line = line;
  bool have[4] = {false, false, false, false};
  if (jsonl_) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(s);
    } catch (const nlohmann::json::exception&) {
      throw TraceError{line, "not a JSON object"};
    }
    if (!j.is_object()) throw TraceError{line, "not a JSON object"};
    for (const auto& [key, value] : j.items()) {
      const Column c = column_named(key);
      if (c == kNone) {
        throw TraceError{line, "unknown key '" + key +
                                   "' (expected arrival_s, prompt_tokens, output_tokens, "
                                   "prefix_id)"};
      }
      if (!value.is_number()) throw TraceError{line, std::string(column_text(c)) + " is not a number"};
      set_field(row, c, value.get<double>(), line);
      have[c] = true;
    }
  } else {
    const std::vector<std::string> f = split_csv(s);
    double first = 0;
    if (header_possible_ && !f.empty() && !parse_number(f[0], first)) {
      columns_.clear();
      for (const auto& name : f) {
        const Column c = column_named(name);
        if (c == kNone) {
          throw TraceError{line, "unknown column '" + name +
                                     "' (expected arrival_s, prompt_tokens, output_tokens, "
                                     "prefix_id)"};
        }
        columns_.push_back(c);
      }
      header_possible_ = false;
      return;
    }
    header_possible_ = false;
    if (f.size() < 3 || f.size() > columns_.size()) {
      throw TraceError{line, "expected " + std::to_string(std::min<size_t>(3, columns_.size())) +
                                 " to " + std::to_string(columns_.size()) +
                                 " comma-separated fields, got " + std::to_string(f.size())};
    }
    for (size_t i = 0; i < f.size(); ++i) {
      double v = 0;
      if (columns_[i] == kPrefix && f[i].empty()) continue;  // no prefix on this line
      if (!parse_number(f[i], v)) {
        throw TraceError{line, std::string(column_text(columns_[i])) + " '" + f[i] +
                                   "' is not a number"};
      }
      set_field(row, columns_[i], v, line);
      have[columns_[i]] = true;
    }
  }
  for (Column c : {kArrival, kPrompt, kOutput}) {
    if (!have[c]) throw TraceError{line, std::string("missing ") + column_text(c)};
  }
  rows_.push_back(row);
}

std::vector<TraceRow> TraceParser::finish() {
  if (rows_.empty()) throw TraceError{0, "the trace has no requests"};
  return std::move(rows_);
}

std::vector<TraceRow> parse_trace(const std::string& text, bool jsonl) {
  TraceParser parser(jsonl);
  std::istringstream in(text);
  std::string raw;
  int line = 0;
  while (std::getline(in, raw)) parser.add_line(raw, ++line);
  return parser.finish();
}

}  // namespace gcsim::workloads::inference
