#include "sim/report/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "sim/report/format.h"

namespace gcsim::cli::svg {

namespace {

// Plot geometry in SVG user units (the page scales the whole drawing).
constexpr double kWidth = 960;
constexpr double kLeft = 90, kRight = 200, kTop = 42, kBottom = 64;

std::string n(double v) { return fmt("%.1f", v); }

// An <svg> of `height`, its title, and the plot area's frame.
struct Canvas {
  double height;
  std::ostringstream o;
  double x0() const { return kLeft; }
  double x1() const { return kWidth - kRight; }
  double y0() const { return height - kBottom; }  // bottom of the plot area
  double y1() const { return kTop; }

  Canvas(const std::string& title, double h) : height(h) {
    o << "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " << kWidth << " " << h
      << "\" role=\"img\" aria-label=\"" << escape(title) << "\">\n"
      << "<text x=\"" << kLeft << "\" y=\"24\" class=\"title\">" << escape(title) << "</text>\n";
  }
  void text(double x, double y, const std::string& s, const char* cls = "label", const char* anchor = "start") {
    o << "<text x=\"" << n(x) << "\" y=\"" << n(y) << "\" class=\"" << cls << "\" text-anchor=\"" << anchor
      << "\">" << escape(s) << "</text>\n";
  }
  void rect(double x, double y, double w, double h, const char* fill, double opacity = 1.0,
            const std::string& tip = "") {
    o << "<rect x=\"" << n(x) << "\" y=\"" << n(y) << "\" width=\"" << n(std::max(0.0, w)) << "\" height=\""
      << n(std::max(0.0, h)) << "\" fill=\"" << fill << "\"";
    if (opacity < 1.0) o << " fill-opacity=\"" << fmt("%.2f", opacity) << "\"";
    if (tip.empty()) {
      o << "/>\n";
    } else {
      o << "><title>" << escape(tip) << "</title></rect>\n";
    }
  }
  void line(double xa, double ya, double xb, double yb, const char* cls) {
    o << "<line x1=\"" << n(xa) << "\" y1=\"" << n(ya) << "\" x2=\"" << n(xb) << "\" y2=\"" << n(yb)
      << "\" class=\"" << cls << "\"/>\n";
  }
  // Legend entries down the right margin.
  void legend(const std::vector<std::pair<std::string, const char*>>& entries) {
    double y = y1() + 4;
    for (const auto& [name, fill] : entries) {
      rect(x1() + 16, y, 12, 12, fill);
      text(x1() + 34, y + 10, name);
      y += 18;
    }
  }
  std::string finish() {
    o << "</svg>\n";
    return o.str();
  }
};

// A linear scale from [lo, hi] onto [a, b] (pixels).
struct Scale {
  double lo, hi, a, b;
  double operator()(double v) const { return hi > lo ? a + (v - lo) / (hi - lo) * (b - a) : a; }
};

void y_axis(Canvas& c, const Scale& y, const std::vector<double>& ticks, const std::string& unit,
            const std::string& label) {
  for (double t : ticks) {
    c.line(c.x0(), y(t), c.x1(), y(t), "grid");
    c.text(c.x0() - 6, y(t) + 4, format_tick(t, unit), "tick", "end");
  }
  c.line(c.x0(), c.y0(), c.x0(), c.y1(), "axis");
  if (!label.empty()) {
    c.o << "<text transform=\"translate(18," << n((c.y0() + c.y1()) / 2) << ") rotate(-90)\" class=\"label\" "
        << "text-anchor=\"middle\">" << escape(label) << "</text>\n";
  }
}

void x_axis(Canvas& c, const Scale& x, const std::vector<double>& ticks, const std::string& unit,
            const std::string& label) {
  for (double t : ticks) {
    c.line(x(t), c.y0(), x(t), c.y0() + 4, "axis");
    c.text(x(t), c.y0() + 18, format_tick(t, unit), "tick", "middle");
  }
  c.line(c.x0(), c.y0(), c.x1(), c.y0(), "axis");
  if (!label.empty()) c.text((c.x0() + c.x1()) / 2, c.y0() + 40, label, "label", "middle");
}

// [lo, hi] widened to the ticks that cover it.
std::pair<double, double> covered(const std::vector<double>& ticks, double lo, double hi) {
  if (ticks.empty()) return {lo, hi};
  return {std::min(lo, ticks.front()), std::max(hi, ticks.back())};
}

}  // namespace

std::string escape(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char ch : s) {
    switch (ch) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += ch;
    }
  }
  return o;
}

