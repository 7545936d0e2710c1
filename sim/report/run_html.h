// report.html of one `gcsim run`, by workload kind (html_report.h draws the
// page, svg_chart.h the charts):
// - training: headline figures; the step's parts as stacked bars per
//   pipeline rank; memory per GPU (weights, gradients, optimizer states,
//   activations, buffers) against HBM; a timeline of the step per stream of
//   the simulated ranks; the busiest links;
// - inference: latency CDFs (TTFT, TPOT, E2E); prefill and decode tokens per
//   second over time; memory per GPU of each pool against HBM; each
//   replica's engine steps on a timeline; the busiest links;
// - graph, collective, Chakra: the timeline per stream, peak memory per GPU
//   against HBM, bus bandwidth against message size (collective), the
//   busiest links.
#pragma once

#include <string>

#include "sim/report/inference_report.h"
#include "sim/report/run_report.h"
#include "sim/report/training_report.h"
#include "sim/config/config_reader.h"

namespace gcsim::cli {

std::string training_html(const RunFigures& f, const TrainingFigures& t, const sim::config::Json& summary);
std::string inference_html(const InferenceFigures& f, const sim::config::Json& summary);
std::string run_html(const RunFigures& f, const sim::config::Json& summary);

// The busiest links of summary.json's `network` as horizontal bars of
// utilization; "" when the run moved nothing over a fabric.
std::string busiest_links_chart(const sim::config::Json& summary);

}  // namespace gcsim::cli
