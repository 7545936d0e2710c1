#include "sim/report/study_html.h"

#include <algorithm>
#include <set>

#include "sim/report/format.h"
#include "sim/report/html_report.h"
#include "sim/report/svg_chart.h"

namespace gcsim::cli {

using Json = nlohmann::ordered_json;
namespace wp = workloads::plan;

namespace {

constexpr double kGiB = 1073741824.0;

// What a run produced per second, and its name: tokens for training,
// output tokens for serving, else runs of the simulated time.
std::pair<double, std::string> throughput(const Json& s) {
  if (summary_number(s, "tokens_per_s") >= 0) return {summary_number(s, "tokens_per_s"), "tokens/s"};
  if (s.contains("throughput")) {
    return {std::max(0.0, summary_number(s["throughput"], "output_tokens_per_s")), "output tokens/s"};
  }
  const double t = summary_step_time(s);
  return {t > 0 ? 1.0 / t : 0.0, "1 / simulated time (per s)"};
}

// The step's parts of a training summary, as stacked-bar series.
std::vector<svg::Series> breakdown_series(const std::vector<const Json*>& summaries) {
  std::vector<svg::Series> parts{{"compute", {}}, {"optimizer", {}}, {"bubble", {}}};
  for (const char* d : wp::kDimensions) parts.push_back({std::string("exposed ") + d, {}});
  for (const Json* s : summaries) {
    parts[0].values.push_back(summary_breakdown(*s, "compute_s"));
    parts[1].values.push_back(summary_breakdown(*s, "optimizer_s"));
    parts[2].values.push_back(summary_breakdown(*s, "bubble_s"));
    for (size_t i = 0; i < wp::kDimensions.size(); ++i) {
      parts[3 + i].values.push_back(summary_exposed(*s, wp::kDimensions[i]));
    }
  }
  std::vector<svg::Series> shown;
  for (auto& p : parts) {
    if (std::any_of(p.values.begin(), p.values.end(), [](double v) { return v > 0; })) shown.push_back(p);
  }
  return shown;
}

}  // namespace

std::string sweep_html(const std::string& name, const std::string& base_path, const std::vector<SweepRow>& rows) {
  HtmlReport page("gcsim sweep: " + name);
  size_t ok = 0;
  std::set<double> gpus;
  for (const auto& r : rows) {
    if (r.run->status != "ok") continue;
    ++ok;
    gpus.insert(summary_number(r.run->summary, "gpus"));
  }
  page.facts({{"base config", base_path},
              {"points", std::to_string(rows.size())},
              {"ran", std::to_string(ok)},
              {"not run", std::to_string(rows.size() - ok)}});

  // Throughput against GPUs when the sweep changes them, else memory per GPU.
  const bool by_gpus = gpus.size() > 1;
  std::vector<svg::ScatterPoint> points;
  std::string y_name = "throughput";
  int rank = 0;
  for (const auto& r : rows) {
    if (r.run->status != "ok") continue;
    ++rank;
    const Json& s = r.run->summary;
    const auto [y, what] = throughput(s);
    y_name = what;
    const double x = by_gpus ? summary_number(s, "gpus") : summary_memory_bytes(s);
    if (x < 0) continue;
    const bool fits = summary_fits(s);
    points.push_back({x, y, fits ? 0 : 1, rank <= 5 ? "#" + std::to_string(rank) : "", fits});
  }
  page.heading("Throughput against " + std::string(by_gpus ? "GPUs" : "memory per GPU"));
  if (points.empty()) {
    page.paragraph("No point ran.");
  } else {
    page.chart(svg::scatter(y_name + " against " + (by_gpus ? "GPUs" : "peak memory per GPU"),
                            by_gpus ? "GPUs" : "peak HBM per GPU", by_gpus ? "" : "B", y_name, "", points,
                            {"fits", "does not fit"}),
               "Each point is one configuration of the sweep (#k: its rank in results.md). The front joins "
               "those no other beats on both axes: more throughput for no more " +
                   std::string(by_gpus ? "GPUs." : "memory."));
  }

  std::vector<std::string> labels;
  std::vector<const Json*> summaries;
  rank = 0;
  for (const auto& r : rows) {
    if (r.run->status != "ok") continue;
    ++rank;
    if (!r.run->summary.contains("breakdown")) continue;
    labels.push_back("#" + std::to_string(rank));
    summaries.push_back(&r.run->summary);
  }
  if (!summaries.empty()) {
    page.heading("Where each step goes");
    page.chart(svg::stacked_bars("Step time by part, ranked points", labels, breakdown_series(summaries), "s"),
               "Mean over the simulated GPUs of each point: compute, optimizer, bubble and exposed communication.");
  }

  page.heading("Points");
  std::vector<std::vector<std::string>> table;
  rank = 0;
  for (const auto& r : rows) {
    const Json& s = r.run->summary;
    if (r.run->status == "ok") {
      ++rank;
      const double mem = summary_memory_bytes(s);
      table.push_back({std::to_string(rank), r.label, human_time(summary_step_time(s)),
                       fmt("%.4g", throughput(s).first), mem >= 0 ? gib(mem) : "",
                       summary_fits(s) ? "yes" : "no", ""});
    } else {
      table.push_back({"", r.label, "", "", "", "", r.run->status + ": " + r.run->reason});
    }
  }
  page.table({"#", "point", "step / run time", y_name, "memory per GPU", "fits", "not run because"}, table);
  return page.render();
}

std::string plan_html(const PlanResult& r) {
  HtmlReport page("gcsim plan: " + r.model + " on " + std::to_string(r.gpus) + " x " + r.gpu);
  size_t pruned = 0;
  for (const auto& [rule, n] : r.pruned) pruned += n;
  std::vector<std::pair<std::string, std::string>> facts{
      {"config", r.config_path},
      {"global batch", std::to_string(r.global_batch) + " sequences"},
      {"candidates", std::to_string(r.candidates.size()) + " evaluated, " + std::to_string(pruned) + " pruned, " +
                         std::to_string(r.scored) + " scored by the estimate"},
      {"simulated", std::to_string(std::count_if(r.layouts.begin(), r.layouts.end(),
                                                 [](const SimulatedLayout& l) { return l.simulated(); })) +
                        " layouts on the " + r.network_model + " network model"}};
  if (r.best >= 0) {
    const SimulatedLayout& b = r.layouts[static_cast<size_t>(r.best)];
    facts.emplace_back("best", wp::label(b.strategy));
    facts.emplace_back("best step", human_time(summary_step_time(b.run.summary)) + ", " +
                                        fmt("%.4g tokens/s", summary_number(b.run.summary, "tokens_per_s")) +
                                        ", " + gib(summary_memory_bytes(b.run.summary)) + " per GPU");
  } else {
    facts.emplace_back("best", "no simulated layout fits");
  }
  facts.emplace_back("wall time", fmt("%.1f s", r.wall_time_s));
  page.facts(facts);

  page.heading("Throughput against memory per GPU");
  std::vector<svg::ScatterPoint> points;
  for (size_t i = 0; i < r.candidates.size(); ++i) {
    const auto& e = r.scores[i];
    if (e.verdict == wp::StrategyScore::Verdict::scored) points.push_back({e.memory_bytes, e.tokens_per_s, 0, "", true});
  }
  for (size_t i = 0; i < r.layouts.size(); ++i) {
    const SimulatedLayout& l = r.layouts[i];
    if (!l.simulated()) continue;
    const bool best = static_cast<int>(i) == r.best;
    const bool own = l.known_as.find("the config's own layout") != std::string::npos;
    points.push_back({summary_memory_bytes(l.run.summary), summary_number(l.run.summary, "tokens_per_s"),
                      best ? 2 : own ? 3 : 1, best ? "best" : own ? "config's own" : "", false});
  }
  page.chart(svg::scatter("Tokens/s against HBM per GPU", "HBM per GPU", "B", "tokens/s", "", points,
                          {"estimated", "simulated", "best", "config's own"}, "front (estimated)"),
             "Every candidate that fits at its estimated throughput (a density grid when there are many), and "
             "the layouts simulated at their simulated throughput. The front: the most estimated tokens/s for "
             "no more memory.");

  const std::vector<int> ranked = ranked_layouts(r);
  if (!ranked.empty()) {
    page.heading("The simulated layouts, fastest first");
    std::vector<std::string> labels;
    std::vector<const Json*> summaries;
    std::vector<std::vector<std::string>> table;
    int n = 0;
    for (int i : ranked) {
      const SimulatedLayout& l = r.layouts[static_cast<size_t>(i)];
      labels.push_back("#" + std::to_string(++n));
      summaries.push_back(&l.run.summary);
      table.push_back({"#" + std::to_string(n), wp::label(l.strategy), l.known_as,
                       human_time(summary_step_time(l.run.summary)), human_time(l.estimate.step_s),
                       fmt("%.4g", summary_number(l.run.summary, "tokens_per_s")),
                       gib(summary_memory_bytes(l.run.summary)), slower_than_best(r, l)});
    }
    page.chart(svg::stacked_bars("Simulated step by part", labels, breakdown_series(summaries), "s"),
               "The winner (#1) beside the runners-up: where each step's time goes.");
    page.table({"#", "layout", "known as", "step", "estimate", "tokens/s", "memory per GPU", "slower than #1"},
               table);
  }
  page.heading("Why the well-known layouts lose");
  std::vector<std::vector<std::string>> known;
  for (const SimulatedLayout& l : r.layouts) {
    if (!l.known_as.empty()) known.push_back({l.known_as, wp::label(l.strategy), known_layout_verdict(r, l)});
  }
  page.table({"layout", "as", "verdict"}, known);
  page.heading("Pruned candidates");
  std::vector<std::vector<std::string>> rules;
  for (const auto& [rule, count] : r.pruned) {
    const auto it = r.pruned_example.find(rule);
    rules.push_back({rule, std::to_string(count), it == r.pruned_example.end() ? "" : it->second});
  }
  page.table({"rule", "candidates", "for example"}, rules);
  return page.render();
}

}  // namespace gcsim::cli
