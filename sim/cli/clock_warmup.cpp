#include "sim/cli/clock_warmup.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>

#include "models/cluster/cluster_model.h"
#include "sim/config/config_error.h"
#include "sim/engine/replayer.h"
#include "sim/engine/simulator.h"
#include "sim/report/collective_report.h"
#include "sim/report/format.h"
#include "sim/scenario/network_setup.h"
#include "sim/scenario/training_workload_loader.h"

namespace gcsim::cli {

namespace g = models::gpu;

namespace {

class Ignore : public sim::OpObserver {
 public:
  void on_op_done(int, uint32_t, sim::Time, sim::Time) override {}
};

}  // namespace

// The workload once, as run_command simulates it (the same cluster,
// network, collectives and training executor), observed by nothing.
GovernorPass run_governor_pass(const Scenario& s, const ResourceLimits& limits) {
  GovernorPass p;
  sim::Simulator simulator(s.seed);
  models::cluster::ClusterModel cluster(simulator, cluster_model_config(s));
  const std::unique_ptr<NetworkStack> network = build_network_stack(simulator, s);
  cluster.attach_network(*network->model, network->fabric);
  configure_collectives(s, cluster);
  std::unique_ptr<sim::OpExecutor> training_executor;
  if (s.training) training_executor = make_training_executor(*s.training, cluster, *s.graph, simulator);
  Ignore nobody;
  sim::Replayer replayer(simulator, *s.graph,
                         training_executor ? *training_executor : static_cast<sim::OpExecutor&>(cluster),
                         nobody);
  try {
    const RunGuard guard(simulator, limits, s.estimate);
    replayer.start();
    simulator.run();
    guard.check();
  } catch (const sim::TimeOverflow&) {
    return p;  // the run itself reports it
  } catch (const sim::config::ConfigError&) {
    return p;  // a resource limit: likewise
  }
  const sim::ReplayOutcome outcome = replayer.outcome();
  if (!outcome.complete) return p;
  p.complete = true;
  p.period = outcome.makespan - sim::Time::zero();
  for (int r = 0; r < cluster.num_ranks(); ++r) {
    const g::ClockGovernor* gov = cluster.gpu(r).governor();
    if (gov == nullptr) throw std::logic_error("clock warm-up without the clock model");
    p.end.push_back(gov->state_at(outcome.makespan));
    const g::Activity used = gov->activity_seconds(outcome.makespan);
    p.worked.push_back(used.tensor + used.vector + used.hbm > 0.0);
    p.power.push_back(gov->params());
  }
  return p;
}

ClockWarmup settle_clock_start(Scenario& s, const ResourceLimits& limits) {
  ClusterConfig& c = s.cluster;
  if (!c.clock_settle || !c.clock_model) throw std::logic_error("clock warm-up without cluster.clock_start: steady");
  ClockWarmup w;
  const auto ranks = static_cast<size_t>(c.total_gpus());
  w.start.assign(ranks, c.clock_model_start);
  std::vector<g::PowerParams> power;
  std::vector<bool> worked;
  while (w.passes < kMaxPasses) {
    c.clock_rank_start = w.start;
    const GovernorPass p = run_governor_pass(s, limits);
    if (!p.complete) break;
    ++w.passes;
    power = p.power;
    worked = p.worked;
    double change = 0.0;
    for (size_t r = 0; r < ranks; ++r) {
      const g::GovernorState next = g::periodic_start(p.power[r], w.start[r], p.end[r], p.period);
      // A GPU that ran nothing (a mirrored run's unsimulated ranks) rests.
      if (p.worked[r]) {
        change = std::max(change, std::abs(g::state_clock(p.power[r], next) - g::state_clock(p.power[r], w.start[r])));
      }
      w.start[r] = p.worked[r] ? next : g::GovernorState{};
    }
    w.last_change = change;
    if (change < kSettledClock) {
      w.settled = true;
      break;
    }
  }
  c.clock_rank_start = w.start;
  if (w.passes == 0) {
    s.notes.push_back("clock_start: steady: the warm-up pass did not complete, so the GPUs start "
                      "from back-to-back GEMMs' steady state");
    return w;
  }
  double lo = 2.0, hi = 0.0;
  for (size_t r = 0; r < ranks; ++r) {
    if (!worked[r]) continue;
    const double f = g::state_clock(power[r], w.start[r]);
    lo = std::min(lo, f);
    hi = std::max(hi, f);
  }
  const double mhz = c.gpu.sm_clock_ghz * 1e3;
  std::string range = lo > hi ? std::string("no GPU ran anything")
                      : hi - lo < 0.5 / mhz ? fmt("at %.0f MHz", lo * mhz)
                                            : fmt("at %.0f", lo * mhz) + fmt("-%.0f MHz", hi * mhz);
  s.notes.push_back("each GPU starts from the periodic steady state of the workload repeated back to back "
                    "(cluster.clock_start: steady; " + std::to_string(w.passes) + " warm-up pass" +
                    (w.passes == 1 ? "" : "es") + ", " + range +
                    (w.settled ? "" : fmt("; not settled: the last pass moved a start clock by %.2f MHz",
                                          w.last_change * mhz)) +
                    ")");
  return w;
}

}  // namespace gcsim::cli
