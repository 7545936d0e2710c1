// The chart pieces of report.html (sim/report/svg_chart.h) against hand
// figures: round ticks, the Pareto front of a few points, XML escaping, tick
// labels per unit, and the timeline's pixel bins (shade by busy fraction,
// colour by the busiest category).
#include "catch.h"
#include "sim/report/svg_chart.h"

namespace svg = gcsim::cli::svg;

TEST_CASE("svg: ticks are round numbers 1, 2 or 5 x 10^k apart", "[html]") {
  CHECK(svg::nice_ticks(0, 1, 5) == std::vector<double>{0, 0.2, 0.4, 0.6, 0.8, 1.0});
  CHECK(svg::nice_ticks(0, 97, 5) == std::vector<double>{0, 20, 40, 60, 80, 100});
  // 80 GB in bytes ticks at 20 GiB steps (80e9 B = 74.5 GiB, 5 ticks: 14.9 -> 20).
  const auto b = svg::unit_ticks(0, 80e9, 5, "B");
  REQUIRE(b.size() == 5);
  CHECK(b[1] == 20.0 * 1073741824.0);
  CHECK(b.back() == 80.0 * 1073741824.0);
}

TEST_CASE("svg: the Pareto front keeps the points no other beats on both axes", "[html]") {
  // (x memory, y throughput): (1, 5) is beaten by (1, 6); (3, 4) by (2, 7);
  // (5, 9) stays; (4, 9) beats it at less x, so (5, 9) goes too. The
  // point that may not be on the front (does not fit) is left out even if
  // it is best.
  const std::vector<svg::ScatterPoint> p{{1, 5, 0, "", true}, {1, 6, 0, "", true}, {3, 4, 0, "", true},
                                         {2, 7, 0, "", true}, {5, 9, 0, "", true}, {4, 9, 0, "", true},
                                         {0.5, 50, 1, "", false}};
  CHECK(svg::pareto_front(p) == std::vector<size_t>{1, 3, 5});
}

TEST_CASE("svg: text is escaped and ticks are labelled in their unit", "[html]") {
  CHECK(svg::escape("a<b & \"c\" 'd'>") == "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;");
  CHECK(svg::format_tick(0.0025, "s") == "2.5 ms");
  CHECK(svg::format_tick(3.0 * 1073741824.0, "B") == "3 GiB");
  CHECK(svg::format_tick(0.4, "%") == "40%");
  CHECK(svg::format_tick(6, "log10B") == "977 KiB");  // 10^6 B
  CHECK(svg::format_tick(181312.8, "") == "181k");
}

TEST_CASE("svg: timeline bins shade by how busy, colour by the busiest category", "[html]") {
  // 620 pixels (960 wide less the 150-unit labels and 190... the plot is
  // 960 - 200 - 150 = 610 bins) over 610 s: one second per bin. Row 0 is
  // busy 0-305 s with category 1 (one run, full shade 4 -> opacity 1.00,
  // 305 units wide), row 1 half of each of its first two bins with
  // category 0 (shade 2 -> opacity 0.50, 2 units wide).
  const std::string s = svg::timeline("t", {"a", "b"}, {"c0", "c1"},
                                      {{0, 0, 305, 1}, {1, 0.25, 0.75, 0}, {1, 1.25, 1.75, 0}}, 610);
  CHECK(s.find("<rect x=\"150.0\" y=\"43.0\" width=\"305.0\" height=\"14.0\" fill=\"" + std::string(svg::color(1)) +
               "\"/>") != std::string::npos);
  CHECK(s.find("<rect x=\"150.0\" y=\"59.0\" width=\"2.0\" height=\"14.0\" fill=\"" + std::string(svg::color(0)) +
               "\" fill-opacity=\"0.50\"/>") != std::string::npos);
}