const char* color(size_t i) {
  // Tableau 10: distinct in print and for most colour-blind readers.
  static const char* const kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                         "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
  return kPalette[i % std::size(kPalette)];
}

std::vector<double> nice_ticks(double lo, double hi, int count) {
  if (!(hi > lo)) hi = lo + (lo == 0 ? 1.0 : std::fabs(lo));
  const double raw = (hi - lo) / std::max(1, count);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  // k x step computed as an integer over a power of ten, so that 0.6 is 0.6.
  const double m = std::round(step / mag);
  const double first = std::floor(lo / step);
  std::vector<double> t;
  for (double k = first; t.size() < 50; k += 1) {
    const double v = mag < 1 ? k * m / std::round(1 / mag) : k * m * mag;
    if (v > hi + step * 0.5) break;
    t.push_back(v == 0 ? 0.0 : v);
  }
  return t;
}

std::vector<double> unit_ticks(double lo, double hi, int count, const std::string& unit) {
  if (unit != "B") return nice_ticks(lo, hi, count);
  // Bytes tick at round binary multiples: 16 GiB, not 17.2 GB.
  double scale = 1;
  for (double s : {1024.0, 1048576.0, 1073741824.0}) {
    if (hi >= s) scale = s;
  }
  std::vector<double> t = nice_ticks(lo / scale, hi / scale, count);
  for (double& v : t) v *= scale;
  return t;
}

std::string format_tick(double v, const std::string& unit) {
  if (unit == "s") return v == 0 ? "0" : human_time(v);
  if (unit == "B" || unit == "log10B") {
    const double b = unit == "B" ? v : std::pow(10.0, v);
    if (b >= 1073741824.0) return fmt("%.3g GiB", b / 1073741824.0);
    if (b >= 1048576.0) return fmt("%.3g MiB", b / 1048576.0);
    if (b >= 1024.0) return fmt("%.3g KiB", b / 1024.0);
    return fmt("%.0f B", b);
  }
  if (unit == "%") return fmt("%.0f%%", 100 * v);
  const double a = std::fabs(v);
  if (a >= 1e9) return fmt("%.3gG", v / 1e9);
  if (a >= 1e6) return fmt("%.3gM", v / 1e6);
  if (a >= 1e4) return fmt("%.3gk", v / 1e3);
  return fmt("%.4g", v);
}

std::string stacked_bars(const std::string& title, const std::vector<std::string>& categories,
                         const std::vector<Series>& series, const std::string& unit,
                         const Reference& reference) {
  Canvas c(title, 380);
  double top = reference.value;
  for (size_t k = 0; k < categories.size(); ++k) {
    double sum = 0;
    for (const auto& s : series) sum += k < s.values.size() ? std::max(0.0, s.values[k]) : 0.0;
    top = std::max(top, sum);
  }
  const auto ticks = unit_ticks(0, top > 0 ? top : 1.0, 5, unit);
  const Scale y{0, covered(ticks, 0, top).second, c.y0(), c.y1()};
  y_axis(c, y, ticks, unit, "");
  const double slot = (c.x1() - c.x0()) / std::max<size_t>(1, categories.size());
  const double width = std::min(60.0, slot * 0.7);
  for (size_t k = 0; k < categories.size(); ++k) {
    const double x = c.x0() + slot * (static_cast<double>(k) + 0.5);
    double base = 0;
    for (size_t i = 0; i < series.size(); ++i) {
      const double v = k < series[i].values.size() ? std::max(0.0, series[i].values[k]) : 0.0;
      if (v <= 0) continue;
      c.rect(x - width / 2, y(base + v), width, y(base) - y(base + v), color(i), 1.0,
             categories[k] + ": " + series[i].name + " " + format_tick(v, unit));
      base += v;
    }
    // Labels under the bars, thinned when they would collide.
    const size_t every = std::max<size_t>(1, static_cast<size_t>(std::ceil(70.0 / slot)));
    if (k % every == 0) c.text(x, c.y0() + 18, categories[k], "tick", "middle");
  }
  c.line(c.x0(), c.y0(), c.x1(), c.y0(), "axis");
  if (reference.value >= 0) {
    c.line(c.x0(), y(reference.value), c.x1(), y(reference.value), "reference");
    c.text(c.x1() - 4, y(reference.value) - 6, reference.label, "label", "end");
  }
  std::vector<std::pair<std::string, const char*>> legend;
  for (size_t i = 0; i < series.size(); ++i) legend.emplace_back(series[i].name, color(i));
  c.legend(legend);
  return c.finish();
}

