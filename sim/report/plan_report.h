// What `gcsim plan` writes: plan.json (the best layout with every chosen
// value and its simulated figures, how many candidates were evaluated and
// pruned by which rule, the wall time), plan.csv (every candidate with its
// verdict, memory and estimated step, and the simulated step where it ran),
// and plan.md, the ranked table of the simulated layouts with why the
// winner wins (its breakdown beside the runners-up) and why well-known
// layouts lose (out of memory, bubble, exposed TP across nodes).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sim/cli/point_runner.h"
#include "sim/config/config_reader.h"
#include "workloads/plan/strategy.h"
#include "workloads/plan/strategy_score.h"

namespace gcsim::cli {

// One layout simulated by the plan: a top candidate of the estimate, or a
// well-known layout it is compared with (named), or both.
struct SimulatedLayout {
  std::string known_as;  // "" for a search candidate; else the well-known layout's name
  workloads::plan::Strategy strategy;
  workloads::plan::StrategyScore estimate;
  RunPoint run;  // status "pending" when it was not simulated (pruned, out of memory)
  bool simulated() const { return run.status == "ok"; }
};

struct PlanResult {
  std::string config_path;
  std::string model, gpu, network_model;
  int gpus = 0, gpus_per_node = 0;
  int64_t global_batch = 0;
  double capacity_bytes = 0;
  std::vector<workloads::plan::Strategy> candidates;
  std::vector<workloads::plan::StrategyScore> scores;  // index for index
  std::map<std::string, size_t> pruned;        // rule -> candidates it pruned ("memory" included)
  std::map<std::string, std::string> pruned_example;  // rule -> one message
  size_t scored = 0;
  std::vector<SimulatedLayout> layouts;  // the estimate's top K, then the well-known ones
  int best = -1;                         // index into layouts; -1 when none fits
  double scoring_wall_s = 0, simulation_wall_s = 0, wall_time_s = 0;
  int top_k = 0, jobs = 1, ranks = 1;
};

// Layouts that ran and fit, fastest simulated step first (ties: listing order).
std::vector<int> ranked_layouts(const PlanResult& r);

// How much slower than the winner `l` is and the two parts of its step
// that account for most of it ("12.1%: +2.07 s ZeRO-2 reduces ...");
// "(best)" for the winner. Needs a winner (r.best >= 0).
std::string slower_than_best(const PlanResult& r, const SimulatedLayout& l);
// Why a well-known layout loses: slower (and why), out of memory, or
// impossible; or that it is the winner.
std::string known_layout_verdict(const PlanResult& r, const SimulatedLayout& l);

sim::config::Json plan_json(const PlanResult& r);
void write_plan_csv(const PlanResult& r, const std::string& path);
std::string plan_markdown(const PlanResult& r);

// The `-s` overrides that set a strategy on a config.
std::vector<std::string> strategy_overrides(const workloads::plan::Strategy& s);

}  // namespace gcsim::cli
