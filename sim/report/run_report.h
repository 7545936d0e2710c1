// What a finished run reports: summary.json (the contract of DESIGN.md),
// report.md (tables for people) and the short summary printed on stdout.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "models/network/network_model.h"
#include "sim/scenario/scenario.h"
#include "sim/config/config_reader.h"
#include "sim/engine/recorder.h"

namespace gcsim::cli {

struct RunFigures {
  const Scenario* scenario = nullptr;
  std::vector<sim::OpRecord> records;  // (rank, program order)
  sim::Time simulated_time;
  uint64_t events = 0;
  double wall_time_s = 0;
  std::vector<sim::Bytes> memory_peak;  // per rank
  std::string oom;                      // "" when everything fit
  std::optional<models::network::NetworkStats> network;  // when a fabric was simulated
  // Board energy (J) per rank from time zero to the end of the run, under
  // the clock model (cluster.clocks: model); empty otherwise.
  std::vector<double> energy_j;
};

sim::config::Json build_summary(const RunFigures& f);
std::string build_report(const RunFigures& f);
std::string human_summary(const RunFigures& f, const std::string& out_dir, bool trace);

}  // namespace gcsim::cli
