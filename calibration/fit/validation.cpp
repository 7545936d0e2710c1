#include "calibration/fit/validation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "calibration/fit/profile_fit.h"

namespace gcsim::calibration {

namespace {
constexpr int kHoldEvery = 4;
constexpr int kHoldAt = 2;

// Issue 6's targets on held-out H100 shapes.
void set_targets(ClassError& c) {
  if (c.shape_class == "GEMM (all)") {
    c.target_median = 0.05;
    c.target_p90 = 0.15;
  } else if (c.shape_class == "memory-bound (all)" || c.shape_class == "attention (all)") {
    c.target_median = 0.10;
  }
}

ClassError summarise(const std::string& name, std::vector<double> errs) {
  ClassError c;
  c.shape_class = name;
  c.n = static_cast<int>(errs.size());
  if (!errs.empty()) {
    c.median_abs = percentile(errs, 0.5);
    c.p90_abs = percentile(errs, 0.9);
    c.max_abs = *std::max_element(errs.begin(), errs.end());
  }
  set_targets(c);
  return c;
}
}  // namespace

const char* split_name(Split s) {
  switch (s) {
    case Split::fit: return "fit";
    case Split::heldout: return "heldout";
    case Split::excluded: return "excluded";
  }
  return "?";
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const double pos = p * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

bool ClassError::meets_target() const {
  return (target_median <= 0 || median_abs <= target_median) &&
         (target_p90 <= 0 || p90_abs <= target_p90);
}

std::vector<Split> split_measurements(const MeasurementSet& set) {
  std::vector<Split> splits(set.items.size(), Split::fit);
  std::map<std::string, std::vector<size_t>> by_class;
  for (size_t i = 0; i < set.items.size(); ++i) {
    if (!set.items[i].excluded.empty()) {
      splits[i] = Split::excluded;
      continue;
    }
    if (set.items[i].validation_only) {
      splits[i] = Split::heldout;
      continue;
    }
    by_class[set.items[i].shape_class].push_back(i);
  }
  for (auto& [cls, idx] : by_class) {
    std::sort(idx.begin(), idx.end(),
              [&](size_t a, size_t b) { return set.items[a].label < set.items[b].label; });
    for (size_t j = 0; j < idx.size(); ++j) {
      if (static_cast<int>(j % kHoldEvery) == kHoldAt) splits[idx[j]] = Split::heldout;
    }
  }
  return splits;
}

std::vector<ClassError> class_errors(const models::gpu::GpuSpec& spec, const MeasurementSet& set,
                                     const std::vector<Split>& splits, Split which) {
  std::map<std::string, std::vector<double>> by_class;
  std::map<std::string, std::vector<double>> by_kind;
  for (size_t i = 0; i < set.items.size(); ++i) {
    if (splits[i] != which) continue;
    const Measurement& m = set.items[i];
    const double e = std::fabs(predicted_us(spec, m) - m.time_us) / m.time_us;
    by_class[m.shape_class].push_back(e);
    by_kind[m.kind == "gemm" ? "GEMM (all)" : m.kind == "memory" ? "memory-bound (all)"
                                                                 : "attention (all)"]
        .push_back(e);
  }
  std::vector<ClassError> rows;
  for (const auto& [cls, errs] : by_class) rows.push_back(summarise(cls, errs));
  for (const auto& [kind, errs] : by_kind) rows.push_back(summarise(kind, errs));
  return rows;
}

std::string error_table(const std::vector<ClassError>& rows) {
  std::string out;
  char line[200];
  std::snprintf(line, sizeof line, "%-22s %5s %10s %10s %10s  %s\n", "class", "n", "median|e|",
                "p90|e|", "max|e|", "target");
  out += line;
  for (const ClassError& c : rows) {
    std::string target = "-";
    if (c.target_median > 0) {
      char t[80];
      std::snprintf(t, sizeof t, "median<=%.0f%%%s %s", 100 * c.target_median,
                    c.target_p90 > 0 ? (", p90<=" + std::to_string(static_cast<int>(100 * c.target_p90)) + "%").c_str() : "",
                    c.meets_target() ? "met" : "MISSED");
      target = t;
    }
    std::snprintf(line, sizeof line, "%-22s %5d %9.1f%% %9.1f%% %9.1f%%  %s\n", c.shape_class.c_str(), c.n,
                  100 * c.median_abs, 100 * c.p90_abs, 100 * c.max_abs, target.c_str());
    out += line;
  }
  return out;
}

}  // namespace gcsim::calibration
