// Pieces that the summary.json and report.md of several workload kinds
// share, so that each key and section is written one way: the run's figures
// at the top of summary.json, the context at its end (stragglers, network,
// notes, hardware, resolved config), and report.md's closing sections.
#pragma once

#include <optional>
#include <string>

#include "models/network/network_model.h"
#include "sim/report/run_report.h"
#include "sim/scenario/scenario.h"
#include "sim/config/config_reader.h"

namespace gcsim::cli {

// kind, status, simulated_time_s, events, wall_time_s, gpus, gpu.
sim::config::Json summary_head(const RunFigures& f);

// Appends stragglers (when any), network (when simulated), notes, hardware
// and config.
void add_summary_tail(sim::config::Json& j, const Scenario& s,
                      const std::optional<models::network::NetworkStats>& network);

// The network section (when simulated), the modelling notes (when any) and
// where the resolved configuration is.
std::string report_tail(const Scenario& s,
                        const std::optional<models::network::NetworkStats>& network);

}  // namespace gcsim::cli
