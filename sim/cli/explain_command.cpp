#include "sim/cli/explain_command.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/report/explain_table.h"
#include "sim/scenario/failures_loader.h"
#include "sim/cli/run_command.h"
#include "sim/config/config_error.h"

namespace gcsim::cli {

namespace fs = std::filesystem;
using sim::config::ConfigError;
using sim::config::Json;

workloads::estimate::LinkRates link_rates(const ClusterConfig& c) {
  workloads::estimate::LinkRates r;
  if (c.scale_up.kind != "none") {
    r.scale_up_bytes_per_s = c.scale_up.bandwidth.bytes_per_s();
    r.scale_up_latency_s = c.scale_up.latency.seconds();
  }
  r.scale_out_bytes_per_s = c.scale_out.nic_bandwidth.bytes_per_s();
  r.scale_out_latency_s = c.scale_out.latency.seconds();
  r.gpus_per_node = c.gpus_per_node;
  // Without a scale-up domain the GPUs of a node talk through the NIC path.
  if (r.scale_up_bytes_per_s <= 0) r.scale_up_bytes_per_s = r.scale_out_bytes_per_s;
  return r;
}

const Json& field(const Json& j, const char* key) {
  static const Json empty = Json::object();
  return j.is_object() && j.contains(key) ? j[key] : empty;
}

std::string busiest_link_text(const Json& summary) {
  if (!summary.contains("network")) return "";
  const Json& n = summary["network"];
  if (!n.contains("busiest_links") || n["busiest_links"].empty()) return "";
  const Json& l = n["busiest_links"][0];
  // A link busy for a small share of the run did not hold anything up.
  if (l.value("utilization", 0.0) < 0.2) return "";
  std::string t = "busiest link " + l.value("link", std::string("?")) + " carried " +
                  est::format_value(l.value("bytes", 0.0), est::Unit::bytes) + " at " +
                  est::format_value(l.value("utilization", 0.0), est::Unit::fraction) + " utilization";
  if (n.value("model", std::string()) != "analytical" && n.value("reroutes", 0) == 0) {
    t += " (" + n.value("model", std::string()) + " model, routing hashes flows onto shared links)";
  }
  if (n.value("pfc_pause_time_s", 0.0) > 0) {
    t += ", PFC pauses " + est::format_value(n.value("pfc_pause_time_s", 0.0), est::Unit::seconds);
  }
  return t;
}

namespace {

// The run writes its summary.json here and explain reads it back: the same
// code path, outputs and contract as `gcsim run`.
std::string cluster_line(const Scenario& s) {
  std::ostringstream o;
  o << s.cluster.nodes << " x " << s.cluster.gpus_per_node << " " << s.cluster.gpu.name << ", scale-up "
    << s.cluster.scale_up.kind << " " << est::format_value(s.cluster.scale_up.bandwidth.bytes_per_s(), est::Unit::bytes_per_s)
    << " per GPU, scale-out " << s.cluster.scale_out.topology;
  if (s.cluster.scale_out.topology != "none") {
    o << " " << est::format_value(s.cluster.scale_out.nic_bandwidth.bytes_per_s(), est::Unit::bytes_per_s)
      << " per GPU";
  }
  o << ", network model " << s.network.model;
  if (!s.cluster.gpu.calibration_applied.empty()) o << ", calibration " << s.cluster.gpu.calibration_applied;
  return o.str();
}

}  // namespace

int explain_command(const std::string& config_path, const ExplainOptions& options, std::ostream& out) {
  const Scenario s = load_scenario(config_path, options.load);
  RunDirectory dir(options.out_dir, "gcsim-explain-");
  std::ostringstream run_output;  // run's human summary: not part of the worksheet
  RunOptions run{options.load, dir.path().string(), false, false};
  const int rc = run_command(config_path, run, run_output);
  if (rc != 0) return rc;
  std::ifstream in(dir.path() / "summary.json");
  if (!in) throw std::runtime_error("the run wrote no summary.json in " + dir.path().string());
  const Json summary = Json::parse(in);

  std::ostringstream md;
  md << "# gcsim explain: " << config_path << "\n\n"
     << "Workload `" << s.workload_kind << "` on " << cluster_line(s) << ", seed " << s.seed << ".\n"
     << "Each line gives the formula, then the numbers put in, then the value; the last section sets the "
        "estimates beside the simulation of the same config.\n\n";
  if (s.training) md << explain_training(s, summary);
  else if (s.inference) md << explain_inference(s, summary);
  else if (s.collective) md << explain_collective(s, summary);
  else md << explain_graph(s, summary);
  if (s.failures && s.failures->enabled) md << explain_failures(s, summary);
  for (const auto& n : s.notes) md << "> note: " << n << "\n";

  const std::string text = md.str();
  out << text;
  if (!options.out_dir.empty()) {
    std::ofstream f(dir.path() / "explain.md");
    if (!f) throw ConfigError("command line", 0, "-o", "cannot write " + (dir.path() / "explain.md").string());
    f << text;
  }
  return 0;
}

}  // namespace gcsim::cli
