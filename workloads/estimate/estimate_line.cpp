#include "workloads/estimate/estimate_line.h"

#include <cmath>
#include <cstdio>

namespace gcsim::workloads::estimate {

namespace {

std::string printf_str(const char* format, double v, const char* suffix) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return std::string(buf) + suffix;
}

// Scales v by powers of 1000 to a prefix: "k", "M", "G", ...
std::string si(double v, const char* base, const char* const* prefixes, int count) {
  double a = std::fabs(v);
  int i = 0;
  while (i + 1 < count && a >= 1000.0) {
    a /= 1000.0;
    v /= 1000.0;
    ++i;
  }
  const std::string unit = std::string(prefixes[i]) + base;
  return printf_str("%.4g", v, unit.empty() ? "" : (" " + unit).c_str());
}

}  // namespace

std::string Line::text() const {
  std::string out = label + ": ";
  if (!formula.empty()) out += formula + " = ";
  return out + format_value(value, unit);
}

Line make_line(std::string label, double value, Unit unit, std::string formula) {
  return Line{std::move(label), value, unit, std::move(formula)};
}

std::string format_value(double value, Unit unit) {
  static const char* const kCount[] = {"", "k", "M", "B", "T"};
  static const char* const kSi[] = {"", "k", "M", "G", "T", "P", "E"};
  switch (unit) {
    case Unit::count:
      if (std::fabs(value) < 1e4 && value == std::floor(value)) return printf_str("%.0f", value, "");
      return si(value, "", kCount, 5);
    case Unit::flops: return si(value, "FLOP", kSi, 7);
    case Unit::flops_per_s: return si(value, "FLOP/s", kSi, 7);
    case Unit::bytes: {
      // Binary prefixes, as every gcsim report prints sizes (README, Units).
      static const char* const kBinary[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
      double v = value;
      int i = 0;
      while (i + 1 < 6 && std::fabs(v) >= 1024.0) {
        v /= 1024.0;
        ++i;
      }
      return printf_str("%.4g", v, (std::string(" ") + kBinary[i]).c_str());
    }
    case Unit::seconds: {
      const double a = std::fabs(value);
      if (a == 0) return "0 s";
      if (a < 1e-6) return printf_str("%.4g ns", value * 1e9, "");
      if (a < 1e-3) return printf_str("%.4g us", value * 1e6, "");
      if (a < 1.0) return printf_str("%.4g ms", value * 1e3, "");
      if (a < 3600.0) return printf_str("%.4g s", value, "");
      return printf_str("%.4g h", value / 3600.0, "");
    }
    case Unit::bytes_per_s: return si(value, "B/s", kSi, 7);
    case Unit::fraction: return printf_str("%.1f%%", 100.0 * value, "");
  }
  return "?";
}

std::string num(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e7) return printf_str("%.0f", v, "");
  const double a = std::fabs(v);
  if (a >= 1e7) {
    const int e = static_cast<int>(std::floor(std::log10(a) / 3.0)) * 3;
    return printf_str("%.4g", v / std::pow(10.0, e), ("e" + std::to_string(e)).c_str());
  }
  return printf_str("%.4g", v, "");
}

double relative_difference(double estimate, double simulated) {
  if (estimate == 0) return simulated == 0 ? 0.0 : (simulated > 0 ? 1.0 : -1.0);
  return (simulated - estimate) / std::fabs(estimate);
}

}  // namespace gcsim::workloads::estimate
