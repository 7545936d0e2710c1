#include "sim/report/html_report.h"

#include <fstream>
#include <stdexcept>

#include "sim/report/svg_chart.h"

namespace gcsim::cli {

namespace {

// System fonts only: nothing is fetched.
constexpr const char* kStyle = R"(
body { font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto;
       max-width: 1100px; color: #222; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.9em; }
td, th { border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
figure { margin: 1em 0; } figcaption { font-size: 0.85em; color: #555; }
svg { width: 100%; height: auto; background: #fff; }
svg .title { font-size: 15px; font-weight: 600; fill: #222; }
svg .label { font-size: 12px; fill: #333; }
svg .tick { font-size: 11px; fill: #555; }
svg .axis { stroke: #444; stroke-width: 1; }
svg .grid { stroke: #e6e6e6; stroke-width: 1; }
svg .reference { stroke: #c00; stroke-width: 1.5; stroke-dasharray: 6 4; }
svg .front { fill: none; stroke: #222; stroke-width: 2; }
)";

}  // namespace

HtmlReport::HtmlReport(std::string title) : title_(std::move(title)) {}

void HtmlReport::heading(const std::string& text) { body_ += "<h2>" + svg::escape(text) + "</h2>\n"; }

void HtmlReport::paragraph(const std::string& text) { body_ += "<p>" + svg::escape(text) + "</p>\n"; }

void HtmlReport::chart(const std::string& svg, const std::string& caption) {
  body_ += "<figure>\n" + svg;
  if (!caption.empty()) body_ += "<figcaption>" + svg::escape(caption) + "</figcaption>\n";
  body_ += "</figure>\n";
}

void HtmlReport::facts(const std::vector<std::pair<std::string, std::string>>& rows) {
  body_ += "<table>\n";
  for (const auto& [k, v] : rows) body_ += "<tr><th>" + svg::escape(k) + "</th><td>" + svg::escape(v) + "</td></tr>\n";
  body_ += "</table>\n";
}

void HtmlReport::table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  body_ += "<table>\n<tr>";
  for (const auto& h : header) body_ += "<th>" + svg::escape(h) + "</th>";
  body_ += "</tr>\n";
  for (const auto& row : rows) {
    body_ += "<tr>";
    for (const auto& cell : row) body_ += "<td>" + svg::escape(cell) + "</td>";
    body_ += "</tr>\n";
  }
  body_ += "</table>\n";
}

std::string HtmlReport::render() const {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>" + svg::escape(title_) +
         "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n<h1>" + svg::escape(title_) + "</h1>\n" + body_ +
         "<p class=\"footer\">Written by gcsim; self-contained (inline SVG, no scripts).</p>\n</body>\n</html>\n";
}

void HtmlReport::write(const std::filesystem::path& path) const {
  std::ofstream f(path);
  if (!f) throw std::runtime_error("cannot write " + path.string());
  f << render();
}

}  // namespace gcsim::cli
