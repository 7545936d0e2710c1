// report.html of `gcsim sweep` and `gcsim plan`: throughput against GPUs or
// memory per GPU with the Pareto front (the most throughput for the least
// memory or hardware), the step's parts of each point or simulated layout
// as stacked bars, and the ranked tables.
#pragma once

#include <string>
#include <vector>

#include "sim/report/plan_report.h"
#include "sim/cli/point_runner.h"

namespace gcsim::cli {

// A sweep point as the page lists it.
struct SweepRow {
  std::string label;    // "tp=8, pp=16, schedule=dualpipe"
  const RunPoint* run;  // its run (status ok, skipped or failed)
};

// `rows` ranked as results.md ranks them (fits first, then step time),
// then the points that did not run.
std::string sweep_html(const std::string& name, const std::string& base_path, const std::vector<SweepRow>& rows);

std::string plan_html(const PlanResult& r);

}  // namespace gcsim::cli
