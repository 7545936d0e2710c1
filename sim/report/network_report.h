// The `network` part of a run's outputs: summary.json's `network` object
// (DESIGN.md contract: model, bytes_delivered, max_link_utilization,
// pfc_pause_time_s, ecn_marks, drops, deadlocks) plus the busiest links, and
// the matching report.md section.
#pragma once

#include <string>

#include "models/network/network_model.h"
#include "sim/config/config_reader.h"

namespace gcsim::cli {

sim::config::Json network_summary(const models::network::NetworkStats& s);
std::string network_report_section(const models::network::NetworkStats& s);

}  // namespace gcsim::cli
