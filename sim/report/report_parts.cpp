#include "sim/report/report_parts.h"

#include "sim/scenario/gpu_spec_loader.h"
#include "sim/report/network_report.h"
#include "sim/scenario/straggler_loader.h"

namespace gcsim::cli {

using sim::config::Json;

Json summary_head(const RunFigures& f) {
  const Scenario& s = *f.scenario;
  Json j = Json::object();
  j["kind"] = s.workload_kind;
  j["status"] = f.oom.empty() ? "ok" : "oom";
  j["simulated_time_s"] = f.simulated_time.seconds();
  j["events"] = f.events;
  j["wall_time_s"] = f.wall_time_s;
  j["gpus"] = s.cluster.total_gpus();
  j["gpu"] = s.cluster.gpu.name;
  return j;
}

void add_summary_tail(Json& j, const Scenario& s,
                      const std::optional<models::network::NetworkStats>& network) {
  if (!s.cluster.stragglers.empty()) j["stragglers"] = stragglers_json(s.cluster.stragglers);
  if (network) j["network"] = network_summary(*network);
  j["notes"] = s.notes;
  j["hardware"] = gpu_spec_json(s.cluster.gpu);
  j["config"] = s.resolved;
}

std::string report_tail(const Scenario& s,
                        const std::optional<models::network::NetworkStats>& network) {
  std::string o;
  if (network) o += network_report_section(*network);
  if (!s.notes.empty()) {
    o += "\n## Modelling notes\n\n";
    for (const auto& n : s.notes) o += "- " + n + "\n";
  }
  o += "\nThe fully resolved configuration is under `config` in summary.json.\n";
  return o;
}

}  // namespace gcsim::cli
