#include "sim/report/fault_verdict.h"

#include <algorithm>

#include "models/network/unroutable_log.h"
#include "sim/config/unit_parse.h"
#include "topologies/fault_schedule.h"

namespace gcsim::cli {

using sim::config::ConfigError;
using sim::config::Json;

std::optional<std::string> faults_not_honoured(const Scenario& s, sim::Time closed_form_end) {
  if (s.faults.empty()) return std::nullopt;
  sim::Time first = s.faults.front().at;
  for (const auto& f : s.faults) first = std::min(first, f.at);
  if (closed_form_end <= first) return std::nullopt;
  return "network.faults did not reach this run's collectives: under network.model: " +
         s.network.model +
         " they are timed in closed form (alpha-beta over the tier bandwidth), which sees no "
         "link; point-to-point transfers did see the faults. Use network.model: flow to put "
         "collectives on the faulted fabric.";
}

std::optional<std::string> inference_faults_not_honoured(const Scenario& s) {
  if (s.faults.empty()) return std::nullopt;
  return "network.faults reach only the KV-cache transfers between disaggregated prefill and "
         "decode replicas: each replica's step collectives are timed on the fault-free fabric.";
}

void add_fault_verdict(const Scenario& s, const std::optional<std::string>& reason,
                       Json& summary) {
  if (s.faults.empty()) return;
  Json& network = summary["network"];
  network["faults_honoured"] = !reason.has_value();
  if (reason) network["faults_not_honoured_reason"] = *reason;
}

void throw_unroutable(const Scenario& s, const models::network::Fabric& fabric,
                      const models::network::NetworkStats& stats, const std::string& waiting) {
  const models::network::UnroutableTransfer& t = stats.unroutable_transfers.front();
  // The fault to blame: the last one (in time, then list order) that set
  // one of the now-down links down.
  std::optional<size_t> culprit;
  for (size_t i = 0; i < s.faults.size(); ++i) {
    const auto& f = s.faults[i];
    if (f.state != models::network::LinkState::down || f.at > t.when) continue;
    for (auto l : topologies::fault_links(fabric, f.link)) {
      if (std::binary_search(t.down_links.begin(), t.down_links.end(), l) &&
          (!culprit || f.at >= s.faults[*culprit].at)) {
        culprit = i;
      }
    }
  }
  std::string message =
      "a transfer cannot be routed: " + models::network::describe_unroutable(fabric, t);
  if (stats.unroutable > 1) {
    message += " (" + std::to_string(stats.unroutable) + " transfers had no path in all)";
  }
  message += ". The run stops with these ops unfinished: " + waiting +
             ". Keep a path between these ranks (or bring the link back up with a later "
             "fault entry, state: up).";
  if (!culprit) throw ConfigError(s.config_path, 0, "network.faults", message);
  const auto& f = s.faults[*culprit];
  throw ConfigError(s.config_path, f.config_line,
                    "network.faults[" + std::to_string(*culprit) + "]",
                    "link '" + f.link + "' down at " +
                        sim::format_duration(f.at - sim::Time::zero()) + " cuts the fabric: " +
                        message);
}

}  // namespace gcsim::cli
