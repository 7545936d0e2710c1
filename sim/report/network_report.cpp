#include "sim/report/network_report.h"

#include <cstdio>
#include <sstream>

#include "sim/report/format.h"

namespace gcsim::cli {

using sim::config::Json;

Json network_summary(const models::network::NetworkStats& s) {
  Json j = Json::object();
  j["model"] = s.model;
  j["bytes_delivered"] = s.bytes_delivered.count();
  j["transfers"] = s.transfers;
  j["max_link_utilization"] = s.max_link_utilization;
  j["pfc_pause_time_s"] = s.pfc_pause_time_s;
  j["pfc_pauses"] = s.pfc_pauses;
  j["ecn_marks"] = s.ecn_marks;
  j["drops"] = s.drops;
  j["deadlocks"] = s.deadlocks;
  j["reroutes"] = s.reroutes;
  j["unroutable"] = s.unroutable;
  Json links = Json::array();
  for (const auto& l : s.busiest_links) {
    links.push_back({{"link", l.name},
                     {"bytes", l.bytes.count()},
                     {"utilization", l.utilization},
                     {"pfc_pause_s", l.pfc_pause_s}});
  }
  j["busiest_links"] = links;
  return j;
}

std::string network_report_section(const models::network::NetworkStats& s) {
  std::ostringstream o;
  char buf[160];
  o << "\n## Network (" << s.model << " model)\n\n";
  std::snprintf(buf, sizeof buf,
                "%s delivered in %lld transfers; busiest link %.1f%% utilized over the run.\n",
                human_bytes(s.bytes_delivered.as_double()).c_str(),
                static_cast<long long>(s.transfers), 100.0 * s.max_link_utilization);
  o << buf;
  if (s.model == "packet") {
    std::snprintf(buf, sizeof buf,
                  "PFC: %lld pauses, %.3g s paused in all; ECN marks %lld; drops %lld; "
                  "deadlocks %lld.\n",
                  static_cast<long long>(s.pfc_pauses), s.pfc_pause_time_s,
                  static_cast<long long>(s.ecn_marks), static_cast<long long>(s.drops),
                  static_cast<long long>(s.deadlocks));
    o << buf;
  }
  if (s.reroutes > 0 || s.unroutable > 0) {
    o << "Faults: " << s.reroutes << " flows rerouted, " << s.unroutable
      << " transfers had no path.\n";
  }
  if (!s.busiest_links.empty()) {
    o << "\n| link | bytes | utilization | PFC paused |\n|---|---:|---:|---:|\n";
    for (const auto& l : s.busiest_links) {
      std::snprintf(buf, sizeof buf, "| %s | %s | %.1f%% | %.3g s |\n", l.name.c_str(),
                    human_bytes(l.bytes.as_double()).c_str(), 100.0 * l.utilization, l.pfc_pause_s);
      o << buf;
    }
  }
  return o.str();
}

}  // namespace gcsim::cli
