// report.html: one self-contained page beside report.md for `gcsim run`,
// `sweep` and `plan`. Inline CSS and inline SVG charts (svg_chart.h); no
// scripts, no fonts, no request to the network. The markup is well-formed
// XML as well as HTML, so that a strict parser can check it.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace gcsim::cli {

class HtmlReport {
 public:
  explicit HtmlReport(std::string title);

  void heading(const std::string& text);    // a section: <h2>
  void paragraph(const std::string& text);  // escaped text
  void chart(const std::string& svg, const std::string& caption = "");
  // A key-value table of the run's headline figures.
  void facts(const std::vector<std::pair<std::string, std::string>>& rows);
  void table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);

  std::string render() const;
  // Writes render() to `path`; throws std::runtime_error when it cannot.
  void write(const std::filesystem::path& path) const;

 private:
  std::string title_;
  std::string body_;
};

}  // namespace gcsim::cli