std::string horizontal_bars(const std::string& title, const std::vector<std::string>& labels,
                            const std::vector<double>& values, double max_value,
                            const std::vector<std::string>& value_labels) {
  const double row = 22;
  Canvas c(title, kTop + row * static_cast<double>(labels.size()) + 30);
  // Long link names need the left margin: the bars start at 40% of the width.
  const double left = kWidth * 0.4, right = kWidth - 120;
  const Scale x{0, max_value > 0 ? max_value : 1.0, left, right};
  for (size_t i = 0; i < labels.size(); ++i) {
    const double y = kTop + row * static_cast<double>(i);
    c.text(left - 8, y + 14, labels[i], "tick", "end");
    c.rect(left, y + 3, x(std::max(0.0, values[i])) - left, row - 6, color(0), 1.0,
           labels[i] + ": " + (i < value_labels.size() ? value_labels[i] : ""));
    if (i < value_labels.size()) c.text(x(std::max(0.0, values[i])) + 6, y + 14, value_labels[i], "tick");
  }
  c.line(left, kTop, left, kTop + row * static_cast<double>(labels.size()), "axis");
  return c.finish();
}

LineSeries cdf(const std::string& name, std::vector<double> values) {
  LineSeries l{name, {}};
  std::sort(values.begin(), values.end());
  const double count = static_cast<double>(values.size());
  // At most ~400 steps: every k-th order statistic, and the last.
  const size_t every = std::max<size_t>(1, values.size() / 400);
  for (size_t i = 0; i < values.size(); ++i) {
    if (i % every == 0 || i + 1 == values.size()) {
      l.points.emplace_back(values[i], static_cast<double>(i + 1) / count);
    }
  }
  return l;
}

std::string line_chart(const std::string& title, const std::string& x_label, const std::string& x_unit,
                       const std::string& y_label, const std::string& y_unit,
                       const std::vector<LineSeries>& lines) {
  Canvas c(title, 380);
  double xlo = 1e300, xhi = -1e300, yhi = 0;
  for (const auto& l : lines) {
    for (const auto& [px, py] : l.points) {
      xlo = std::min(xlo, px), xhi = std::max(xhi, px), yhi = std::max(yhi, py);
    }
  }
  if (xlo > xhi) xlo = 0, xhi = 1;
  xlo = std::min(xlo, 0.0);
  const auto xt = unit_ticks(xlo, xhi, 6, x_unit), yt = unit_ticks(0, yhi > 0 ? yhi : 1.0, 5, y_unit);
  const auto [xa, xb] = covered(xt, xlo, xhi);
  const Scale x{xa, xb, c.x0(), c.x1()}, y{0, covered(yt, 0, yhi).second, c.y0(), c.y1()};
  y_axis(c, y, yt, y_unit, y_label);
  x_axis(c, x, xt, x_unit, x_label);
  std::vector<std::pair<std::string, const char*>> legend;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].points.empty()) continue;
    c.o << "<polyline fill=\"none\" stroke=\"" << color(i) << "\" stroke-width=\"2\" points=\"";
    for (const auto& [px, py] : lines[i].points) c.o << n(x(px)) << "," << n(y(py)) << " ";
    c.o << "\"/>\n";
    legend.emplace_back(lines[i].name, color(i));
  }
  c.legend(legend);
  return c.finish();
}

