#include "sim/cli/plan_command.h"

#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <ostream>
#include <set>
#include <sstream>

#include "sim/cli/explain_command.h"
#include "sim/report/format.h"
#include "sim/cli/mpi_world.h"
#include "sim/report/plan_report.h"
#include "sim/cli/point_runner.h"
#include "sim/scenario/scenario.h"
#include "sim/cli/serving_plan.h"
#include "sim/report/study_html.h"
#include "sim/scenario/training_workload_loader.h"
#include "sim/config/config_error.h"
#include "workloads/plan/search_space.h"

namespace gcsim::cli {

namespace fs = std::filesystem;
namespace po = boost::program_options;
namespace wp = workloads::plan;
namespace wt = workloads::training;
using sim::config::ConfigError;
using Clock = std::chrono::steady_clock;

namespace {

struct PlanArgs {
  std::string config;
  std::string out_dir;
  std::vector<std::string> sets;
  int gpus = 0;  // 0: the config's cluster
  int jobs = 1;
  int top = 8;
  bool quiet = false;
};

PlanArgs parse_args(const std::vector<std::string>& args) {
  PlanArgs a;
  po::options_description opts("plan options");
  opts.add_options()("out,o", po::value<std::string>(&a.out_dir), "output directory")(
      "gpus", po::value<int>(&a.gpus), "plan for this many GPUs (a multiple of gpus_per_node)")(
      "jobs,j", po::value<int>(&a.jobs), "threads and simulations at once (per rank under mpirun)")(
      "top", po::value<int>(&a.top), "candidates simulated after the estimate (default 8)")(
      "set,s", po::value<std::vector<std::string>>(), "override a config key: -s a.b.c=value")(
      "quiet,q", po::bool_switch(&a.quiet), "no progress lines")(
      "args", po::value<std::vector<std::string>>(), "config file");
  po::positional_options_description pos;
  pos.add("args", -1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).positional(pos).run(), vm);
  po::notify(vm);
  if (!vm.count("args") || vm["args"].as<std::vector<std::string>>().size() != 1) {
    throw po::error("gcsim plan: expected one CONFIG.yaml");
  }
  a.config = vm["args"].as<std::vector<std::string>>()[0];
  if (vm.count("set")) a.sets = vm["set"].as<std::vector<std::string>>();
  if (a.jobs < 1) throw po::error("-j must be at least 1");
  if (a.top < 1) throw po::error("--top must be at least 1");
  if (vm.count("gpus") && a.gpus < 1) throw po::error("--gpus must be at least 1");
  if (a.out_dir.empty()) a.out_dir = (fs::path("out") / (fs::path(a.config).stem().string() + "-plan")).string();
  return a;
}

// The config with the strategy left to the search; --gpus resizes the
// cluster by its node count (and joins the overrides every point runs with).
Scenario load_base(PlanArgs& a) {
  LoadOptions load;
  load.overrides = a.sets;
  load.strategy_searched = true;
  Scenario s = load_scenario(a.config, load);
  if (a.gpus > 0 && a.gpus != s.cluster.total_gpus()) {
    const int per_node = s.cluster.gpus_per_node;
    if (a.gpus % per_node != 0) {
      throw ConfigError("command line", 0, "--gpus",
                        std::to_string(a.gpus) + " GPUs is not a whole number of nodes of " +
                            std::to_string(per_node) + " (cluster.gpus_per_node)");
    }
    a.sets.push_back("cluster.nodes=" + std::to_string(a.gpus / per_node));
    load.overrides = a.sets;
    s = load_scenario(a.config, load);
  }
  if (s.workload_kind != "training" && s.workload_kind != "inference") {
    fail_config_key(a.config, a.sets, "workload", "kind",
                    "gcsim plan searches training layouts and serving deployments; this config's workload is '" +
                        s.workload_kind + "'");
  }
  return s;
}

// Every rank's scores, merged: rank r scored the candidates it owns.
void merge_scores(const MpiWorld& world, std::vector<wp::StrategyScore>& scores) {
  if (world.size() == 1) return;
  sim::config::Json mine = sim::config::Json::array();
  for (size_t i = 0; i < scores.size(); ++i) {
    if (!world.owns(i)) continue;
    const auto& e = scores[i];
    sim::config::Json ex = sim::config::Json::array();
    for (double x : e.exposed_s) ex.push_back(x);
    mine.push_back({i, static_cast<int>(e.verdict), e.rule, e.reason, e.memory_bytes,
                    e.fullest_pipeline_rank, e.step_s, e.compute_s, e.bubble_s, e.optimizer_s, ex,
                    e.tokens_per_s, e.mfu});
  }
  for (const std::string& part : world.all_gather(mine.dump())) {
    for (const auto& x : sim::config::Json::parse(part)) {
      wp::StrategyScore& e = scores.at(x[0].get<size_t>());
      e.verdict = static_cast<wp::StrategyScore::Verdict>(x[1].get<int>());
      e.rule = x[2].get<std::string>();
      e.reason = x[3].get<std::string>();
      e.memory_bytes = x[4].get<double>();
      e.fullest_pipeline_rank = x[5].get<int>();
      e.step_s = x[6].get<double>();
      e.compute_s = x[7].get<double>();
      e.bubble_s = x[8].get<double>();
      e.optimizer_s = x[9].get<double>();
      for (size_t k = 0; k < e.exposed_s.size(); ++k) e.exposed_s[k] = x[10][k].get<double>();
      e.tokens_per_s = x[11].get<double>();
      e.mfu = x[12].get<double>();
    }
  }
}

// Well-known layouts the plan is compared with, beside the leader by
// estimate: the config's own, fully sharded data parallelism, and the
// leader with TP across two nodes, without interleaving, and with the
// other recompute extreme.
std::vector<std::pair<std::string, wp::Strategy>> known_layouts(const wt::TrainingConfig& base,
                                                                 const wp::Strategy& leader,
                                                                 int gpus, int gpus_per_node) {
  std::vector<std::pair<std::string, wp::Strategy>> k;
  k.emplace_back("the config's own layout", wp::strategy_of(base));
  wp::Strategy fsdp;
  fsdp.dp = gpus;
  fsdp.zero_stage = 3;
  fsdp.recompute = wt::Recompute::full;
  k.emplace_back("FSDP (ZeRO-3, no TP or PP, full recompute)", fsdp);
  const auto dp_for = [gpus](const wp::Strategy& s) {
    const int mp = s.tp * s.cp * s.pp;
    return gpus % mp == 0 ? gpus / mp : 0;  // 0: check_strategy names the mismatch
  };
  if (leader.tp != 2 * gpus_per_node) {
    // The leader's pipeline kept when TP of two nodes leaves room for it.
    wp::Strategy t = leader;
    t.tp = 2 * gpus_per_node;
    t.cp = 1;
    if (gpus % (t.tp * t.pp) != 0) {
      t.pp = 1;
      t.schedule = wt::Schedule::one_f_one_b;
      t.virtual_stages = 1;
    }
    t.dp = dp_for(t);
    if (t.ep > 1 && t.dp % t.ep != 0) t.ep = 1;
    k.emplace_back("TP across two nodes", t);
  }
  if (leader.pp > 1 && leader.schedule != wt::Schedule::one_f_one_b) {
    wp::Strategy t = leader;
    t.schedule = wt::Schedule::one_f_one_b;
    t.virtual_stages = 1;
    k.emplace_back("the leader with plain 1F1B", t);
  }
  wp::Strategy r = leader;
  r.recompute = leader.recompute == wt::Recompute::none ? wt::Recompute::full : wt::Recompute::none;
  k.emplace_back(std::string("the leader with recompute ") + wt::recompute_name(r.recompute), r);
  return k;
}

}  // namespace

