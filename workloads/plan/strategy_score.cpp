#include "workloads/plan/strategy_score.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <optional>
#include <thread>

#include "workloads/estimate/time_estimate.h"
#include "workloads/training/memory_model.h"
#include "workloads/training/pipeline_schedule.h"
#include "workloads/training/training_generator.h"

namespace gcsim::workloads::plan {

namespace wt = workloads::training;
namespace est = workloads::estimate;

const char* verdict_name(StrategyScore::Verdict v) {
  switch (v) {
    case StrategyScore::Verdict::pruned: return "pruned";
    case StrategyScore::Verdict::out_of_memory: return "oom";
    case StrategyScore::Verdict::scored: return "scored";
  }
  return "?";
}

StrategyScore score_strategy(const wt::TrainingConfig& c, const PlanCluster& cluster) {
  wt::PipelinePlan plan;
  return score_strategy(c, cluster, [&plan](const wt::TrainingConfig& x) -> const wt::PipelinePlan& {
    const auto& p = x.parallel;
    plan = wt::build_pipeline(p.schedule, p.pp, p.virtual_stages, static_cast<int>(x.micro_batches()));
    return plan;
  });
}

StrategyScore score_strategy(
    const wt::TrainingConfig& c, const PlanCluster& cluster,
    const std::function<const wt::PipelinePlan&(const wt::TrainingConfig&)>& plan_of) {
  StrategyScore s;
  if (const wt::StrategyProblem problem = wt::check_strategy(c, cluster.gpus)) {
    s.verdict = StrategyScore::Verdict::pruned;
    s.rule = problem.key;
    s.reason = problem.message;
    return s;
  }
  if (c.parallel.cp > 1 && c.attention_impl == wt::AttentionImpl::unfused) {
    s.verdict = StrategyScore::Verdict::pruned;
    s.rule = "attention_kernel";
    s.reason = "context parallelism (ring attention) needs attention_kernel: flash";
    return s;
  }
  const wt::PipelinePlan& plan = plan_of(c);
  const auto loads = wt::expert_loads(c);
  const wt::RankMemory memory =
      wt::memory_per_rank(c, plan, *std::max_element(loads.begin(), loads.end()));
  s.memory_bytes = memory.fullest_bytes();
  s.fullest_pipeline_rank = memory.fullest;
  if (s.memory_bytes > cluster.gpu->hbm_capacity.as_double()) {
    s.verdict = StrategyScore::Verdict::out_of_memory;
    s.rule = "memory";
    char why[128];
    std::snprintf(why, sizeof why, "needs %.1f GiB on pipeline rank %d, more than the %.1f GiB of HBM",
                  s.memory_bytes / 1073741824.0, s.fullest_pipeline_rank,
                  cluster.gpu->hbm_capacity.as_double() / 1073741824.0);
    s.reason = why;
    return s;
  }
  const est::TrainingTimeEstimate t = est::estimate_training_time(
      c, *cluster.gpu, est::estimate_training_comm(c, cluster.links, &plan), &plan);
  s.step_s = t.step.value;
  s.compute_s = t.compute.value;
  s.bubble_s = t.bubble.value;
  s.optimizer_s = t.optimizer.value;
  for (size_t i = 0; i < kDimensions.size(); ++i) {
    std::string dim = kDimensions[i];
    std::transform(dim.begin(), dim.end(), dim.begin(), ::toupper);
    // SP's all-gathers and reduce-scatters are TP's communication.
    s.exposed_s[i] = t.exposed_of(dim) + (dim == "TP" ? t.exposed_of("SP") : 0.0);
  }
  s.tokens_per_s = s.step_s > 0 ? static_cast<double>(c.tokens_per_step()) / s.step_s : 0.0;
  s.mfu = t.mfu.value;
  return s;
}

std::vector<StrategyScore> score_strategies(const wt::TrainingConfig& base,
                                            const std::vector<Strategy>& candidates,
                                            const PlanCluster& cluster, int threads,
                                            const std::function<bool(size_t)>& mine) {
  std::vector<size_t> todo;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (mine(i)) todo.push_back(i);
  }
  std::vector<StrategyScore> scores(candidates.size());
  // Thread t takes the t-th of n contiguous runs, so that neighbours (the
  // same pipeline plan under other recompute, ZeRO and SP) meet the plan
  // the thread built last.
  auto work = [&](size_t t, size_t n) {
    struct Key {
      wt::Schedule schedule;
      int pp, v;
      int64_t m;
      bool operator==(const Key&) const = default;
    };
    std::optional<Key> key;
    wt::PipelinePlan plan;
    auto plan_of = [&](const wt::TrainingConfig& c) -> const wt::PipelinePlan& {
      const auto& p = c.parallel;
      const Key k{p.schedule, p.pp, p.virtual_stages, c.micro_batches()};
      if (!key || !(*key == k)) {
        plan = wt::build_pipeline(k.schedule, k.pp, k.v, static_cast<int>(k.m));
        key = k;
      }
      return plan;
    };
    const size_t begin = todo.size() * t / n, end = todo.size() * (t + 1) / n;
    for (size_t k = begin; k < end; ++k) {
      scores[todo[k]] = score_strategy(apply(base, candidates[todo[k]]), cluster, plan_of);
    }
  };
  const size_t n = static_cast<size_t>(std::max(1, threads));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < n; ++t) pool.emplace_back(work, t, n);
  work(0, n);
  for (auto& th : pool) th.join();
  return scores;
}

}  // namespace gcsim::workloads::plan
