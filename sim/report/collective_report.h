// What a `collective` workload reports: per message size the time, algbw
// and busbw with nccl-tests' definitions (doc/PERFORMANCE.md: algbw = S/t;
// busbw = algbw x 2(n-1)/n for all-reduce, (n-1)/n for all-gather,
// reduce-scatter and all-to-all, 1 for broadcast, reduce and send/recv),
// and which algorithm and protocol the tuner chose. summary.json gets
// `results`; report.md and stdout the nccl-tests-style table.
#pragma once

#include <string>
#include <vector>

#include "models/cluster/cluster_model.h"
#include "sim/report/run_report.h"
#include "sim/scenario/scenario.h"
#include "sim/config/config_reader.h"

namespace gcsim::cli {

struct CollectiveResult {
  std::string op;
  int64_t bytes = 0;
  int ranks = 0;
  double time_s = 0.0;
  double algbw_gbps = 0.0;  // GB/s (1e9 bytes per second), as nccl-tests prints
  double busbw_gbps = 0.0;
  std::string algorithm;
  std::string protocol;
  int channels = 0;
};

// Before the run: collectives (and send/recv) of a `collective` workload
// run on the collective engine over the attached network, with the
// workload's algorithm, protocol and NVLS choice; those of a graph,
// training or Chakra workload too when the network model is flow or packet
// (analytical keeps the closed α-β form; inference sets up its own).
void configure_collectives(const Scenario& s, models::cluster::ClusterModel& cluster);

// After the run: one result per size, from the op records (time = first
// member's arrival to the last member's end) and the plans that ran.
std::vector<CollectiveResult> collective_results(const Scenario& s, const RunFigures& f,
                                                 const models::cluster::ClusterModel& cluster);

sim::config::Json collective_results_json(const std::vector<CollectiveResult>& results);
std::string collective_report_section(const Scenario& s,
                                      const std::vector<CollectiveResult>& results,
                                      const models::cluster::ClusterModel& cluster);
// The table for stdout, one line per size.
std::string collective_stdout_table(const std::vector<CollectiveResult>& results);

// All of the above for run_command: adds `results` to the summary and the
// section to the report; returns the stdout table ("" for other kinds).
std::string add_collective_results(const Scenario& s, const RunFigures& f,
                                   const models::cluster::ClusterModel& cluster,
                                   sim::config::Json& summary, std::string& report);

}  // namespace gcsim::cli
