#include "sim/cli/run_command.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "models/cluster/cluster_model.h"
#include "sim/report/collective_report.h"
#include "sim/report/failures_report.h"
#include "sim/report/fault_verdict.h"
#include "sim/cli/clock_warmup.h"
#include "sim/cli/inference_run.h"
#include "sim/scenario/network_setup.h"
#include "sim/report/run_html.h"
#include "sim/report/run_report.h"
#include "sim/scenario/straggler_loader.h"
#include "sim/report/training_report.h"
#include "sim/engine/recorder.h"
#include "sim/engine/replayer.h"
#include "sim/engine/simulator.h"
#include "sim/config/unit_parse.h"

namespace gcsim::cli {

namespace fs = std::filesystem;
using sim::config::ConfigError;
using sim::config::Json;

namespace {

std::string default_out_dir(const std::string& config_path) {
  return (fs::path("out") / fs::path(config_path).stem()).string();
}

// Creates the output directory and proves it takes a file, before the run
// (as root, /proc/self and /sys pass access() but refuse files).
void prepare_output_dir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw ConfigError("command line", 0, "-o",
                      "cannot create output directory '" + dir.string() + "': " + ec.message());
  }
  const fs::path probe = dir / ".gcsim-write-test";
  {
    std::ofstream f(probe);
    f << "x";
    if (!f.flush()) {
      throw ConfigError("command line", 0, "-o",
                        "cannot write files into '" + dir.string() + "'; choose another -o");
    }
  }
  fs::remove(probe, ec);
}

}  // namespace

void write_output_file(const fs::path& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  if (!f.flush()) {
    throw ConfigError("command line", 0, "-o",
                      "cannot write " + path.string() + " (disk full or not writable?)");
  }
}

int check_command(const std::string& config_path, const LoadOptions& options, std::ostream& out) {
  Scenario s = load_scenario(config_path, options);
  out << "# " << config_path << ": valid. Fully resolved configuration:\n";
  out << sim::config::to_documented_yaml(s.resolved, *s.source);
  for (const auto& n : s.notes) out << "# note: " << n << "\n";
  return 0;
}

