// After a training run with failures on: the long-horizon study (seeded
// failure traces, the job timeline with the DES step time, checkpoint costs
// from the storage model) and what it reports: summary.json `failures`
// (DESIGN.md), a report.md section and the lines printed on stdout.
#pragma once

#include <string>

#include "sim/scenario/failures_loader.h"
#include "sim/config/config_reader.h"

namespace gcsim::cli {

// Runs the study with `step_s` (the simulated step time, seconds), sets
// summary["failures"], appends to `report` and returns the stdout lines.
std::string add_failures_results(const FailuresSetup& setup, double step_s,
                                 sim::config::Json& summary, std::string& report);

}  // namespace gcsim::cli
