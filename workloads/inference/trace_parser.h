// A serving trace, one request per line: CSV with columns arrival_s,
// prompt_tokens, output_tokens and optionally prefix_id (a header line
// naming them may reorder them), or JSON lines with those keys. Blank lines
// and lines starting with '#' are skipped. Lines are fed one at a time, so
// a trace of millions of requests is never held as text as well as rows.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gcsim::workloads::inference {

// One line of a request trace (CSV or JSONL).
struct TraceRow {
  double arrival_s = 0;  // seconds since the start of the run
  int64_t prompt = 0;    // prompt tokens
  int64_t output = 0;    // output tokens
  int64_t prefix_id = -1;
  int line = 0;          // 1-based line in the file
};

// Thrown naming the line on anything malformed.
struct TraceError {
  int line = 0;  // 1-based; 0: the file as a whole
  std::string message;
};

class TraceParser {
 public:
  explicit TraceParser(bool jsonl) : jsonl_(jsonl) {}
  // One line of the file (without its newline), `line` 1-based.
  void add_line(const std::string& raw, int line);
  size_t rows() const { return rows_.size(); }
  // The rows read; throws TraceError when there are none.
  std::vector<TraceRow> finish();

 private:
  enum Column { kArrival, kPrompt, kOutput, kPrefix, kNone };
  static Column column_named(const std::string& n);
  static const char* column_text(Column c);
  static void set_field(TraceRow& row, Column c, double v, int line);

  bool jsonl_;
  std::vector<Column> columns_{kArrival, kPrompt, kOutput, kPrefix};
  bool header_possible_ = true;
  std::vector<TraceRow> rows_;
};

// The whole of a trace given as text (tests, small traces).
std::vector<TraceRow> parse_trace(const std::string& text, bool jsonl);

}  // namespace gcsim::workloads::inference
