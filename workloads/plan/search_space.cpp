#include "workloads/plan/search_space.h"

#include <algorithm>

namespace gcsim::workloads::plan {

namespace wt = workloads::training;

namespace {

std::vector<int> divisors(int n) {
  std::vector<int> d;
  for (int i = 1; i <= n; ++i) {
    if (n % i == 0) d.push_back(i);
  }
  return d;
}

// Virtual stages worth trying for `pp` stages: each must leave whole layers
// per chunk when layers are split evenly; with fewer_at_ends any v up to 4.
std::vector<int> virtual_stage_options(const wt::TrainingConfig& base, int pp, int max_v) {
  std::vector<int> v;
  const int layers = base.model.layers;
  if (base.parallel.layer_split == wt::LayerSplit::even) {
    if (layers % pp != 0) return {2};  // pruned by check_strategy with its reason
    for (int d : divisors(layers / pp)) {
      if (d >= 2 && d <= max_v) v.push_back(d);
    }
    if (v.empty()) v.push_back(2);  // one layer per stage: pruned, counted
  } else {
    for (int d = 2; d <= std::min(4, max_v); ++d) v.push_back(d);
  }
  return v;
}

}  // namespace

SearchSpace default_search_space(const wt::TrainingConfig& base, int gpus, int gpus_per_node) {
  SearchSpace s;
  for (int t = 1; t <= std::min(gpus, 2 * std::max(1, gpus_per_node)); t *= 2) s.tp.push_back(t);
  for (int c = 1; c <= std::min(gpus, 8); c *= 2) s.cp.push_back(c);
  s.micro = {1, 2, 4, 8, 16};
  s.schedules = {wt::Schedule::gpipe, wt::Schedule::one_f_one_b, wt::Schedule::interleaved,
                 wt::Schedule::zb1p, wt::Schedule::dualpipe};
  s.recompute = {wt::Recompute::none, wt::Recompute::selective, wt::Recompute::full};
  s.zero_stages = {0, 1, 2, 3};
  return s;
}

std::vector<Strategy> enumerate_strategies(const SearchSpace& space, const wt::TrainingConfig& base,
                                           int gpus) {
  std::vector<Strategy> out;
  const bool moe = base.model.is_moe();
  for (int tp : space.tp) {
    for (int cp : space.cp) {
      if (gpus % (tp * cp) != 0) continue;
      for (int pp : divisors(gpus / (tp * cp))) {
        if (pp > base.model.layers) break;
        const int dp = gpus / (tp * cp * pp);
        std::vector<int> eps{1};
        if (moe) {
          eps.clear();
          for (int e : divisors(dp)) {
            if (e <= base.model.moe.experts) eps.push_back(e);
          }
        }
        // (schedule, virtual stages) pairs for this pp.
        std::vector<std::pair<wt::Schedule, int>> schedules;
        if (pp == 1) {
          schedules.emplace_back(wt::Schedule::one_f_one_b, 1);
        } else {
          for (wt::Schedule k : space.schedules) {
            if (k != wt::Schedule::interleaved) {
              schedules.emplace_back(k, 1);
              continue;
            }
            for (int v : virtual_stage_options(base, pp, space.max_virtual_stages)) {
              schedules.emplace_back(k, v);
            }
          }
        }
        for (int ep : eps) {
          for (const auto& [schedule, v] : schedules) {
            for (int64_t micro : space.micro) {
              for (wt::Recompute r : space.recompute) {
                for (int zero : space.zero_stages) {
                  for (bool sp : {false, true}) {
                    if (sp && tp == 1) continue;  // SP splits over TP: nothing to split
                    Strategy s;
                    s.tp = tp, s.cp = cp, s.pp = pp, s.dp = dp, s.ep = ep;
                    s.schedule = schedule, s.virtual_stages = v, s.micro = micro;
                    s.recompute = r, s.zero_stage = zero, s.sequence_parallel = sp;
                    out.push_back(s);
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  return out;
}

}  // namespace gcsim::workloads::plan
