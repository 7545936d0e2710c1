// What a graph run's `moe` ops cost, per layer: where the time went on each
// EP rank (router, permute, counts, dispatch, experts, combine, ...), the
// hot rank (the one whose experts got the most rows), and what the
// imbalance cost: time lost to the slowest rank's experts and to the hot
// receiver's links. For summary.json (`moe`) and report.md ("MoE layers").
#pragma once

#include <string>

#include "sim/report/run_report.h"
#include "sim/config/config_reader.h"

namespace gcsim::cli {

// One entry per moe layer; empty array when the run has none.
sim::config::Json moe_summary(const RunFigures& f);
// The report.md section ("" when the run has no moe layers).
std::string moe_report_section(const RunFigures& f);

}  // namespace gcsim::cli
