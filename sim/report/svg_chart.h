// Charts as inline SVG text for report.html: stacked bars (a step's parts
// per pipeline rank, memory per GPU against capacity), horizontal bars
// (busiest links), lines (latency CDFs, throughput over time), a scatter
// with its Pareto front (sweeps and plans), and a timeline overview (busy
// time per stream, binned to pixels so that a step of a million ops stays a
// few hundred kilobytes). Each function returns one <svg> element with a
// title, axes, ticks and a legend; no scripts, no fonts fetched. The
// markup is well-formed XML (every element closed, text escaped).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace gcsim::cli::svg {

// Text made safe inside an element or an attribute value.
std::string escape(const std::string& text);

// The palette colour i (wraps), and a grey for "other".
const char* color(size_t i);

struct Series {
  std::string name;
  std::vector<double> values;  // one per category
};

struct Reference {
  double value = -1;  // < 0: none
  std::string label;  // "HBM capacity 80 GiB"
};

// Vertical bars, one per category, each a stack of the series' values.
// `unit` formats tick labels ("s" seconds, "B" bytes, "" plain numbers); a
// reference draws a dashed horizontal line (capacity).
std::string stacked_bars(const std::string& title, const std::vector<std::string>& categories,
                         const std::vector<Series>& series, const std::string& unit,
                         const Reference& reference = {});

// Horizontal bars of `values` (0..max_value) labelled on the left, with
// `value_labels` printed at their ends.
std::string horizontal_bars(const std::string& title, const std::vector<std::string>& labels,
                            const std::vector<double>& values, double max_value,
                            const std::vector<std::string>& value_labels);

struct LineSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), ascending x
};

// Lines on linear axes; `x_unit` and `y_unit` format the ticks as above.
std::string line_chart(const std::string& title, const std::string& x_label, const std::string& x_unit,
                       const std::string& y_label, const std::string& y_unit,
                       const std::vector<LineSeries>& lines);

// The empirical CDF of `values` as a line (fraction of values <= x).
LineSeries cdf(const std::string& name, std::vector<double> values);

struct ScatterPoint {
  double x = 0, y = 0;
  int group = 0;         // colour and legend entry
  std::string label;     // drawn beside the point when not empty
  bool on_front = true;  // whether it may be on the Pareto front (false: e.g. does not fit)
};

// Points against linear axes, and the Pareto front (the least x for more y:
// no other point has x no larger and y larger) as a step line named
// `front_label`. More than `max_markers` points of group 0 are drawn as a
// density grid instead of one circle each. `groups` names the legend
// entries.
std::string scatter(const std::string& title, const std::string& x_label, const std::string& x_unit,
                    const std::string& y_label, const std::string& y_unit,
                    const std::vector<ScatterPoint>& points, const std::vector<std::string>& groups,
                    const std::string& front_label = "Pareto front", size_t max_markers = 1500);

// Indices of the Pareto front of the points that may be on it (least x,
// most y), by ascending x.
std::vector<size_t> pareto_front(const std::vector<ScatterPoint>& points);

struct Span {
  size_t row = 0;
  double start = 0, end = 0;  // seconds
  size_t category = 0;
};

// One row per entry of `rows`, time from 0 to `end`; each row is cut into
// pixel-wide bins coloured by the category that kept it busiest there,
// darker the busier.
std::string timeline(const std::string& title, const std::vector<std::string>& rows,
                     const std::vector<std::string>& categories, const std::vector<Span>& spans,
                     double end);

// Tick values for [lo, hi]: about `n` round numbers (1, 2, 5 x 10^k apart).
std::vector<double> nice_ticks(double lo, double hi, int n);
// The same in `unit` ("B": round numbers of KiB, MiB or GiB).
std::vector<double> unit_ticks(double lo, double hi, int n, const std::string& unit);

// A number as a tick label in `unit`: "s" (1.5 ms, 2 s), "B" (1.5 GiB),
// "%" (a fraction as 40%), "log10B" (an exponent of ten bytes: 6 -> 977 KiB),
// else plain (1.2k, 3.4M).
std::string format_tick(double v, const std::string& unit);

}  // namespace gcsim::cli::svg