std::vector<size_t> pareto_front(const std::vector<ScatterPoint>& points) {
  std::vector<size_t> order;
  for (size_t i = 0; i < points.size(); ++i) {
    if (points[i].on_front) order.push_back(i);
  }
  // By x ascending, the larger y first among equal x: a point is on the
  // front when its y beats every point of smaller x.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (points[a].x != points[b].x) return points[a].x < points[b].x;
    return points[a].y > points[b].y;
  });
  std::vector<size_t> front;
  double best = -1e300;
  for (size_t i : order) {
    if (points[i].y > best) {
      front.push_back(i);
      best = points[i].y;
    }
  }
  return front;
}

std::string scatter(const std::string& title, const std::string& x_label, const std::string& x_unit,
                    const std::string& y_label, const std::string& y_unit,
                    const std::vector<ScatterPoint>& points, const std::vector<std::string>& groups,
                    const std::string& front_label, size_t max_markers) {
  Canvas c(title, 420);
  double xlo = 1e300, xhi = -1e300, yhi = 0;
  for (const auto& p : points) xlo = std::min(xlo, p.x), xhi = std::max(xhi, p.x), yhi = std::max(yhi, p.y);
  if (xlo > xhi) xlo = 0, xhi = 1;
  xlo = std::min(xlo, 0.0);
  const auto xt = unit_ticks(xlo, xhi, 6, x_unit), yt = unit_ticks(0, yhi > 0 ? yhi : 1.0, 5, y_unit);
  const auto [xa, xb] = covered(xt, xlo, xhi);
  const Scale x{xa, xb, c.x0(), c.x1()}, y{0, covered(yt, 0, yhi).second, c.y0(), c.y1()};
  y_axis(c, y, yt, y_unit, y_label);
  x_axis(c, x, xt, x_unit, x_label);
  size_t background = 0;
  for (const auto& p : points) background += p.group == 0;
  if (background > max_markers) {
    // A density grid of 6-unit cells: darker where more candidates fall.
    constexpr double kCell = 6;
    std::map<std::pair<int, int>, int> cells;
    for (const auto& p : points) {
      if (p.group == 0) ++cells[{static_cast<int>(x(p.x) / kCell), static_cast<int>(y(p.y) / kCell)}];
    }
    int most = 1;
    for (const auto& [k, v] : cells) most = std::max(most, v);
    for (const auto& [k, v] : cells) {
      c.rect(k.first * kCell, k.second * kCell, kCell, kCell, color(0),
             0.2 + 0.8 * std::log1p(v) / std::log1p(most));
    }
  }
  for (const auto& p : points) {
    if (p.group == 0 && background > max_markers) continue;
    c.o << "<circle cx=\"" << n(x(p.x)) << "\" cy=\"" << n(y(p.y)) << "\" r=\"" << (p.group == 0 ? 3 : 5)
        << "\" fill=\"" << color(static_cast<size_t>(p.group)) << "\" fill-opacity=\"0.8\"><title>"
        << escape((p.label.empty() ? "" : p.label + ": ") + format_tick(p.x, x_unit) + ", " +
                  format_tick(p.y, y_unit))
        << "</title></circle>\n";
    if (!p.label.empty()) c.text(x(p.x) + 7, y(p.y) - 6, p.label, "tick");
  }
  const auto front = pareto_front(points);
  if (!front.empty()) {
    // A step line: from each front point across to the next one's x.
    c.o << "<polyline class=\"front\" points=\"";
    for (size_t i = 0; i < front.size(); ++i) {
      const auto& p = points[front[i]];
      if (i > 0) c.o << n(x(p.x)) << "," << n(y(points[front[i - 1]].y)) << " ";
      c.o << n(x(p.x)) << "," << n(y(p.y)) << " ";
    }
    c.o << "\"/>\n";
  }
  std::vector<std::pair<std::string, const char*>> legend;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (std::any_of(points.begin(), points.end(), [g](const ScatterPoint& p) { return p.group == static_cast<int>(g); })) {
      legend.emplace_back(groups[g], color(g));
    }
  }
  if (!front.empty()) legend.emplace_back(front_label, "#222222");
  c.legend(legend);
  return c.finish();
}

