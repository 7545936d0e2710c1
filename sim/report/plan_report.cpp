#include "sim/report/plan_report.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "sim/report/format.h"

namespace gcsim::cli {

namespace wp = workloads::plan;
namespace wt = workloads::training;
using sim::config::Json;

namespace {

constexpr double kGiB = 1073741824.0;

// The step's parts as summary.json's breakdown names them, and as the
// estimate names its own.
struct Parts {
  double compute = 0, bubble = 0, optimizer = 0;
  std::array<double, wp::kDimensions.size()> exposed{};
  double step = 0;
};

Parts simulated_parts(const RunPoint& run) {
  Parts p;
  p.compute = summary_breakdown(run.summary, "compute_s");
  p.bubble = summary_breakdown(run.summary, "bubble_s");
  p.optimizer = summary_breakdown(run.summary, "optimizer_s");
  for (size_t i = 0; i < wp::kDimensions.size(); ++i) {
    p.exposed[i] = summary_exposed(run.summary, wp::kDimensions[i]);
  }
  p.step = summary_step_time(run.summary);
  return p;
}

std::string secs(double s) { return fmt("%.3g s", s); }

std::string pct(double f) { return fmt("%.1f%%", 100.0 * f); }

size_t dim_index(const char* d) {
  for (size_t i = 0; i < wp::kDimensions.size(); ++i) {
    if (std::string(wp::kDimensions[i]) == d) return i;
  }
  return 0;
}

// Why a part of `other`'s step is larger than the winner's, in a planner's
// words: the mechanism behind the difference.
std::string part_reason(const std::string& part, const wp::Strategy& o, const wp::Strategy& w,
                        const PlanResult& r, const RunPoint& run) {
  if (part == "compute") {
    if (o.recompute != w.recompute) {
      return std::string("recompute ") + wt::recompute_name(o.recompute) + " against " +
             wt::recompute_name(w.recompute) +
             (o.recompute == wt::Recompute::full ? " (the forward runs twice)" : "");
    }
    if (o.zero_stage >= 2 && w.zero_stage < 2) {
      return "ZeRO-" + std::to_string(o.zero_stage) +
             " reduces every micro-batch's gradients, and the reduce-scatters hold SMs beside the GEMMs";
    }
    if (o.micro != w.micro) {
      return "micro-batch " + std::to_string(o.micro) + " against " + std::to_string(w.micro) +
             " (GEMM sizes and per-kernel overheads)";
    }
    if (o.cp != w.cp) {
      return "CP" + std::to_string(o.cp) + " against CP" + std::to_string(w.cp) +
             " (attention in sequence chunks, smaller GEMMs)";
    }
    if (o.tp != w.tp) {
      return "TP" + std::to_string(o.tp) + " against TP" + std::to_string(w.tp) +
             " (thinner GEMM shards)";
    }
    return "kernel time per GPU";
  }
  if (part == "bubble") {
    const double m = static_cast<double>(r.global_batch) / static_cast<double>(o.micro * o.dp);
    std::string s = "pipeline bubble: PP" + std::to_string(o.pp) + " " + wt::schedule_name(o.schedule);
    if (o.schedule == wt::Schedule::interleaved) s += " v" + std::to_string(o.virtual_stages);
    s += ", " + fmt("%.0f", m) + " micro-batches (bubble fraction " +
         pct(std::max(0.0, summary_number(run.summary, "bubble_fraction"))) + ")";
    return s;
  }
  if (part == "optimizer") return "optimizer step (ZeRO-" + std::to_string(o.zero_stage) + ")";
  if (part == "tp") {
    if (o.tp > r.gpus_per_node) {
      return "exposed TP: TP" + std::to_string(o.tp) + " spans " +
             std::to_string(o.tp / std::max(1, r.gpus_per_node)) +
             " nodes, so its all-reduces cross the NICs";
    }
    return "exposed TP all-reduces on NVLink (TP" + std::to_string(o.tp) + ")";
  }
  if (part == "pp") return "pipeline sends between stages";
  if (part == "dp") {
    return "gradient reduction left after the last backward (DP" + std::to_string(o.dp) +
           ", ZeRO-" + std::to_string(o.zero_stage) + ")";
  }
  if (part == "cp") return "ring-attention sends not hidden under attention (CP" + std::to_string(o.cp) + ")";
  if (part == "ep") return "expert all-to-all (EP" + std::to_string(o.ep) + ")";
  return part;
}

// "+1.2 s: pipeline bubble ...; +0.4 s: exposed TP ..." for the two parts
// of `other`'s step that exceed the winner's the most.
std::string why_slower(const SimulatedLayout& other, const SimulatedLayout& winner,
                       const PlanResult& r) {
  const Parts a = simulated_parts(other.run), b = simulated_parts(winner.run);
  std::vector<std::pair<double, std::string>> d{
      {a.compute - b.compute, "compute"}, {a.bubble - b.bubble, "bubble"},
      {a.optimizer - b.optimizer, "optimizer"}};
  for (const char* dim : wp::kDimensions) {
    d.emplace_back(a.exposed[dim_index(dim)] - b.exposed[dim_index(dim)], dim);
  }
  std::stable_sort(d.begin(), d.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  std::string s;
  for (size_t i = 0; i < 2 && i < d.size(); ++i) {
    if (d[i].first <= 0.005 * b.step) break;  // under 0.5% of the step: not a reason
    s += (s.empty() ? "" : "; ") + std::string("+") + secs(d[i].first) + " " +
         part_reason(d[i].second, other.strategy, winner.strategy, r, other.run);
  }
  return s.empty() ? "within 0.5% of the winner in every part" : s;
}

std::string cell(std::string s) {
  std::replace(s.begin(), s.end(), '|', '/');
  return s;
}

Json strategy_json(const wp::Strategy& s) {
  return Json{{"tp", s.tp},
              {"cp", s.cp},
              {"pp", s.pp},
              {"virtual_stages", s.virtual_stages},
              {"dp", s.dp},
              {"ep", s.ep},
              {"micro_batch", s.micro},
              {"schedule", wt::schedule_name(s.schedule)},
              {"recompute", wt::recompute_name(s.recompute)},
              {"zero_stage", s.zero_stage},
              {"sequence_parallel", s.sequence_parallel}};
}

Json estimate_json(const wp::StrategyScore& e) {
  Json j{{"verdict", wp::verdict_name(e.verdict)}};
  if (e.verdict == wp::StrategyScore::Verdict::pruned) {
    j["rule"] = e.rule;
    j["reason"] = e.reason;
    return j;
  }
  j["memory_bytes_per_gpu"] = e.memory_bytes;
  j["fullest_pipeline_rank"] = e.fullest_pipeline_rank;
  if (e.verdict == wp::StrategyScore::Verdict::scored) {
    j["step_time_s"] = e.step_s;
    j["tokens_per_s"] = e.tokens_per_s;
    Json ex = Json::object();
    for (size_t i = 0; i < wp::kDimensions.size(); ++i) ex[wp::kDimensions[i]] = e.exposed_s[i];
    j["breakdown"] = {{"compute_s", e.compute_s},
                      {"bubble_s", e.bubble_s},
                      {"optimizer_s", e.optimizer_s},
                      {"exposed_comm_s", ex}};
  }
  return j;
}

// Why a layout that was not simulated cannot be the plan.
std::string not_simulated_reason(const SimulatedLayout& l) {
  const auto& e = l.estimate;
  if (e.verdict == wp::StrategyScore::Verdict::pruned) return "cannot run: " + e.reason;
  if (e.verdict == wp::StrategyScore::Verdict::out_of_memory) return "out of memory: " + e.reason;
  return l.run.status + ": " + l.run.reason;
}

}  // namespace

std::vector<std::string> strategy_overrides(const wp::Strategy& s) {
  const auto n = [](int64_t v) { return std::to_string(v); };
  return {"workload.parallelism.tp=" + n(s.tp),
          "workload.parallelism.cp=" + n(s.cp),
          "workload.parallelism.pp=" + n(s.pp),
          "workload.parallelism.dp=" + n(s.dp),
          "workload.parallelism.ep=" + n(s.ep),
          "workload.parallelism.schedule=" + std::string(wt::schedule_name(s.schedule)),
          "workload.parallelism.virtual_stages=" + n(s.virtual_stages),
          std::string("workload.parallelism.sequence_parallel=") + (s.sequence_parallel ? "true" : "false"),
          "workload.batch.micro=" + n(s.micro),
          "workload.recompute=" + std::string(wt::recompute_name(s.recompute)),
          "workload.optimizer.zero_stage=" + n(s.zero_stage)};
}

std::string slower_than_best(const PlanResult& r, const SimulatedLayout& l) {
  const SimulatedLayout& w = r.layouts.at(static_cast<size_t>(r.best));
  if (&l == &w) return "(best)";
  return pct(summary_step_time(l.run.summary) / summary_step_time(w.run.summary) - 1.0) + " slower: " +
         why_slower(l, w, r);
}

std::string known_layout_verdict(const PlanResult& r, const SimulatedLayout& l) {
  if (r.best >= 0 && &l == &r.layouts[static_cast<size_t>(r.best)]) return "this is the best layout";
  if (l.simulated() && !summary_fits(l.run.summary)) return "out of memory in the simulation";
  if (l.simulated() && r.best >= 0) {
    return secs(summary_step_time(l.run.summary)) + ", " + slower_than_best(r, l);
  }
  return not_simulated_reason(l);
}

std::vector<int> ranked_layouts(const PlanResult& r) {
  std::vector<int> ok;
  for (size_t i = 0; i < r.layouts.size(); ++i) {
    if (r.layouts[i].simulated() && summary_fits(r.layouts[i].run.summary)) ok.push_back(static_cast<int>(i));
  }
  std::stable_sort(ok.begin(), ok.end(), [&r](int a, int b) {
    return summary_step_time(r.layouts[static_cast<size_t>(a)].run.summary) <
           summary_step_time(r.layouts[static_cast<size_t>(b)].run.summary);
  });
  return ok;
}

Json plan_json(const PlanResult& r) {
  Json j = Json::object();
  j["config"] = r.config_path;
  j["model"] = r.model;
  j["gpu"] = r.gpu;
  j["gpus"] = r.gpus;
  j["gpus_per_node"] = r.gpus_per_node;
  j["global_batch"] = r.global_batch;
  j["network_model"] = r.network_model;
  if (r.best >= 0) {
    const SimulatedLayout& b = r.layouts[static_cast<size_t>(r.best)];
    Json best = strategy_json(b.strategy);
    best["label"] = wp::label(b.strategy);
    best["step_time_s"] = summary_step_time(b.run.summary);
    best["tokens_per_s"] = summary_number(b.run.summary, "tokens_per_s");
    best["mfu"] = summary_number(b.run.summary, "mfu");
    best["fits"] = summary_fits(b.run.summary);
    best["memory_bytes_per_gpu"] = summary_memory_bytes(b.run.summary);
    best["estimated_step_time_s"] = b.estimate.step_s;
    best["point"] = b.run.dir.filename().string();
    j["best"] = best;
  } else {
    j["best"] = nullptr;
  }
  j["candidates_evaluated"] = r.candidates.size();
  j["candidates_scored"] = r.scored;
  Json pruned = Json::object(), examples = Json::object();
  for (const auto& [rule, n] : r.pruned) pruned[rule] = n;
  for (const auto& [rule, m] : r.pruned_example) examples[rule] = m;
  j["pruned"] = pruned;
  j["pruned_examples"] = examples;
  j["top_k"] = r.top_k;
  Json sims = Json::array();
  for (const SimulatedLayout& l : r.layouts) {
    Json x = strategy_json(l.strategy);
    x["label"] = wp::label(l.strategy);
    if (!l.known_as.empty()) x["known_as"] = l.known_as;
    x["estimate"] = estimate_json(l.estimate);
    x["status"] = l.run.status == "pending" ? "not simulated" : l.run.status;
    if (l.simulated()) {
      x["step_time_s"] = summary_step_time(l.run.summary);
      x["tokens_per_s"] = summary_number(l.run.summary, "tokens_per_s");
      x["mfu"] = summary_number(l.run.summary, "mfu");
      x["fits"] = summary_fits(l.run.summary);
      x["memory_bytes_per_gpu"] = summary_memory_bytes(l.run.summary);
      x["breakdown"] = l.run.summary.value("breakdown", Json::object());
      x["point"] = l.run.dir.filename().string();
    } else {
      x["reason"] = not_simulated_reason(l);
    }
    sims.push_back(x);
  }
  j["simulated"] = sims;
  j["scoring_wall_s"] = r.scoring_wall_s;
  j["simulation_wall_s"] = r.simulation_wall_s;
  j["wall_time_s"] = r.wall_time_s;
  return j;
}

void write_plan_csv(const PlanResult& r, const std::string& path) {
  std::ofstream f(path);
  if (!f) throw std::runtime_error("cannot write " + path);
  // Which candidates were simulated, and their steps.
  std::vector<const SimulatedLayout*> sim(r.candidates.size(), nullptr);
  for (const SimulatedLayout& l : r.layouts) {
    const auto it = std::find(r.candidates.begin(), r.candidates.end(), l.strategy);
    if (it != r.candidates.end() && l.simulated()) sim[static_cast<size_t>(it - r.candidates.begin())] = &l;
  }
  f << "candidate,tp,cp,pp,virtual_stages,dp,ep,micro_batch,schedule,recompute,zero_stage,"
       "sequence_parallel,verdict,rule,memory_gib,est_step_s,est_tokens_per_s,est_compute_s,"
       "est_bubble_s,est_optimizer_s";
  for (const char* d : wp::kDimensions) f << ",est_exposed_" << d << "_s";
  f << ",simulated_step_s,simulated_fits\n";
  for (size_t i = 0; i < r.candidates.size(); ++i) {
    const wp::Strategy& s = r.candidates[i];
    const wp::StrategyScore& e = r.scores[i];
    f << i << "," << s.tp << "," << s.cp << "," << s.pp << "," << s.virtual_stages << "," << s.dp
      << "," << s.ep << "," << s.micro << "," << wt::schedule_name(s.schedule) << ","
      << wt::recompute_name(s.recompute) << "," << s.zero_stage << ","
      << (s.sequence_parallel ? "true" : "false") << "," << wp::verdict_name(e.verdict) << ","
      << e.rule << ",";
    if (e.verdict != wp::StrategyScore::Verdict::pruned) f << fmt("%.4f", e.memory_bytes / kGiB);
    if (e.verdict == wp::StrategyScore::Verdict::scored) {
      f << "," << fmt("%.6g", e.step_s) << "," << fmt("%.6g", e.tokens_per_s) << ","
        << fmt("%.6g", e.compute_s) << "," << fmt("%.6g", e.bubble_s) << ","
        << fmt("%.6g", e.optimizer_s);
      for (double x : e.exposed_s) f << "," << fmt("%.6g", x);
    } else {
      f << ",,,,,";
      for (size_t k = 0; k < wp::kDimensions.size(); ++k) f << ",";
    }
    if (sim[i]) {
      f << "," << fmt("%.6g", summary_step_time(sim[i]->run.summary)) << ","
        << (summary_fits(sim[i]->run.summary) ? "true" : "false") << "\n";
    } else {
      f << ",,\n";
    }
  }
}

std::string plan_markdown(const PlanResult& r) {
  std::ostringstream o;
  o << "# gcsim plan: " << r.model << " on " << r.gpus << " x " << r.gpu << ", global batch "
    << r.global_batch << "\n\n";
  size_t pruned = 0;
  for (const auto& [rule, n] : r.pruned) pruned += n;
  o << r.candidates.size() << " candidates evaluated: " << pruned << " pruned, " << r.scored
    << " scored by the estimate; the " << r.top_k << " best by estimate and the well-known layouts "
    << "simulated on the `" << r.network_model << "` network model.\n\n";
  o << "| pruned by | candidates | for example |\n|---|---:|---|\n";
  for (const auto& [rule, n] : r.pruned) {
    const auto it = r.pruned_example.find(rule);
    o << "| " << (rule == "memory" ? "memory (does not fit in HBM)" : "`" + rule + "`") << " | " << n
      << " | " << cell(it == r.pruned_example.end() ? "" : it->second) << " |\n";
  }
  const std::vector<int> ranked = ranked_layouts(r);
  if (ranked.empty()) {
    o << "\n**No simulated layout fits.**\n";
    return o.str();
  }
  const SimulatedLayout& w = r.layouts[static_cast<size_t>(ranked.front())];
  const Parts wp_ = simulated_parts(w.run);
  o << "\n## Best: " << wp::label(w.strategy) << "\n\n"
    << "Step " << secs(wp_.step) << " simulated (" << secs(w.estimate.step_s) << " estimated), "
    << fmt("%.4g", summary_number(w.run.summary, "tokens_per_s")) << " tokens/s, MFU "
    << pct(summary_number(w.run.summary, "mfu")) << ", "
    << fmt("%.1f GiB", summary_memory_bytes(w.run.summary) / kGiB) << " of "
    << fmt("%.1f GiB", r.capacity_bytes / kGiB) << " HBM per GPU. `best.yaml` runs it.\n\n";

  o << "## Simulated layouts, fastest first\n\n"
    << "| # | layout | known as | step | estimate | tokens/s | MFU | compute | bubble | exposed TP | "
       "exposed PP | exposed DP | other | memory/GPU | slower than #1 by |\n"
    << "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n";
  int n = 0;
  for (int i : ranked) {
    const SimulatedLayout& l = r.layouts[static_cast<size_t>(i)];
    const Parts p = simulated_parts(l.run);
    const double other = p.optimizer + p.exposed[dim_index("cp")] + p.exposed[dim_index("ep")];
    ++n;
    o << "| " << n << " | " << cell(wp::label(l.strategy)) << " | " << cell(l.known_as) << " | "
      << secs(p.step) << " | " << secs(l.estimate.step_s) << " | "
      << fmt("%.4g", summary_number(l.run.summary, "tokens_per_s")) << " | "
      << pct(summary_number(l.run.summary, "mfu")) << " | " << secs(p.compute) << " | "
      << secs(p.bubble) << " | " << secs(p.exposed[dim_index("tp")]) << " | "
      << secs(p.exposed[dim_index("pp")]) << " | " << secs(p.exposed[dim_index("dp")]) << " | "
      << secs(other) << " | " << fmt("%.1f GiB", summary_memory_bytes(l.run.summary) / kGiB) << " | "
      << cell(slower_than_best(r, l)) << " |\n";
  }

  std::string refused;
  for (const SimulatedLayout& l : r.layouts) {
    if (l.estimate.verdict == wp::StrategyScore::Verdict::scored && !l.simulated()) {
      refused += "| " + cell(wp::label(l.strategy)) + " | " + cell(l.run.status + ": " + l.run.reason) + " |\n";
    }
  }
  if (!refused.empty()) {
    o << "\nScored by the estimate but not run by the simulator:\n\n| layout | why |\n|---|---|\n" << refused;
  }

  o << "\n## Why the well-known layouts lose\n\n| layout | as | verdict |\n|---|---|---|\n";
  for (const SimulatedLayout& l : r.layouts) {
    if (l.known_as.empty()) continue;
    o << "| " << cell(l.known_as) << " | " << cell(wp::label(l.strategy)) << " | "
      << cell(known_layout_verdict(r, l)) << " |\n";
  }
  o << "\nWall time " << fmt("%.1f s", r.wall_time_s) << " (scoring " << fmt("%.2f s", r.scoring_wall_s)
    << ", simulation " << fmt("%.1f s", r.simulation_wall_s) << ").\n";
  return o.str();
}

}  // namespace gcsim::cli
