#include "sim/cli/export_command.h"

#include <filesystem>
#include <fstream>
#include <ostream>

#include <nlohmann/json.hpp>

#include "sim/cli/clock_warmup.h"
#include "sim/scenario/network_setup.h"
#include "sim/scenario/training_workload_loader.h"
#include "workloads/chakra/trace_exporter.h"
#include "workloads/chakra/trace_file.h"

namespace gcsim::cli {

namespace fs = std::filesystem;
using sim::config::ConfigError;

namespace {

// The config with its workload replaced by the exported trace; cluster,
// network and simulation as the user wrote them (with -s overrides).
std::string replay_config(const std::string& config_path, const LoadOptions& options,
                          const std::string& stem, const std::string& replay_path,
                          bool sustained_clocks, const std::string& clock_state, bool one_queue) {
  sim::config::ConfigSource source;
  YAML::Node root = sim::config::load_yaml_file(config_path, options.overrides, source);
  YAML::Node w;
  w["kind"] = "chakra";
  w["prefix"] = stem;
  w["comm_groups"] = stem + ".comm_groups.json";
  w["compute"] = "model";
  root["workload"] = w;
  // A training step's kernels ran at sustained clocks (cluster.clocks:
  // sustained, or auto on a GPU without a power model); the replay is a
  // chakra workload, which defaults to rested.
  if (sustained_clocks) root["cluster"]["clocks"] = "sustained";
  // A step under the clock model started from its periodic steady state;
  // the replay starts each GPU from the same averages (a chakra workload
  // defaults to rest).
  if (!clock_state.empty()) root["cluster"]["clock_start"] = clock_state;
  // A Megatron step launched through one queue (cluster.launch_queues:
  // auto); the replay is no framework's, which defaults to CUDA's many.
  if (one_queue) root["cluster"]["launch_queues"] = "one";
  if (options.seed) root["simulation"]["seed"] = *options.seed;
  YAML::Emitter e;
  e << root;
  return "# Replays the Chakra trace gcsim exported from " + config_path +
         " (gcsim export).\n# Run: gcsim run " + replay_path + "\n" + e.c_str() + "\n";
}

// Each GPU's governor averages at the step's start, one rank a line, read
// back by cluster.clock_start (sim/scenario/scenario.cpp). Doubles are
// written to the digit that reads back to the same bits.
void write_clock_states(const fs::path& path, const Scenario& s,
                        const std::vector<models::gpu::GovernorState>& states) {
  auto four = [](const models::gpu::Activity& a) {
    return nlohmann::json::array({a.tensor, a.vector, a.hbm, a.hbm_unshared}).dump();
  };
  std::ofstream f(path);
  f << "{\n  \"about\": \"gcsim export: each GPU's power-governor averages at the start of the exported step, "
       "its periodic steady state (cluster.clock_start)\",\n"
    << "  \"gpu\": " << nlohmann::json(s.cluster.gpu.name).dump() << ",\n"
    << "  \"fields\": [\"tensor\", \"vector\", \"hbm\", \"hbm_unshared\"],\n  \"ranks\": [\n";
  for (size_t r = 0; r < states.size(); ++r) {
    f << "    {\"slow\": " << four(states[r].slow) << ", \"fast\": " << four(states[r].fast) << "}"
      << (r + 1 < states.size() ? ",\n" : "\n");
  }
  f << "  ]\n}\n";
  if (!f.flush()) throw ConfigError("command line", 0, "-o", "cannot write " + path.string());
}

}  // namespace

int export_command(const std::string& config_path, const LoadOptions& options,
                   const std::string& out_dir, std::ostream& out) {
  Scenario s = load_scenario(config_path, options);
  if (!s.graph) {
    throw ConfigError(config_path, 0, "workload.kind",
                      "a '" + s.workload_kind + "' workload builds its ops while it runs (from its "
                      "scheduler), so it has no fixed graph to export; graph, training, collective "
                      "and chakra workloads export");
  }
  LoadOptions used = options;
  if (s.training && s.training->workload.mirrored) {
    used.overrides.push_back("workload.simulate=all");
    s = load_scenario(config_path, used);
  }
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) {
    throw ConfigError("command line", 0, "-o",
                      "cannot create output directory '" + out_dir + "': " + ec.message());
  }
  const std::string stem = fs::path(config_path).stem().string();
  workloads::chakra::ExportResult r;
  try {
    r = workloads::chakra::export_trace(*s.graph, s.cluster.gpu, out_dir, stem);
  } catch (const workloads::chakra::TraceError& e) {
    throw ConfigError("command line", 0, "-o", e.what());
  }
  // Under the clock model a step starts from its periodic steady state:
  // found here as gcsim run finds it (the same warm-up passes over the same
  // step) and recorded, so the replay need not repeat them.
  std::string clock_state;
  if (s.cluster.clock_settle) {
    const ClockWarmup w = settle_clock_start(s, used.limits);
    clock_state = stem + ".clock_start.json";
    write_clock_states(fs::path(out_dir) / clock_state, s, w.start);
  }
  const fs::path replay = fs::path(out_dir) / (stem + ".chakra.yaml");
  std::ofstream f(replay);
  f << replay_config(config_path, used, stem, replay.string(),
                     s.cluster.gpu.at_sustained_clocks && !s.cluster.clock_model, clock_state, one_launch_queue(s));
  if (!f.good()) throw ConfigError("command line", 0, "-o", "cannot write " + replay.string());

  out << "gcsim: exported " << config_path << " (" << s.workload_kind << ")\n";
  out << "  " << r.nodes << " nodes on " << r.files.size() << " ranks: "
      << workloads::chakra::rank_file((fs::path(out_dir) / stem).string(), 0) << " .. "
      << workloads::chakra::rank_file((fs::path(out_dir) / stem).string(),
                                      static_cast<int>(r.files.size()) - 1)
      << "\n";
  out << "  comm groups: " << r.comm_groups_file << " (" << r.comm_groups.size() << ")\n";
  if (used.overrides.size() != options.overrides.size()) {
    out << "  note: mirrored ranks were expanded (workload.simulate: all) so that every rank "
           "has its own trace\n";
  }
  out << "  replay: gcsim run " << replay.string() << "\n";
  return 0;
}

}  // namespace gcsim::cli