std::string timeline(const std::string& title, const std::vector<std::string>& rows,
                     const std::vector<std::string>& categories, const std::vector<Span>& spans,
                     double end) {
  const double row_h = 16;
  Canvas c(title, kTop + row_h * static_cast<double>(rows.size()) + kBottom);
  const double plot_bottom = kTop + row_h * static_cast<double>(rows.size());
  const double left = 150, right = kWidth - kRight;
  const int bins = static_cast<int>(right - left);
  const Scale x{0, end > 0 ? end : 1.0, left, right};
  const double bin_s = (end > 0 ? end : 1.0) / bins;
  // busy[row][bin][category] in seconds.
  std::vector<std::vector<std::vector<double>>> busy(
      rows.size(), std::vector<std::vector<double>>(static_cast<size_t>(bins), std::vector<double>(categories.size(), 0)));
  for (const Span& s : spans) {
    if (s.row >= rows.size() || s.category >= categories.size() || !(s.end > s.start)) continue;
    int b0 = std::clamp(static_cast<int>(s.start / bin_s), 0, bins - 1);
    const int b1 = std::clamp(static_cast<int>(s.end / bin_s), 0, bins - 1);
    for (int b = b0; b <= b1; ++b) {
      const double lo = std::max(s.start, b * bin_s), hi = std::min(s.end, (b + 1) * bin_s);
      if (hi > lo) busy[s.row][static_cast<size_t>(b)][s.category] += hi - lo;
    }
  }
  std::vector<bool> used(categories.size(), false);
  for (size_t r = 0; r < rows.size(); ++r) {
    const double y = kTop + row_h * static_cast<double>(r);
    c.text(left - 6, y + 12, rows[r], "tick", "end");
    // Runs of bins with the same colour and shade become one rectangle.
    int run_start = 0;
    size_t run_cat = 0;
    int run_shade = -1;
    auto flush = [&](int upto) {
      if (run_shade > 0) {
        c.rect(left + run_start, y + 1, upto - run_start, row_h - 2, color(run_cat), 0.25 * run_shade);
      }
    };
    for (int b = 0; b < bins; ++b) {
      const auto& v = busy[r][static_cast<size_t>(b)];
      double total = 0;
      size_t top = 0;
      for (size_t k = 0; k < v.size(); ++k) {
        total += v[k];
        if (v[k] > v[top]) top = k;
      }
      // Four shades by how busy the bin is (streams overlap: up to 1).
      const int shade = total <= 0 ? 0 : std::clamp(static_cast<int>(std::ceil(4 * total / bin_s)), 1, 4);
      if (shade > 0) used[top] = true;
      if (shade != run_shade || (shade > 0 && top != run_cat)) {
        flush(b);
        run_start = b, run_cat = top, run_shade = shade;
      }
    }
    flush(bins);
  }
  const auto xt = nice_ticks(0, end > 0 ? end : 1.0, 8);
  for (double t : xt) {
    if (t > end) break;
    c.line(x(t), plot_bottom, x(t), plot_bottom + 4, "axis");
    c.text(x(t), plot_bottom + 18, format_tick(t, "s"), "tick", "middle");
  }
  c.line(left, plot_bottom, right, plot_bottom, "axis");
  c.text((left + right) / 2, plot_bottom + 40, "simulated time", "label", "middle");
  std::vector<std::pair<std::string, const char*>> legend;
  for (size_t k = 0; k < categories.size(); ++k) {
    if (used[k]) legend.emplace_back(categories[k], color(k));
  }
  c.legend(legend);
  return c.finish();
}

}  // namespace gcsim::cli::svg