void fail_config_key(const std::string& path, const std::vector<std::string>& sets, const std::string& section,
                     const std::string& key, const std::string& message) {
  // Read again to name the line of the key.
  auto source = std::make_shared<sim::config::ConfigSource>();
  sim::config::ConfigReader r(sim::config::load_yaml_file(path, sets, *source), "", source, nullptr);
  std::stringstream parts(section);
  for (std::string part; std::getline(parts, part, '.');) r = r.child(part, "");
  r.fail(key, message);
}

namespace {

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

int plan_command(const std::vector<std::string>& args, std::ostream& out) {
  const auto wall_start = Clock::now();
  PlanArgs a = parse_args(args);
  const MpiWorld world;
  const Scenario s = load_base(a);
  const fs::path dir(a.out_dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw ConfigError("command line", 0, "-o", "cannot create '" + a.out_dir + "': " + ec.message());
  if (s.inference) {
    return serving_plan(s, ServingPlanArgs{a.config, a.out_dir, a.sets, a.jobs, a.top, a.quiet}, world, out);
  }
  const auto progress = [&](const std::string& line) {
    if (a.quiet) return;
    const std::string who = world.size() > 1 ? " rank " + std::to_string(world.rank()) + ":" : "";
    std::fprintf(stderr, "[plan]%s %s\n", who.c_str(), line.c_str());
  };

  const wt::TrainingConfig& base = s.training->config;
  PlanResult r;
  r.config_path = a.config;
  r.model = base.model.name;
  r.gpu = s.cluster.gpu.name;
  r.network_model = s.network.model;
  r.gpus = s.cluster.total_gpus();
  r.gpus_per_node = s.cluster.gpus_per_node;
  r.global_batch = base.batch.global;
  r.capacity_bytes = s.cluster.gpu.hbm_capacity.as_double();
  r.top_k = a.top;
  r.jobs = a.jobs;
  r.ranks = world.size();
  const wp::PlanCluster cluster{&s.cluster.gpu, link_rates(s.cluster), r.gpus};

  // 1. Every candidate: constraints, memory, estimate.
  const auto scoring_start = Clock::now();
  r.candidates = wp::enumerate_strategies(wp::default_search_space(base, r.gpus, r.gpus_per_node), base, r.gpus);
  progress(std::to_string(r.candidates.size()) + " candidates; scoring on " + std::to_string(a.jobs) +
           " thread(s)");
  r.scores = wp::score_strategies(base, r.candidates, cluster, a.jobs,
                                  [&world](size_t i) { return world.owns(i); });
  merge_scores(world, r.scores);
  std::vector<size_t> scored;
  for (size_t i = 0; i < r.scores.size(); ++i) {
    const auto& e = r.scores[i];
    if (e.verdict == wp::StrategyScore::Verdict::scored) {
      scored.push_back(i);
      continue;
    }
    ++r.pruned[e.rule];
    r.pruned_example.emplace(e.rule, e.reason);
  }
  r.scored = scored.size();
  std::stable_sort(scored.begin(), scored.end(),
                   [&r](size_t x, size_t y) { return r.scores[x].step_s < r.scores[y].step_s; });
  r.scoring_wall_s = since(scoring_start);
  progress(fmt("scored in %.2f s: ", r.scoring_wall_s) + std::to_string(r.candidates.size() - r.scored) +
           " pruned, " + std::to_string(r.scored) + " left");

  // 2. The top K by estimate and the well-known layouts, simulated. A
  // candidate the estimate cannot tell from one already taken (the same
  // step and memory, as recompute selective and none are under flash
  // attention) is left out: the simulation would repeat it.
  std::set<std::pair<double, double>> taken;
  for (size_t k = 0; k < scored.size() && r.layouts.size() < static_cast<size_t>(a.top); ++k) {
    const wp::StrategyScore& e = r.scores[scored[k]];
    if (!taken.insert({e.step_s, e.memory_bytes}).second) continue;
    r.layouts.push_back({"", r.candidates[scored[k]], e, {}});
  }
  if (!scored.empty()) {
    for (auto& [name, strategy] : known_layouts(base, r.candidates[scored.front()], r.gpus, r.gpus_per_node)) {
      auto same = std::find_if(r.layouts.begin(), r.layouts.end(),
                               [&](const SimulatedLayout& l) { return l.strategy == strategy; });
      if (same != r.layouts.end()) {
        same->known_as += (same->known_as.empty() ? "" : "; ") + name;
      } else {
        r.layouts.push_back({name, strategy, wp::score_strategy(wp::apply(base, strategy), cluster), {}});
      }
    }
  }
  std::vector<RunPoint> points;
  std::vector<size_t> point_layout;
  for (size_t i = 0; i < r.layouts.size(); ++i) {
    if (r.layouts[i].estimate.verdict != wp::StrategyScore::Verdict::scored) continue;
    RunPoint p;
    p.overrides = a.sets;
    for (auto& o : strategy_overrides(r.layouts[i].strategy)) p.overrides.push_back(std::move(o));
    char name[32];
    std::snprintf(name, sizeof name, "%04zu", points.size());
    p.dir = dir / "points" / name;
    points.push_back(std::move(p));
    point_layout.push_back(i);
  }
  const auto sim_start = Clock::now();
  progress("simulating " + std::to_string(points.size()) + " layouts on the " + r.network_model +
           " network model");
  run_points(a.config, points, a.jobs, world, {[&](const RunPoint& p, size_t done, size_t mine) {
    const SimulatedLayout& l = r.layouts[point_layout[static_cast<size_t>(&p - points.data())]];
    progress(std::to_string(done) + "/" + std::to_string(mine) + " " + wp::label(l.strategy) + ": " +
             (p.status == "ok" ? fmt("%.4g s", summary_step_time(p.summary)) : p.status + ": " + p.reason));
  }, {}});
  for (size_t k = 0; k < points.size(); ++k) r.layouts[point_layout[k]].run = std::move(points[k]);
  r.simulation_wall_s = since(sim_start);
  const std::vector<int> ranked = ranked_layouts(r);
  r.best = ranked.empty() ? -1 : ranked.front();
  if (!world.root()) return 0;  // rank 0 writes the merged result

  if (r.best >= 0) {
    // best.yaml: the winner's fully resolved config, which `gcsim run` reads back.
    const SimulatedLayout& b = r.layouts[static_cast<size_t>(r.best)];
    LoadOptions load;
    load.overrides = b.run.overrides;
    load.strategy_searched = true;
    const Scenario best = load_scenario(a.config, load);
    std::ofstream f(dir / "best.yaml");
    f << "# gcsim plan's best layout for " << a.config << ": " << wp::label(b.strategy) << "\n"
      << "# simulated step " << fmt("%.6g s", summary_step_time(b.run.summary)) << " (" << b.run.dir.string()
      << "); `gcsim run` on this file reproduces it.\n"
      << sim::config::to_documented_yaml(best.resolved, *best.source);
  }
  r.wall_time_s = since(wall_start);
  const std::string md = plan_markdown(r);
  {
    std::ofstream f(dir / "plan.json");
    f << plan_json(r).dump(2) << "\n";
  }
  write_plan_csv(r, (dir / "plan.csv").string());
  {
    std::ofstream f(dir / "plan.md");
    f << md;
  }
  {
    std::ofstream f(dir / "report.html");
    f << plan_html(r);
  }
  out << "gcsim plan: wrote " << (dir / "plan.json").string() << ", plan.csv, plan.md, report.html"
      << (r.best >= 0 ? ", best.yaml" : "") << "\n\n"
      << md;
  return 0;
}

}  // namespace gcsim::cli
