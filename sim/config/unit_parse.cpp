#include "sim/config/unit_parse.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace gcsim::sim {

namespace {

struct UnitRow {
  std::string_view suffix;
  double factor;  // to the base unit: bytes, bytes/s, ps, flop/s
};

constexpr std::array kByteUnits{
    UnitRow{"B", 1.0},           UnitRow{"KB", 1e3},          UnitRow{"MB", 1e6},
    UnitRow{"GB", 1e9},          UnitRow{"TB", 1e12},         UnitRow{"KiB", 1024.0},
    UnitRow{"MiB", 1048576.0},   UnitRow{"GiB", 1073741824.0}, UnitRow{"TiB", 1099511627776.0},
};
constexpr std::array kBandwidthUnits{
    UnitRow{"bps", 0.125},     UnitRow{"Kbps", 125.0},       UnitRow{"Mbps", 125e3},
    UnitRow{"Gbps", 125e6},    UnitRow{"Tbps", 125e9},       UnitRow{"B/s", 1.0},
    UnitRow{"KB/s", 1e3},      UnitRow{"MB/s", 1e6},         UnitRow{"GB/s", 1e9},
    UnitRow{"TB/s", 1e12},     UnitRow{"KiB/s", 1024.0},     UnitRow{"MiB/s", 1048576.0},
    UnitRow{"GiB/s", 1073741824.0},
};
constexpr std::array kDurationUnits{
    UnitRow{"ps", 1.0},  UnitRow{"ns", 1e3},  UnitRow{"us", 1e6},   UnitRow{"ms", 1e9},
    UnitRow{"s", 1e12},  UnitRow{"min", 60e12}, UnitRow{"h", 3600e12}, UnitRow{"d", 86400e12},
};
constexpr std::array kFlopRateUnits{
    UnitRow{"FLOP/s", 1.0},   UnitRow{"GFLOP/s", 1e9}, UnitRow{"TFLOP/s", 1e12},
    UnitRow{"PFLOP/s", 1e15}, UnitRow{"TF/s", 1e12},   UnitRow{"PF/s", 1e15},
};

std::string units_list(const auto& table) {
  std::string s;
  for (const auto& row : table) {
    if (!s.empty()) s += ", ";
    s += row.suffix;
  }
  return s;
}

// Splits "1.5 ms" into 1.5 and "ms", then scales by the table's factor.
template <size_t N>
std::optional<double> parse_with(std::string_view text, const std::array<UnitRow, N>& table,
                                 const char* quantity, std::string* error) {
  std::string s(text);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  const char* begin = s.c_str();
  char* end = nullptr;
  double value = std::strtod(begin, &end);
  if (end == begin) {
    *error = "'" + s + "' is not a " + quantity + " (expected a number with a unit, e.g. " +
             std::string(table[table.size() > 8 ? 8 : 3].suffix) + "; units: " +
             units_list(table) + ")";
    return std::nullopt;
  }
  std::string_view suffix(end);
  while (!suffix.empty() && suffix.front() == ' ') suffix.remove_prefix(1);
  if (suffix.empty()) {
    *error = "'" + s + "' has no unit (units for a " + quantity + ": " + units_list(table) + ")";
    return std::nullopt;
  }
  for (const auto& row : table) {
    if (row.suffix == suffix) {
      if (!std::isfinite(value)) {
        *error = "'" + s + "' is not finite";
        return std::nullopt;
      }
      return value * row.factor;
    }
  }
  *error = "unknown unit '" + std::string(suffix) + "' in '" + s + "' (units for a " + quantity +
           ": " + units_list(table) + ")";
  return std::nullopt;
}

std::string format_number(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

// What parse_with() makes of a number printed by format_number(): the same
// strtod and the same multiplication by the unit's factor.
double reparse(const std::string& number, double factor) {
  return std::strtod(number.c_str(), nullptr) * factor;
}

// Prints `base` (in the table's base unit) as a number of `unit`, in the
// fewest of 15 or 17 significant digits that parse back to exactly `base`;
// if neither does (the division by the factor lost a bit), falls back to the
// base unit, where 17 digits always round-trip. 15 digits first because
// 0.1-style values print as "0.1", not "0.10000000000000001".
std::string format_real(double base, std::string_view unit, double factor,
                        std::string_view base_unit) {
  for (int digits : {15, 17}) {
    std::string n = format_number(base / factor, digits);
    if (reparse(n, factor) == base) return n + std::string(unit);
  }
  return format_number(base, 17) + std::string(base_unit);
}

}  // namespace

std::optional<Bytes> parse_bytes(std::string_view text, std::string* error) {
  auto v = parse_with(text, kByteUnits, "byte size", error);
  if (!v) return std::nullopt;
  if (std::fabs(*v) >= 9.2e18) {
    *error = "'" + std::string(text) + "' is too large";
    return std::nullopt;
  }
  return Bytes(std::llround(*v));
}

std::optional<Bandwidth> parse_bandwidth(std::string_view text, std::string* error) {
  auto v = parse_with(text, kBandwidthUnits, "bandwidth", error);
  if (!v) return std::nullopt;
  return Bandwidth::bytes_per_s(*v);
}

std::optional<Duration> parse_duration(std::string_view text, std::string* error) {
  auto v = parse_with(text, kDurationUnits, "duration", error);
  if (!v) return std::nullopt;
  if (std::fabs(*v) >= 9.2e18) {
    *error = "'" + std::string(text) + "' exceeds the simulator's time range (106 days)";
    return std::nullopt;
  }
  return Duration::from_ps(std::llround(*v));
}

std::optional<FlopRate> parse_flop_rate(std::string_view text, std::string* error) {
  auto v = parse_with(text, kFlopRateUnits, "flop rate", error);
  if (!v) return std::nullopt;
  return FlopRate::flops_per_s(*v);
}

std::string format_bytes(Bytes b) {
  // The largest unit, binary or decimal, that divides the count exactly:
  // 12e9 bytes prints as 12GB, not as 11718750KiB (which 1024 also divides).
  const int64_t n = b.count();
  static constexpr std::array<std::pair<int64_t, const char*>, 8> kUnits{{
      {1LL << 40, "TiB"},
      {1'000'000'000'000LL, "TB"},
      {1LL << 30, "GiB"},
      {1'000'000'000LL, "GB"},
      {1LL << 20, "MiB"},
      {1'000'000LL, "MB"},
      {1LL << 10, "KiB"},
      {1000LL, "KB"},
  }};
  for (auto [size, name] : kUnits) {
    if (n != 0 && n % size == 0) return std::to_string(n / size) + name;
  }
  return std::to_string(n) + "B";
}

std::string format_bandwidth(Bandwidth bw) {
  return format_real(bw.bytes_per_s(), "GB/s", 1e9, "B/s");
}

std::string format_duration(Duration d) {
  const int64_t p = d.ps();
  if (p == 0) return "0s";  // "at: 0s", not "0ps"
  static constexpr std::array<std::pair<int64_t, const char*>, 4> kSteps{
      {{1'000'000'000'000LL, "s"}, {1'000'000'000LL, "ms"}, {1'000'000LL, "us"}, {1000LL, "ns"}}};
  for (auto [size, name] : kSteps) {
    if (p != 0 && p % size == 0) return std::to_string(p / size) + name;
  }
  // Not a whole number of any unit: a decimal in the largest unit it
  // reaches ("1.234567us"), if that parses back to the same picosecond.
  // Parsing rounds through a double, so beyond 2^53 ps (~2.5 h) only whole
  // units are exact; below it the whole picosecond count always is.
  for (auto [size, name] : kSteps) {
    if (std::llabs(p) >= size) {
      for (int digits : {15, 17}) {
        std::string n = format_number(static_cast<double>(p) / static_cast<double>(size), digits);
        if (std::llround(reparse(n, static_cast<double>(size))) == p) return n + name;
      }
      break;
    }
  }
  return std::to_string(p) + "ps";
}

std::string format_flop_rate(FlopRate r) {
  return format_real(r.flops_per_s(), "TFLOP/s", 1e12, "FLOP/s");
}

}  // namespace gcsim::sim
