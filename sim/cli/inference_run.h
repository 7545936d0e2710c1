// `gcsim run` for workload kind inference: builds the cluster (one
// ClusterModel and network stack carrying the KV transfers, a second,
// scratch one on which each distinct step collective is run once and
// timed), runs the serving system, and writes summary.json, report.md and
// trace.json. With `requests.arrival.rate: search` it runs the load at
// several Poisson rates, doubling then bisecting, and reports the highest
// rate whose SLO attainment meets the target.
#pragma once

#include <chrono>
#include <filesystem>
#include <ostream>

#include "models/cluster/cluster_model.h"
#include "sim/cli/run_command.h"
#include "sim/scenario/scenario.h"

namespace gcsim::cli {

int run_inference(const Scenario& s, const models::cluster::ClusterModelConfig& cluster,
                  const RunOptions& options, const std::filesystem::path& dir, std::ostream& out,
                  std::chrono::steady_clock::time_point wall_start);

}  // namespace gcsim::cli