int run_command(const std::string& config_path, const RunOptions& options, std::ostream& out) {
  const auto wall_start = std::chrono::steady_clock::now();
  Scenario s = load_scenario(config_path, options.load);
  const fs::path dir = options.out_dir.empty() ? default_out_dir(config_path) : options.out_dir;
  prepare_output_dir(dir);
  if (s.inference) {
    if (auto missed = inference_faults_not_honoured(s)) s.notes.push_back(*missed);
    return run_inference(s, cluster_model_config(s), options, dir, out, wall_start);
  }

  // A step that starts from its own periodic steady state: warm-up passes
  // find each GPU's start first (clock_warmup.h).
  if (s.cluster.clock_settle) settle_clock_start(s, options.load.limits);

  sim::Simulator simulator(s.seed);
  models::cluster::ClusterModel cluster(simulator, cluster_model_config(s));
  const std::unique_ptr<NetworkStack> network = build_network_stack(simulator, s);
  cluster.attach_network(*network->model, network->fabric);
  configure_collectives(s, cluster);
  // Link counters for the trace: kept until the end, when the busiest links
  // are known, and only those go into trace.json.
  std::vector<models::network::LinkCounterSample> link_samples;
  if (options.trace) {
    network->model->set_counter_listener(
        [&link_samples](const models::network::LinkCounterSample& c) { link_samples.push_back(c); });
  }
  sim::Recorder recorder(*s.graph, options.trace ? (dir / "trace.json").string() : "",
                         s.cluster.gpu.name);
  recorder.set_describer(
      [&cluster](int rank, const workloads::Op& op) { return cluster.describe(op, rank); });
  cluster.set_memory_listener(
      [&recorder](int rank, sim::Time t, sim::Bytes used) { recorder.on_memory(rank, t, used); });
  if (options.trace) {
    cluster.set_power_listener([&recorder](int rank, sim::Time t, double mhz, double w) {
      recorder.on_power(rank, t, mhz, w);
    });
  }
  // Mirrored training ranks time their collectives over whole groups.
  std::unique_ptr<sim::OpExecutor> training_executor;
  if (s.training) training_executor = make_training_executor(*s.training, cluster, *s.graph, simulator);
  sim::Replayer replayer(simulator, *s.graph,
                         training_executor ? *training_executor
                                           : static_cast<sim::OpExecutor&>(cluster),
                         recorder);
  if (options.progress) {
    const size_t total_ops = s.graph->total_ops();
    simulator.set_progress([&recorder, total_ops](sim::Time now, uint64_t events) {
      std::fprintf(stderr, "[gcsim] simulated %.6f s, %llu events, %zu/%zu ops done\n",
                   now.seconds(), static_cast<unsigned long long>(events),
                   recorder.records().size(), total_ops);
    });
  }
  const RunGuard guard(simulator, options.load.limits, s.estimate);
  try {
    replayer.start();
    simulator.run();
    guard.check();
  } catch (const sim::TimeOverflow& e) {
    // A straggler stretches its kernels by 1/speed: the likeliest cause then.
    const bool slow = any_slow(s.cluster.stragglers);
    throw ConfigError(config_path, 0, slow ? "cluster.stragglers" : "workload",
                      "the run goes past the simulator's time range (about 106 days of "
                      "simulated time): " + std::string(e.what()) +
                          (slow ? "; stragglers (" + describe_stragglers(s.cluster.stragglers) +
                                      ") run their kernels 1/speed times as long: raise speed"
                                : ""));
  }
  if (options.trace) {
    const auto busiest = network->model->stats(simulator.now() - sim::Time::zero()).busiest_links;
    for (const auto& c : link_samples) {
      for (const auto& l : busiest) {
        if (l.link == c.link) {
          recorder.on_link_counter(l.name, c.when, c.utilization, c.queue_bytes);
        }
      }
    }
  }
  recorder.finish();
  const sim::ReplayOutcome outcome = replayer.outcome();
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();

  using Ending = sim::ReplayOutcome::Ending;
  const bool oom = outcome.ending == Ending::out_of_memory;
  if (outcome.ending == Ending::mismatched_communication) {
    throw ConfigError(config_path, 0, "workload.ops", outcome.stuck);
  }
  if (outcome.ending == Ending::bad_memory_op) {
    throw ConfigError(config_path, 0, "workload.ops",
                      outcome.stuck + ": order the free after its alloc (same stream or `after`)");
  }
  if (outcome.ending == Ending::deadlock) {
    const auto stats = network->model->stats(simulator.now() - sim::Time::zero());
    if (!stats.unroutable_transfers.empty()) {
      throw_unroutable(s, network->fabric, stats, outcome.stuck);
    }
    throw ConfigError(config_path, 0, "workload.ops",
                      "the workload deadlocked: " + outcome.stuck +
                          ". Check that every rank issues its p2p and collective ops in an "
                          "order its peers can match.");
  }

  RunFigures fig;
  fig.scenario = &s;
  fig.records = recorder.sorted_records();
  fig.simulated_time = outcome.makespan;
  fig.events = simulator.events_executed();
  fig.wall_time_s = wall_s;
  fig.oom = oom ? outcome.stuck : "";
  fig.network = network->model->stats(outcome.makespan - sim::Time::zero());
  for (int r = 0; r < cluster.num_ranks(); ++r) {
    fig.memory_peak.push_back(cluster.gpu(r).memory_peak());
    if (const auto* gov = cluster.gpu(r).governor()) {
      fig.energy_j.push_back(gov->energy_j(outcome.makespan));
    }
  }
  const std::optional<std::string> faults_missed = faults_not_honoured(s, cluster.closed_form_end());
  if (faults_missed) s.notes.push_back(*faults_missed);
  if (s.training) {
    TrainingFigures t = training_figures(fig, *s.training);
    if (options.balanced_out != nullptr) {
      *options.balanced_out = t.ep;
    } else if (ep_routing_uneven(*s.training)) {
      // What balance would save: the same step with every expert equally
      // popular, simulated the same way, its outputs in balanced_routing/.
      RunOptions balanced = options;
      balanced.load.balanced_routing = true;
      balanced.trace = false;
      balanced.progress = false;
      balanced.out_dir = (dir / "balanced_routing").string();
      EpTimes times;
      balanced.balanced_out = &times;
      std::ostringstream quiet;
      run_command(config_path, balanced, quiet);
      t.ep_balanced = times;
    }
    Json summary = build_training_summary(fig, t);
    std::string report = build_training_report(fig, t);
    // Failures: the long-horizon study over the DES step time just measured.
    std::string failures_text;
    if (s.failures && s.failures->enabled) {
      try {
        failures_text = add_failures_results(*s.failures, t.step_s, summary, report);
      } catch (const sim::TimeOverflow& e) {
        throw ConfigError(config_path, 0, "simulation.duration",
                          "the failure simulation leaves the time range: " + std::string(e.what()));
      }
    }
    add_fault_verdict(s, faults_missed, summary);
    write_output_file(dir / "summary.json", summary.dump(2) + "\n");
    write_output_file(dir / "report.md", report);
    write_output_file(dir / "report.html", training_html(fig, t, summary));
    out << training_human_summary(fig, t, dir.string(), options.trace) << failures_text;
    return 0;
  }
  Json summary = build_summary(fig);
  std::string report = build_report(fig);
  const std::string collective_table = add_collective_results(s, fig, cluster, summary, report);
  add_fault_verdict(s, faults_missed, summary);
  write_output_file(dir / "summary.json", summary.dump(2) + "\n");
  write_output_file(dir / "report.md", report);
  write_output_file(dir / "report.html", run_html(fig, summary));
  out << human_summary(fig, dir.string(), options.trace) << collective_table;
  return 0;
}

RunDirectory::RunDirectory(const std::string& keep, const std::string& prefix) : keep_(!keep.empty()) {
  namespace fs = std::filesystem;
  if (keep_) {
    path_ = keep;
  } else {
    path_ = fs::temp_directory_path() / (prefix + std::to_string(static_cast<long long>(::getpid())));
    fs::create_directories(path_);
  }
}

RunDirectory::~RunDirectory() {
  std::error_code ec;
  if (!keep_) std::filesystem::remove_all(path_, ec);
}

}  // namespace gcsim::cli
