// One line of a back-of-envelope worksheet: a named value and the formula
// that gives it, written first in symbols, then with the numbers put in
// ("6 N T = 6 x 174.6e9 x 2048 = 2.15e15 FLOP"). `gcsim explain` prints
// these lines; `gcsim quiz` grades answers against their values. Values are
// in SI base units (parameters, FLOP, bytes, seconds, bytes/s) so that
// callers compare numbers without conversions.
#pragma once

#include <string>
#include <vector>

namespace gcsim::workloads::estimate {

enum class Unit {
  count,        // parameters, tokens, blocks, collectives (plain number)
  flops,        // floating-point operations
  flops_per_s,  // a rate of them: "232.9 TFLOP/s"
  bytes,
  seconds,
  bytes_per_s,
  fraction,     // 0..1, printed as a percentage
};

struct Line {
  std::string label;    // what it is: "attention parameters per layer"
  double value = 0;     // in `unit`
  Unit unit = Unit::count;
  std::string formula;  // symbols = numbers; "" when the value is read, not derived
  // "label: formula = value" (or "label: value" without a formula).
  std::string text() const;
};

Line make_line(std::string label, double value, Unit unit, std::string formula = "");

// A value with its unit for people: "174.6 B" (count), "2.15 PFLOP",
// "232.9 TFLOP/s", sizes in binary units ("19.35 GiB", "48 MiB", "40 KiB",
// as `gcsim run` prints memory), rates in decimal ones ("450 GB/s", as
// NVLink and NICs are quoted), "3.2 ms", "12.5%".
std::string format_value(double value, Unit unit);
// A number inside a formula: integers as they are ("12288", "2048"), large
// or fractional ones with 4 significant digits ("174.6e9", "0.0313").
std::string num(double v);

// Relative difference (simulated - estimate) / estimate; 0 when both are 0.
double relative_difference(double estimate, double simulated);

}  // namespace gcsim::workloads::estimate
