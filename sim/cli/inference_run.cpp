#include "sim/cli/inference_run.h"

#include <cstdio>
#include <fstream>
#include <memory>

#include "sim/report/fault_verdict.h"
#include "sim/report/inference_report.h"
#include "sim/report/run_html.h"
#include "sim/scenario/inference_workload_loader.h"
#include "sim/scenario/network_setup.h"
#include "sim/engine/simulator.h"
#include "workloads/inference/comm_timer.h"
#include "workloads/inference/serving_metrics.h"
#include "workloads/inference/serving_system.h"

namespace gcsim::cli {

namespace fs = std::filesystem;
namespace inf = workloads::inference;
using sim::config::ConfigError;

namespace {

struct OneRun {
  inf::ServingOutcome outcome;
  inf::ServingMetrics metrics;
  std::optional<models::network::NetworkStats> network;
  uint64_t events = 0;
  int64_t probes = 0;
};

// The stack step collectives are timed on: the same fabric and network
// model, without the configured faults (they belong to the run's clock).
std::unique_ptr<NetworkStack> probe_network(sim::Simulator& sim, const Scenario& s) {
  Scenario probe;
  probe.cluster = s.cluster;
  probe.network = s.network;
  probe.topology = s.topology;
  return build_network_stack(sim, probe);
}

OneRun run_once(const Scenario& s, const InferenceSetup& setup, const inf::ServingConfig& config,
                const models::cluster::ClusterModelConfig& cc, bool record, bool progress,
                const ResourceLimits& limits) {
  sim::Simulator simulator(s.seed);
  const RunGuard guard(simulator, limits, s.estimate);
  models::cluster::ClusterModel cluster(simulator, cc);
  const std::unique_ptr<NetworkStack> network = build_network_stack(simulator, s);
  cluster.attach_network(*network->model, network->fabric);

  sim::Simulator scratch(s.seed);
  models::cluster::ClusterModel scratch_cluster(scratch, cc);
  const std::unique_ptr<NetworkStack> scratch_network = probe_network(scratch, s);
  scratch_cluster.attach_network(*scratch_network->model, scratch_network->fabric);
  models::cluster::CollectiveChoice choice;
  choice.on_network = true;  // NCCL's algorithms on the fabric
  scratch_cluster.set_collective_choice(choice);
  inf::ExecutorCommTimer timer(scratch, scratch_cluster, s.cluster.gpus_per_node);

  if (progress) {
    simulator.set_progress([](sim::Time now, uint64_t events) {
      std::fprintf(stderr, "[gcsim] simulated %.3f s of serving, %llu events\n", now.seconds(),
                   static_cast<unsigned long long>(events));
    });
  }
  inf::ServingEnvironment env;
  env.sim = &simulator;
  env.gpu = s.cluster.gpu;
  env.comm = &timer;
  env.transport = &cluster;
  env.record_steps = record;
  if (s.cluster.clock_model) {
    env.clocks.model = true;
    env.clocks.power = s.cluster.gpu.power;
    env.clocks.f_max_mhz = s.cluster.gpu.sm_clock_ghz * 1e3;
    const std::string start = s.cluster.clock_start;
    env.clocks.steady = start == "steady";
    if (env.clocks.steady) env.clocks.start = s.cluster.clock_model_start;
  }
  inf::ReplicaMemory mem{setup.memory.num_blocks, setup.memory.block_bytes};
  inf::ReplicaMemory pmem{setup.prefill_memory.num_blocks, setup.prefill_memory.block_bytes};
  inf::ServingSystem system(config, mem, pmem, env, s.seed);
  OneRun r;
  try {
    r.outcome = system.run();
  } catch (const sim::TimeOverflow& e) {
    throw ConfigError(s.config_path, 0, "workload.requests",
                      "the run goes past the simulator's time range: " + std::string(e.what()));
  } catch (const std::runtime_error&) {
    guard.check();  // a run stopped at a limit leaves requests unfinished: say which limit
    throw;
  }
  r.metrics = inf::compute_metrics(r.outcome.requests, r.outcome.itl_s, config.slo);
  if (config.disaggregation.enabled) {
    r.network = network->model->stats(r.outcome.end - sim::Time::zero());
  }
  r.events = simulator.events_executed();
  r.probes = timer.runs();
  return r;
}

}  // namespace

int run_inference(const Scenario& s, const models::cluster::ClusterModelConfig& cc,
                  const RunOptions& options, const fs::path& dir, std::ostream& out,
                  std::chrono::steady_clock::time_point wall_start) {
  const InferenceSetup& setup = *s.inference;
  inf::ServingConfig config = setup.serving;
  InferenceFigures fig;
  fig.scenario = &s;
  fig.setup = &setup;
  const bool rated = config.requests.arrival == inf::ArrivalKind::poisson ||
                     config.requests.arrival == inf::ArrivalKind::gamma;
  fig.rate = rated ? config.requests.rate : 0.0;

  if (config.rate_search.enabled) {
    // Highest rate meeting the target: double from `low` (or 1 req/s) until
    // a rate fails, then bisect between the last pass and the first fail.
    const inf::RateSearch& rs = config.rate_search;
    auto attainment = [&](double rate) {
      inf::ServingConfig c = config;
      c.requests.rate = rate;
      const OneRun r = run_once(s, setup, c, cc, false, false, options.load.limits);
      RatePoint p;
      p.rate = rate;
      p.slo_attainment = *r.metrics.slo_attainment;
      p.goodput = *r.metrics.goodput_requests_per_s;
      p.meets = p.slo_attainment >= rs.target;
      fig.search.push_back(p);
      return p.meets;
    };
    double pass = 0, fail = rs.high;
    double probe = rs.low > 0 ? rs.low : 1.0;
    if (fail <= 0) {
      for (int i = 0; i < 30; ++i) {
        if (!attainment(probe)) {
          fail = probe;
          break;
        }
        pass = probe;
        probe *= 2;
      }
      if (fail <= 0) fail = probe;
    }
    for (int i = 0; i < rs.iterations; ++i) {
      const double mid = pass > 0 ? 0.5 * (pass + fail) : 0.5 * fail;
      if (attainment(mid)) pass = mid;
      else fail = mid;
    }
    if (pass <= 0) {
      throw ConfigError(s.config_path, 0, "workload.slo",
                        "no rate down to " + std::to_string(fail) +
                            " req/s meets the SLO attainment target: the SLOs are tighter than "
                            "one request alone achieves");
    }
    config.requests.rate = pass;
    fig.rate = pass;
  }

  OneRun r = run_once(s, setup, config, cc, true, options.progress, options.load.limits);
  fig.outcome = std::move(r.outcome);
  fig.metrics = r.metrics;
  fig.network = r.network;
  fig.events = r.events;
  fig.comm_probes = r.probes;
  fig.wall_time_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  if (options.trace) write_inference_trace(fig, (dir / "trace.json").string());
  sim::config::Json summary = build_inference_summary(fig);
  add_fault_verdict(s, inference_faults_not_honoured(s), summary);
  write_output_file(dir / "summary.json", summary.dump(2) + "\n");
  write_output_file(dir / "report.md", build_inference_report(fig));
  write_output_file(dir / "report.html", inference_html(fig, summary));
  out << inference_human_summary(fig, dir.string(), options.trace);
  return 0;
}

}  // namespace gcsim::cli
