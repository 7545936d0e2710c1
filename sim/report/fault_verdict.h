// What a run's link faults (network.faults) did, told honestly: whether
// every transfer saw them, and, when a fault cut two ranks apart, which
// transfer could not be routed and which fault did it.
#pragma once

#include <optional>
#include <string>

#include "models/network/fabric.h"
#include "models/network/network_model.h"
#include "sim/scenario/scenario.h"
#include "sim/config/config_reader.h"

namespace gcsim::cli {

// Why some traffic did not see the configured faults, or nullopt when all
// of it did (or there are none). `closed_form_end` is when the last
// collective timed in closed form ended (ClusterModel::closed_form_end):
// the analytical model's collectives are α-β over the tier's bandwidth, so
// a fault before that end did not reach them.
std::optional<std::string> faults_not_honoured(const Scenario& s, sim::Time closed_form_end);

// The same for a serving run: its step collectives are timed once per
// batch shape on a fault-free copy of the fabric, so only the KV transfers
// of disaggregated serving see faults.
std::optional<std::string> inference_faults_not_honoured(const Scenario& s);

// Adds `network.faults_honoured` (and `network.faults_not_honoured_reason`)
// to a run's summary.json when the config has faults. The caller puts the
// reason among the run's notes too, before writing the reports.
void add_fault_verdict(const Scenario& s, const std::optional<std::string>& reason,
                       sim::config::Json& summary);

// A run stuck because a transfer had no path: a ConfigError naming the
// fault that cut it off (file, line, network.faults[i]), the transfer's
// endpoints, size and time, and the ops left waiting. Exit status 2, as
// for any config whose workload cannot finish.
[[noreturn]] void throw_unroutable(const Scenario& s, const models::network::Fabric& fabric,
                                   const models::network::NetworkStats& stats,
                                   const std::string& waiting);

}  // namespace gcsim::cli
