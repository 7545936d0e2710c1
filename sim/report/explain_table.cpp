#include "sim/report/explain_table.h"

#include <cmath>
#include <sstream>

#include "sim/report/format.h"

namespace gcsim::cli {

bool Comparison::needs_reason() const { return std::fabs(difference()) > kExplainThreshold; }

std::string percent(double fraction) { return fmt("%+.1f%%", 100.0 * fraction); }

std::string worksheet_section(const std::string& title, const std::vector<est::Line>& lines) {
  std::ostringstream o;
  o << "## " << title << "\n\n";
  for (const auto& l : lines) {
    o << "- " << l.label << ": ";
    if (!l.formula.empty()) o << "`" << l.formula << "` = ";
    o << "**" << est::format_value(l.value, l.unit) << "**\n";
  }
  o << "\n";
  return o.str();
}

std::string comparison_table(const std::vector<Comparison>& rows, const std::string& fallback) {
  std::ostringstream o;
  o << "| quantity | estimate | simulated | difference | reason |\n|---|---:|---:|---:|---|\n";
  for (const auto& r : rows) {
    std::string why;
    if (r.needs_reason()) {
      if (!r.reason.empty()) why = r.reason;
      else why = "no specific cause found; " + fallback;
    } else {
      why = "within " + fmt("%g%%", 100.0 * kExplainThreshold);
    }
    o << "| " << r.quantity << " | " << est::format_value(r.estimate, r.unit) << " | "
      << est::format_value(r.simulated, r.unit) << " | " << percent(r.difference()) << " | " << why << " |\n";
  }
  o << "\n";
  return o.str();
}

}  // namespace gcsim::cli
