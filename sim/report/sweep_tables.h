// What `gcsim sweep` writes about its points, by workload kind: training
// points get step time, throughput, MFU, bubble, memory and the largest
// exposed communication, ranked fits first then by step time; serving
// points get TTFT and TPOT (p50, p99), goodput and output tokens/s per GPU,
// ranked by goodput per GPU (or throughput per GPU without SLOs); any other
// kind its simulated time and memory. results.csv carries the same figures.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "sim/scenario/sweep_study.h"

namespace gcsim::cli {

void write_results_csv(const SweepStudy& s, const std::vector<SweepPoint>& points,
                       const std::filesystem::path& path);

// One ranked markdown table per workload kind present, each with the rule it
// is ranked by, then the points that did not run with their reasons.
std::string ranked_tables(const SweepStudy& s, const std::vector<SweepPoint>& points);

// The points as the tables list them: those that ran, per workload kind and
// ranked by its rule, then those that did not.
std::vector<const SweepPoint*> ranked_points(const SweepStudy& s, const std::vector<SweepPoint>& points);

// The one figure a progress line shows for a finished point ("4.13 s" step,
// "TTFT p99 0.4 s, goodput 3.72 req/s", ...), or the status and reason.
std::string progress_figure(const SweepPoint& p);

}  // namespace gcsim::cli
