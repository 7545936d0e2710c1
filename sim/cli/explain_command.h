// `gcsim explain CONFIG.yaml [-o DIR]`: the back-of-envelope worksheet of a
// config (model, memory per GPU, communication per step, time) beside the
// same config simulated, with the reason for every difference above 10%.
// Markdown on stdout; with -o also DIR/explain.md next to the run's
// summary.json and report.md.
#pragma once

#include <iosfwd>
#include <string>

#include "models/gpu/kernel.h"
#include "sim/scenario/scenario.h"
#include "sim/config/config_reader.h"
#include "workloads/estimate/comm_estimate.h"

namespace gcsim::cli {

struct ExplainOptions {
  LoadOptions load;
  std::string out_dir;  // "" = no files (the run goes to a temporary directory)
};

// Returns the process exit status. ConfigError propagates (exit 2).
int explain_command(const std::string& config_path, const ExplainOptions& options, std::ostream& out);

// The cluster's links as the estimate sees them.
workloads::estimate::LinkRates link_rates(const ClusterConfig& cluster);

// j[key], or an empty object when j has no such key (a summary from a run
// that ended early): .value(...) on it gives the default.
const sim::config::Json& field(const sim::config::Json& j, const char* key);

// "busiest link node0/gpu0->leaf0 carried 1.2 GiB at 87% utilization" from
// summary.json's network object; "" when the run moved nothing on a fabric
// or its busiest link was busy less than 20% of the run.
std::string busiest_link_text(const sim::config::Json& summary);

// Worksheet and comparison per workload kind; `summary` is the run's
// summary.json. Each returns markdown sections.
std::string explain_training(const Scenario& s, const sim::config::Json& summary);
std::string explain_inference(const Scenario& s, const sim::config::Json& summary);
std::string explain_collective(const Scenario& s, const sim::config::Json& summary);
std::string explain_graph(const Scenario& s, const sim::config::Json& summary);
std::string explain_failures(const Scenario& s, const sim::config::Json& summary);

}  // namespace gcsim::cli
