#include "sim/report/ep_report.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "sim/report/format.h"
#include "sim/report/training_report.h"

namespace gcsim::cli {

using sim::config::Json;
using workloads::training::OpCategory;

namespace {

// How uneven the routing is over the MoE layers.
struct Spread {
  double rank_imbalance_mean = 1, rank_imbalance_max = 1;  // most rows of a rank / mean
  double expert_imbalance_max = 1;  // most rows of an expert / mean (Wang et al.'s MaxVio + 1)
  int hot_rank = 0;                 // EP index hot in the most layers (lowest on ties)
  int hot_layers = 0;               // in how many
  int layers = 0;                   // MoE layers, x micro-batches when sampled
  int64_t dropped = 0;              // copies over capacity, over the draws
  int legs = 1;                     // 2: node-limited routing's IB then NVLink legs
};

Spread spread_of(const TrainingRun& run) {
  Spread s;
  const auto& ep = *run.workload.ep_routing;
  const auto& m = run.config.model;
  std::map<int, int> hot_count;
  double sum = 0;
  // Sampled, every (layer, micro-batch) draw counts: the mean and the
  // worst over them, the hot rank the one hot in the most draws.
  for (int l = m.moe.dense_layers; l < m.layers; ++l) {
    for (int mb = 0; mb < ep.draws_per_layer(); ++mb) {
      const auto& d = ep.draw(l, mb);
      sum += d.rank_imbalance;
      s.rank_imbalance_max = std::max(s.rank_imbalance_max, d.rank_imbalance);
      s.expert_imbalance_max = std::max(s.expert_imbalance_max, d.expert_imbalance);
      s.dropped += d.dropped;
      ++hot_count[d.hot];
      ++s.layers;
    }
  }
  s.rank_imbalance_mean = s.layers > 0 ? sum / s.layers : 1.0;
  for (const auto& [rank, n] : hot_count) {
    if (n > s.hot_layers) {
      s.hot_rank = rank;
      s.hot_layers = n;
    }
  }
  s.legs = static_cast<int>(ep.leg_names(workloads::training::EpExchange::dispatch).size());
  return s;
}

// The global rank of EP index `k` in the first EP group.
int global_rank(const TrainingRun& run, int k) {
  const workloads::training::RankGrid grid(run.config.parallel);
  return grid.group(workloads::training::Group::ep, 0)[static_cast<size_t>(k)];
}

// A saving that may be negative (balance can expose more EP time).
std::string signed_time(double seconds) {
  return seconds < 0 ? "-" + human_time(-seconds) : human_time(seconds);
}

Json times_json(const EpTimes& t) {
  return {{"step_time_s", t.step_s},
          {"all_to_all_s", t.all_to_all_s},
          {"wait_for_peers_s", t.wait_s},
          {"exposed_s", t.exposed_s}};
}

}  // namespace

bool has_ep(const TrainingRun& run) {
  return run.workload.ep_routing != nullptr && run.config.parallel.ep > 1;
}

bool ep_routing_uneven(const TrainingRun& run) {
  return has_ep(run) && run.workload.max_expert_load > 1.0;
}

EpTimes ep_times(const RunFigures& f, const TrainingFigures& t) {
  EpTimes x;
  x.step_s = t.step_s;
  x.exposed_s = t.breakdown.mean.of(OpCategory::ep);
  const TrainingRun& run = *f.scenario->training;
  const auto& g = *f.scenario->graph;
  const auto& observed = t.breakdown.ranks;
  for (const auto& r : f.records) {
    if (!std::binary_search(observed.begin(), observed.end(), r.rank)) continue;
    const auto& cats = run.workload.categories.at(g.program_id(r.rank));
    if (cats.at(r.op) != OpCategory::ep) continue;
    x.all_to_all_s += (r.end - r.met).seconds();
    x.wait_s += (r.met - r.start).seconds();
  }
  const double n = std::max<double>(1.0, static_cast<double>(observed.size()));
  x.all_to_all_s /= n;
  x.wait_s /= n;
  return x;
}

Json ep_summary(const TrainingRun& run, const EpTimes& times, const std::optional<EpTimes>& balanced) {
  const auto& ep = *run.workload.ep_routing;
  const auto& rc = ep.config();
  const auto& moe = run.config.model.moe;
  const Spread s = spread_of(run);
  Json j = Json::object();
  j["ranks"] = rc.ranks;
  j["routing"] = {{"experts", rc.experts},
                  {"top_k", rc.top_k},
                  {"tokens_per_rank", rc.tokens},
                  {"skew", moe.skew},
                  {"balance", moe.balance},
                  {"placement", moe.permuted_placement ? "permuted" : "index"},
                  {"max_route_nodes", moe.max_route_nodes},
                  {"dispatch_legs", s.legs},
                  {"rank_imbalance_mean", s.rank_imbalance_mean},
                  {"rank_imbalance_max", s.rank_imbalance_max},
                  {"expert_imbalance_max", s.expert_imbalance_max}};
  // Keys only where set, so a run without them writes what it did before.
  if (moe.sample) {
    j["routing"]["sample"] = true;
    j["routing"]["draws_per_layer"] = ep.draws_per_layer();
  }
  if (moe.capacity_factor > 0) {
    j["routing"]["capacity_factor"] = moe.capacity_factor;
    // Per EP group and step: every source's dropped copies over the draws
    // (x micro-batches / draws_per_layer when expected counts repeat).
    j["routing"]["dropped_copies"] =
        s.dropped * (run.config.micro_batches() / ep.draws_per_layer());
  }
  j["hot_rank"] = {{"ep_index", s.hot_rank},
                   {"rank", global_rank(run, s.hot_rank)},
                   {"hot_in_layers", s.hot_layers},
                   {"of_layers", s.layers},
                   {"load", run.workload.expert_load[static_cast<size_t>(s.hot_rank)]}};
  j["simulated_as"] = run.workload.mirrored_axis[static_cast<size_t>(workloads::training::Axis::ep)]
                          ? "slowest-rank envelope (one EP rank per stage, each layer's hot rank)"
                          : "every EP rank";
  j["all_to_all_s"] = times.all_to_all_s;
  j["wait_for_peers_s"] = times.wait_s;
  j["exposed_s"] = times.exposed_s;
  if (balanced) {
    j["balanced"] = times_json(*balanced);
    j["balance_saves"] = {{"step_s", times.step_s - balanced->step_s},
                          {"step_fraction", times.step_s > 0 ? (times.step_s - balanced->step_s) / times.step_s : 0.0},
                          {"all_to_all_s", times.all_to_all_s - balanced->all_to_all_s},
                          {"exposed_s", times.exposed_s - balanced->exposed_s}};
  }
  return j;
}

std::string ep_report_section(const TrainingRun& run, const EpTimes& times,
                              const std::optional<EpTimes>& balanced) {
  const auto& rc = run.workload.ep_routing->config();
  const auto& moe = run.config.model.moe;
  const Spread s = spread_of(run);
  std::ostringstream o;
  o << "\n## Expert parallelism\n\n";
  o << "EP over " << rc.ranks << " ranks, " << rc.experts << " experts top-" << rc.top_k << ", "
    << rc.tokens << " tokens per rank and micro-batch. Routing spread: skew " << fmt("%g", moe.skew)
    << " (Zipf), balance " << fmt("%g", moe.balance)
    << " (auxiliary-loss-free: the fraction of the skew removed), placement "
    << (moe.permuted_placement ? "permuted per layer" : "by index");
  if (moe.sample) o << ", counts drawn per (MoE layer, micro-batch) under the seed";
  if (moe.capacity_factor > 0) o << ", capacity factor " << fmt("%g", moe.capacity_factor);
  if (moe.max_route_nodes > 0) {
    o << ", node-limited to " << moe.max_route_nodes << " nodes per token ("
      << (s.legs == 2 ? "dispatch = IB leg then NVLink leg" : "the EP group is within one node") << ")";
  }
  o << ".\n\n| | |\n|---|---|\n";
  o << "| rank imbalance (most rows / mean) | " << fmt("%.3f", s.rank_imbalance_mean) << " mean, "
    << fmt("%.3f", s.rank_imbalance_max) << (moe.sample ? " worst draw |\n" : " worst layer |\n");
  o << "| expert imbalance (most rows / mean) | " << fmt("%.3f", s.expert_imbalance_max) << (moe.sample ? " worst draw |\n" : " worst layer |\n");
  o << "| hot rank | EP rank " << s.hot_rank << " (GPU " << global_rank(run, s.hot_rank) << " in the first EP group), hot in "
    << s.hot_layers << " of " << s.layers
    << (moe.sample ? " (MoE layer, micro-batch) draws |\n" : " MoE layers |\n");
  o << "| EP all-to-all | " << human_time(times.all_to_all_s) << " per step (+ "
    << human_time(times.wait_s) << " waiting for peers), " << human_time(times.exposed_s) << " exposed |\n";
  if (balanced) {
    o << "| balanced routing (rerun, balanced_routing/) | step " << human_time(balanced->step_s)
      << ", EP all-to-all " << human_time(balanced->all_to_all_s) << ", exposed "
      << human_time(balanced->exposed_s) << " |\n";
    o << "| **balance would save** | **" << signed_time(times.step_s - balanced->step_s) << "** of the step ("
      << fmt("%.1f%%", times.step_s > 0 ? 100 * (times.step_s - balanced->step_s) / times.step_s : 0.0)
      << "), all-to-all " << signed_time(times.all_to_all_s - balanced->all_to_all_s) << ", exposed EP "
      << signed_time(times.exposed_s - balanced->exposed_s) << " |\n";
  }
  o << "\n" << (run.workload.mirrored_axis[static_cast<size_t>(workloads::training::Axis::ep)]
                    ? "One EP rank per pipeline stage was simulated: it runs each MoE layer's hot rank's "
                      "experts, and its all-to-alls carry the whole group's splits (exact when one rank "
                      "is hot in every layer, an upper bound when the hot rank moves between layers "
                      "that DualPipe overlaps).\n"
                    : "Every EP rank was simulated with its own experts' rows.\n");
  return o.str();
}

std::string ep_human_lines(const TrainingRun& run, const EpTimes& times,
                           const std::optional<EpTimes>& balanced) {
  if (!has_ep(run)) return "";
  const Spread s = spread_of(run);
  const auto& moe = run.config.model.moe;
  std::ostringstream o;
  o << "  EP: all-to-all " << human_time(times.all_to_all_s) << " per step, " << human_time(times.exposed_s)
    << " exposed; routing skew " << fmt("%g", moe.skew) << ", balance " << fmt("%g", moe.balance)
    << (moe.max_route_nodes > 0 ? ", <= " + std::to_string(moe.max_route_nodes) + " nodes per token" : "")
    << "; hot EP rank " << s.hot_rank << " (GPU " << global_rank(run, s.hot_rank) << "), "
    << fmt("%.3fx", s.rank_imbalance_max) << " the mean rows\n";
  if (balanced) {
    o << "  EP balanced routing (balanced_routing/): step " << human_time(balanced->step_s)
      << ", all-to-all " << human_time(balanced->all_to_all_s) << "; balance would save "
      << signed_time(times.step_s - balanced->step_s) << " ("
      << fmt("%.1f%%", times.step_s > 0 ? 100 * (times.step_s - balanced->step_s) / times.step_s : 0.0)
      << " of the step)\n";
  }
  return o.str();
}

}  // namespace gcsim::cli
