// What an inference run reports: summary.json with the DESIGN.md contract
// keys (ttft_s, tpot_s, itl_s, e2e_s with mean/p50/p90/p99; throughput;
// preemptions; kv_cache; slo_attainment and goodput_requests_per_s when
// SLOs are set), report.md with the latency table, per-replica figures and
// the memory plan, the Perfetto trace (each engine step as a span with its
// batch composition, KV-cache use as a counter, KV transfers), and the
// short summary on stdout.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "models/network/network_model.h"
#include "sim/scenario/inference_workload_loader.h"
#include "sim/scenario/scenario.h"
#include "sim/config/config_reader.h"
#include "workloads/inference/serving_metrics.h"
#include "workloads/inference/serving_system.h"

namespace gcsim::cli {

// One point of a rate search.
struct RatePoint {
  double rate = 0;
  double slo_attainment = 0;
  double goodput = 0;
  bool meets = false;
};

struct InferenceFigures {
  const Scenario* scenario = nullptr;
  const InferenceSetup* setup = nullptr;
  workloads::inference::ServingOutcome outcome;
  workloads::inference::ServingMetrics metrics;
  double rate = 0;  // arrival rate of the run reported (requests/s; 0 for burst/trace)
  std::optional<models::network::NetworkStats> network;  // with disaggregation
  uint64_t events = 0;
  int64_t comm_probes = 0;  // distinct collectives run on the fabric
  double wall_time_s = 0;
  std::vector<RatePoint> search;  // rate search, in the order tried
};

sim::config::Json build_inference_summary(const InferenceFigures& f);
std::string build_inference_report(const InferenceFigures& f);
std::string inference_human_summary(const InferenceFigures& f, const std::string& out_dir,
                                    bool trace);
void write_inference_trace(const InferenceFigures& f, const std::string& path);

}  // namespace gcsim::cli
