// The pieces of `gcsim explain`'s markdown: a worksheet section (lines with
// their formulas) and the estimate-vs-simulation table, where every row
// whose difference exceeds 10% carries the reason the simulation gives.
#pragma once

#include <string>
#include <vector>

#include "workloads/estimate/estimate_line.h"

namespace gcsim::cli {

namespace est = ::gcsim::workloads::estimate;

// Differences above this fraction of the estimate must be explained.
inline constexpr double kExplainThreshold = 0.10;

struct Comparison {
  std::string quantity;
  double estimate = 0;
  double simulated = 0;
  est::Unit unit = est::Unit::seconds;
  // Why the simulation differs: a mechanism the simulator found, with its
  // figure. Required when |difference| > kExplainThreshold.
  std::string reason;
  double difference() const { return est::relative_difference(estimate, simulated); }
  bool needs_reason() const;
};

// "## title\n\n" then one bullet per line: "- label: `formula` = **value**".
std::string worksheet_section(const std::string& title, const std::vector<est::Line>& lines);
// Markdown table: quantity | estimate | simulated | difference | reason.
// A row above the threshold without a reason reads "no specific cause
// found" followed by `fallback`.
std::string comparison_table(const std::vector<Comparison>& rows, const std::string& fallback);

// "+12.3%" (relative difference as the table prints it).
std::string percent(double fraction);

}  // namespace gcsim::cli
