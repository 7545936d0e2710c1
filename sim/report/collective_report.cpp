#include "sim/report/collective_report.h"

#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <limits>
#include <map>
#include <sstream>

#include "sim/scenario/collective_workload_loader.h"
#include "sim/report/format.h"
#include "sim/config/unit_parse.h"

namespace gcsim::cli {

using sim::config::Json;

namespace {

// GCSIM_COLLECTIVE_MEMO=0 runs every collective on the engine: the
// reference the memo is checked against.
bool memo_disabled_by_env() {
  const char* v = std::getenv("GCSIM_COLLECTIVE_MEMO");
  return v != nullptr && std::string(v) == "0";
}

}  // namespace

void configure_collectives(const Scenario& s, models::cluster::ClusterModel& cluster) {
  if (!s.collective) {
    // Training steps run their collectives as NCCL does
    // (algorithm, protocol, channels, links) on every network model, so a
    // strategy's TP and DP time comes from one model whichever network
    // model is chosen; under `analytical` the engine's transfers meet no
    // contention (each takes latency + bytes / its path's bottleneck, the
    // α-β step of NCCL's own cost model). Hand-written graphs (and Chakra
    // traces, which replay a graph's export to the picosecond) on
    // `analytical` keep the closed α-β ring forms over the tier bandwidth,
    // the whiteboard figures (DESIGN.md: "analytical: α-β, no contention");
    // on a fabric model they run on the engine too. (Inference sets up its
    // own cluster model, with the engine on every network model:
    // inference_run.cpp.)
    const bool nccl_everywhere = s.training != nullptr;
    if (nccl_everywhere || s.network.model != "analytical") {
      models::cluster::CollectiveChoice choice;
      choice.on_network = true;
      cluster.set_collective_choice(choice);
    }
    // Without contention or faults a collective's time is a function of the
    // request alone: each distinct one runs once on the engine (exact;
    // tests/scenario/test_network_runs.cpp compares with every one run).
    cluster.set_collective_memo(nccl_everywhere && s.network.model == "analytical" &&
                                s.faults.empty() && !memo_disabled_by_env());
    return;
  }
  models::cluster::CollectiveChoice choice;
  choice.on_network = true;
  choice.algorithm = s.collective->algorithm;
  choice.protocol = s.collective->protocol;
  choice.nvls = s.collective->nvls;
  choice.p2p_as_nccl = true;
  cluster.set_collective_choice(choice);
  cluster.record_collectives(true);
}

std::vector<CollectiveResult> collective_results(const Scenario& s, const RunFigures& f,
                                                 const models::cluster::ClusterModel& cluster) {
  std::vector<CollectiveResult> out;
  if (!s.collective) return out;
  const CollectiveWorkload& w = *s.collective;
  const auto& g = *s.graph;
  // Per op name: first arrival and last end over every member's record.
  struct Span {
    sim::Time start = sim::Time::max(), end = sim::Time::zero();
  };
  std::map<uint32_t, Span> spans;
  for (const auto& r : f.records) {
    const auto& op = g.program(r.rank).ops[r.op];
    Span& sp = spans[op.name];
    sp.start = std::min(sp.start, r.start);
    sp.end = std::max(sp.end, r.end);
  }
  std::map<uint32_t, const models::cluster::CollectiveRecord*> plans;
  for (const auto& rec : cluster.collective_records()) plans.emplace(rec.op_name, &rec);

  const int n = static_cast<int>(w.ranks.size());
  const double factor = models::collectives::bus_bandwidth_factor(w.op, n);
  for (size_t i = 0; i < w.sizes.size(); ++i) {
    CollectiveResult r;
    r.op = std::string(models::collectives::op_name(w.op));
    r.bytes = w.sizes[i].count();
    r.ranks = n;
    const auto sp = spans.find(w.op_names[i]);
    if (sp != spans.end() && sp->second.end >= sp->second.start) {
      r.time_s = (sp->second.end - sp->second.start).seconds();
    }
    if (r.time_s > 0) {
      r.algbw_gbps = static_cast<double>(r.bytes) / r.time_s * 1e-9;
      r.busbw_gbps = r.algbw_gbps * factor;
    }
    const auto pl = plans.find(w.op_names[i]);
    if (pl != plans.end()) {
      r.algorithm = std::string(models::collectives::algorithm_name(pl->second->plan.algorithm));
      r.protocol = std::string(models::collectives::protocol_name(pl->second->plan.protocol));
      r.channels = pl->second->plan.channels;
    }
    out.push_back(r);
  }
  return out;
}

Json collective_results_json(const std::vector<CollectiveResult>& results) {
  Json a = Json::array();
  for (const auto& r : results) {
    Json j = Json::object();
    j["op"] = r.op;
    j["bytes"] = r.bytes;
    j["ranks"] = r.ranks;
    j["time_s"] = r.time_s;
    j["algbw_GBps"] = r.algbw_gbps;
    j["busbw_GBps"] = r.busbw_gbps;
    j["algorithm"] = r.algorithm;
    j["protocol"] = r.protocol;
    j["channels"] = r.channels;
    a.push_back(j);
  }
  return a;
}

std::string collective_report_section(const Scenario& s,
                                      const std::vector<CollectiveResult>& results,
                                      const models::cluster::ClusterModel& cluster) {
  if (!s.collective) return "";
  const CollectiveWorkload& w = *s.collective;
  std::ostringstream o;
  o << "\n## Collective: " << models::collectives::op_name(w.op) << " over " << w.ranks.size()
    << " ranks (nccl-tests style)\n\n";
  const auto* engine = cluster.collective_engine();
  if (engine != nullptr) {
    o << "Algorithm " << (w.algorithm ? models::collectives::algorithm_name(*w.algorithm) : "auto")
      << ", protocol " << (w.protocol ? models::collectives::protocol_name(*w.protocol) : "auto")
      << ", NVLS " << (engine->params().nvls ? "on" : "off") << ", up to "
      << engine->params().channels << " channels; parameters: " << engine->params().source
      << ". busbw = algbw x " << fmt("%.4g", models::collectives::bus_bandwidth_factor(
                                                   w.op, static_cast<int>(w.ranks.size())))
      << " (nccl-tests).\n\n";
  }
  const double elem = models::gpu::dtype_bytes(w.dtype);
  o << "| size (B) | count | type | algorithm | protocol | channels | time (us) | algbw (GB/s) "
       "| busbw (GB/s) |\n|---:|---:|---|---|---|---:|---:|---:|---:|\n";
  double sum_busbw = 0.0;
  for (const auto& r : results) {
    o << "| " << r.bytes << " | " << static_cast<int64_t>(static_cast<double>(r.bytes) / elem)
      << " | " << models::gpu::dtype_name(w.dtype) << " | " << r.algorithm << " | " << r.protocol
      << " | " << r.channels << " | " << fmt("%.2f", r.time_s * 1e6) << " | "
      << fmt("%.2f", r.algbw_gbps) << " | " << fmt("%.2f", r.busbw_gbps) << " |\n";
    sum_busbw += r.busbw_gbps;
  }
  if (!results.empty()) {
    o << "\nAverage bus bandwidth: " << fmt("%.2f", sum_busbw / static_cast<double>(results.size()))
      << " GB/s.\n";
  }
  return o.str();
}

std::string collective_stdout_table(const std::vector<CollectiveResult>& results) {
  std::ostringstream o;
  if (results.empty()) return "";
  char line[256];
  std::snprintf(line, sizeof line, "  %14s %12s %-9s %-7s %12s %12s %12s\n", "size (B)", "op",
                "algo", "proto", "time (us)", "algbw GB/s", "busbw GB/s");
  o << line;
  for (const auto& r : results) {
    std::snprintf(line, sizeof line, "  %14lld %12s %-9s %-7s %12.2f %12.2f %12.2f\n",
                  static_cast<long long>(r.bytes), r.op.c_str(), r.algorithm.c_str(),
                  r.protocol.c_str(), r.time_s * 1e6, r.algbw_gbps, r.busbw_gbps);
    o << line;
  }
  return o.str();
}

std::string add_collective_results(const Scenario& s, const RunFigures& f,
                                   const models::cluster::ClusterModel& cluster, Json& summary,
                                   std::string& report) {
  if (!s.collective) return "";
  const std::vector<CollectiveResult> results = collective_results(s, f, cluster);
  summary["results"] = collective_results_json(results);
  const std::string section = collective_report_section(s, results, cluster);
  // The table goes after the run overview, before the per-GPU tables.
  const size_t at = report.find("\n## ");
  report.insert(at == std::string::npos ? report.size() : at, section);
  return collective_stdout_table(results);
}

}  // namespace gcsim::cli
