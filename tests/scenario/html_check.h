// Checks of report.html for the tests: well-formed XML of the subset gcsim
// writes (every element closed and nested, attributes quoted, text escaped
// with the five XML entities), self-contained (no script, no stylesheet,
// image or frame fetched, no URL but the SVG namespace), and rendered by
// headless Chromium.
#pragma once

#include <filesystem>
#include <string>

namespace gcsim::test {

// "" when `html` is well-formed and self-contained; else what is wrong and
// where (byte offset).
std::string html_problem(const std::string& html);

struct ChromiumRender {
  bool found = false;  // a chromium binary exists
  int exit_status = -1;
  std::string dom;     // the DOM after load (--dump-dom)
  std::string err;
};

// Loads `page` in headless Chromium and returns the DOM it built.
ChromiumRender render_in_chromium(const std::filesystem::path& page);

// How many times `needle` occurs in `text`.
size_t count_of(const std::string& text, const std::string& needle);

}  // namespace gcsim::test
