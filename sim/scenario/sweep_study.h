// A sweep's study as `gcsim sweep` reads it (a base config, axes crossed,
// named cases) and its points as they run: the shapes shared by the sweep
// command (reading, running) and the result tables it writes.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/cli/point_runner.h"

namespace gcsim::cli {

struct SweepAxis {
  std::string key;                  // dotted config key, list items by index
  std::vector<std::string> values;  // each as YAML text, as written
  int line = 0;                     // in the study file, for messages
};

struct SweepCase {
  std::string name;
  std::vector<std::string> overrides;  // "key=value"
};

struct SweepStudy {
  std::string name;
  std::string base_path;  // resolved base config
  std::vector<SweepAxis> axes;
  std::vector<SweepCase> cases;
  // Points before expanding them: cases (at least 1) x each axis's values.
  double point_count() const;
};

// A point of the study: where it sits (case, axis values) and its run.
struct SweepPoint : RunPoint {
  size_t index = 0;
  std::string case_name;
  std::vector<std::string> axis_values;  // per axis, as written
};

// How the tables name axis `i`: its last key part ("tp" for
// workload.parallelism.tp), or the whole key when that part is a list index
// or another axis ends the same way (workload.ops.0.rank, workload.ops.1.rank).
std::string axis_label(const SweepStudy& s, size_t i);
// "case, tp=8, pp=16" (or "base" for a study without axes and cases).
std::string point_label(const SweepStudy& s, const SweepPoint& p);

}  // namespace gcsim::cli
