#include "sim/report/run_html.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "sim/report/format.h"
#include "sim/report/html_report.h"
#include "sim/report/svg_chart.h"
#include "sim/scenario/training_workload_loader.h"
#include "workloads/training/op_emitter.h"

namespace gcsim::cli {

using sim::config::Json;
namespace wt = workloads::training;
namespace inf = workloads::inference;

namespace {

constexpr size_t kMaxTimelineRanks = 16;

double num(const Json& j, const char* key, double fallback = 0) {
  return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<double>() : fallback;
}

// The figures every page opens with.
std::vector<std::pair<std::string, std::string>> head_facts(const RunFigures& f) {
  const Scenario& s = *f.scenario;
  return {{"config", s.config_path},
          {"workload", s.workload_kind},
          {"cluster", std::to_string(s.cluster.nodes) + " node(s) x " + std::to_string(s.cluster.gpus_per_node) +
                          " " + s.cluster.gpu.name},
          {"network model", s.network.model},
          {"simulated time", human_time(f.simulated_time.seconds())},
          {"status", f.oom.empty() ? "completed" : "stopped: " + f.oom}};
}

// Rows (rank, stream) of the first ranks that ran ops, and their spans,
// categorised by `category_of(record)`.
std::string timeline_of(const RunFigures& f, const std::vector<std::string>& categories,
                        const std::function<size_t(const sim::OpRecord&)>& category_of, const std::string& title) {
  const auto& g = *f.scenario->graph;
  std::map<std::pair<int, size_t>, size_t> row_of;
  std::vector<int> ranks;
  for (const auto& r : f.records) {
    if (ranks.empty() || ranks.back() != r.rank) {
      if (std::find(ranks.begin(), ranks.end(), r.rank) == ranks.end()) ranks.push_back(r.rank);
    }
  }
  std::sort(ranks.begin(), ranks.end());
  if (ranks.size() > kMaxTimelineRanks) ranks.resize(kMaxTimelineRanks);
  // Rows in rank order, each rank's streams in stream order.
  std::map<std::pair<int, size_t>, bool> present;
  for (const auto& r : f.records) {
    const auto& op = g.program(r.rank).ops[r.op];
    if (r.end > r.start && std::binary_search(ranks.begin(), ranks.end(), r.rank)) present[{r.rank, op.stream}] = true;
  }
  std::vector<std::string> rows;
  for (const auto& [key, yes] : present) {
    row_of[key] = rows.size();
    rows.push_back("GPU " + std::to_string(key.first) + " " + g.stream(static_cast<uint16_t>(key.second)));
  }
  std::vector<svg::Span> spans;
  for (const auto& r : f.records) {
    const auto& op = g.program(r.rank).ops[r.op];
    const auto it = row_of.find({r.rank, op.stream});
    if (it == row_of.end() || !(r.end > r.start)) continue;
    spans.push_back({it->second, r.start.seconds(), r.end.seconds(), category_of(r)});
  }
  if (rows.empty()) return "";
  return svg::timeline(title, rows, categories, spans, f.simulated_time.seconds());
}

std::string op_kind_timeline(const RunFigures& f, const std::string& title) {
  static const std::vector<std::string> kinds{"compute", "collective", "send", "recv", "memory", "delay"};
  const auto& g = *f.scenario->graph;
  return timeline_of(f, kinds, [&](const sim::OpRecord& r) {
    const std::string k = sim::op_category(g.program(r.rank).ops[r.op].kind);
    return static_cast<size_t>(std::find(kinds.begin(), kinds.end(), k) - kinds.begin());
  }, title);
}

void add_links(HtmlReport& page, const Json& summary) {
  const std::string links = busiest_links_chart(summary);
  page.heading("Busiest links");
  if (links.empty()) {
    page.paragraph("No traffic crossed a simulated fabric link.");
  } else {
    page.chart(links, "Utilization of each link over the run (bytes carried / (bandwidth x run time)).");
  }
}

void add_notes(HtmlReport& page, const Scenario& s) {
  if (s.notes.empty()) return;
  page.heading("Notes");
  for (const auto& n : s.notes) page.paragraph(n);
}

}  // namespace

std::string busiest_links_chart(const Json& summary) {
  if (!summary.contains("network")) return "";
  const Json& links = summary["network"].value("busiest_links", Json::array());
  std::vector<std::string> names, labels;
  std::vector<double> util;
  double top = 0;
  for (const auto& l : links) {
    if (num(l, "bytes") <= 0) continue;
    names.push_back(l.value("link", ""));
    util.push_back(num(l, "utilization"));
    labels.push_back(fmt("%.1f%%", 100 * util.back()) + ", " + human_bytes(num(l, "bytes")));
    top = std::max(top, util.back());
  }
  if (names.empty()) return "";
  return svg::horizontal_bars("Busiest links (utilization over the run)", names, util,
                              std::max(top, 1e-9) * 1.15, labels);
}

std::string training_html(const RunFigures& f, const TrainingFigures& t, const Json& summary) {
  const Scenario& s = *f.scenario;
  const TrainingRun& run = *s.training;
  const auto& c = run.config;
  HtmlReport page("gcsim report: " + s.config_path);
  auto facts = head_facts(f);
  facts.insert(facts.end(),
               {{"model", c.model.name + ", " + std::to_string(c.batch.global) + " sequences of " +
                              std::to_string(c.model.seq_len) + " tokens"},
                {"layout", "TP " + std::to_string(c.parallel.tp) + (c.parallel.sequence_parallel ? " (SP)" : "") +
                               ", CP " + std::to_string(c.parallel.cp) + ", PP " + std::to_string(c.parallel.pp) +
                               " " + wt::schedule_name(c.parallel.schedule) + ", DP " +
                               std::to_string(c.parallel.dp) + ", EP " + std::to_string(c.parallel.ep) +
                               ", micro-batch " + std::to_string(c.batch.micro) + ", recompute " +
                               wt::recompute_name(c.recompute) + ", ZeRO-" +
                               std::to_string(c.optimizer.zero_stage)},
                {"step time", human_time(t.step_s)},
                {"tokens/s", fmt("%.4g", t.tokens_per_s)},
                {"MFU / HFU", fmt("%.1f%%", 100 * t.mfu) + " / " + fmt("%.1f%%", 100 * t.hfu)},
                {"bubble", fmt("%.1f%%", 100 * t.bubble_fraction)},
                {"memory per GPU", gib(t.peak_bytes) + " of " + gib(run.capacity_bytes) +
                                       (run.fits ? " (fits)" : " (does not fit)")}});
  if (summary.contains("failures")) {
    const Json& fl = summary["failures"];
    facts.emplace_back("failures", fmt("%.0f interruptions", num(fl, "interruptions")) + ", effective training " +
                                       fmt("%.1f%%", 100 * num(fl.value("effective_training_time_fraction", Json::object()), "mean")));
  }
  page.facts(facts);

  // The step's parts per simulated rank, one bar per pipeline rank.
  page.heading("Where the step goes, per pipeline rank");
  std::vector<std::string> bars;
  std::vector<svg::Series> parts{{"compute", {}}, {"optimizer", {}}, {"bubble", {}}};
  static const char* const kDims[] = {"tp", "cp", "ep", "pp", "dp"};
  for (const char* d : kDims) parts.push_back({std::string("exposed ") + d, {}});
  for (const auto& r : summary.value("per_rank", Json::array())) {
    bars.push_back("PP " + std::to_string(r.value("pipeline_rank", 0)) + " (GPU " + std::to_string(r.value("rank", 0)) + ")");
    parts[0].values.push_back(num(r, "compute_s"));
    parts[1].values.push_back(num(r, "optimizer_s"));
    parts[2].values.push_back(num(r, "bubble_s"));
    for (size_t i = 0; i < std::size(kDims); ++i) {
      parts[3 + i].values.push_back(num(r.value("exposed_comm_s", Json::object()), kDims[i]));
    }
  }
  // Dimensions that cost nothing anywhere are left out of the legend.
  std::vector<svg::Series> shown;
  for (auto& p : parts) {
    if (std::any_of(p.values.begin(), p.values.end(), [](double v) { return v > 0; })) shown.push_back(p);
  }
  page.chart(svg::stacked_bars("Step time by part, per pipeline rank", bars, shown, "s"),
             "Each bar is one simulated GPU standing for its pipeline stage: compute, the optimizer step, "
             "idle time in the pipeline bubble, and communication that compute did not hide.");

  page.heading("Memory per GPU against HBM");
  std::vector<std::string> stages;
  std::vector<svg::Series> mem{{"weights", {}}, {"gradients", {}}, {"optimizer states", {}},
                               {"activations", {}}, {"communication buffers", {}}, {"reserved", {}}};
  for (size_t pr = 0; pr < run.memory.size(); ++pr) {
    const auto& m = run.memory[pr];
    stages.push_back("PP " + std::to_string(pr));
    for (auto [i, v] : {std::pair{0, m.weights}, {1, m.gradients}, {2, m.optimizer_states}, {3, m.activations},
                        {4, m.communication_buffers}, {5, m.reserved}}) {
      mem[static_cast<size_t>(i)].values.push_back(v);
    }
  }
  page.chart(svg::stacked_bars("HBM per GPU by pipeline rank", stages, mem, "B",
                               {run.capacity_bytes, "HBM capacity " + gib(run.capacity_bytes)}),
             "The memory model's peak per GPU of each pipeline rank (the activations at the schedule's peak).");

  page.heading("Timeline of the step");
  const auto& g = *s.graph;
  std::vector<std::string> cats;
  for (int k = 0; k < wt::kCategories; ++k) cats.push_back(wt::category_name(static_cast<wt::OpCategory>(k)));
  const std::string tl = timeline_of(f, cats, [&](const sim::OpRecord& r) {
    return static_cast<size_t>(run.workload.categories.at(g.program_id(r.rank))[r.op]);
  }, "One step, per simulated GPU and stream");
  if (!tl.empty()) {
    page.chart(tl, "Each row is a stream of a simulated GPU; a pixel's colour is the kind of work that kept it "
                   "busiest, darker when busier.");
  }
  add_links(page, summary);
  add_notes(page, s);
  return page.render();
}

std::string inference_html(const InferenceFigures& f, const Json& summary) {
  const Scenario& s = *f.scenario;
  HtmlReport page("gcsim report: " + s.config_path);
  const auto& m = f.metrics;
  std::vector<std::pair<std::string, std::string>> facts{
      {"config", s.config_path},
      {"cluster", std::to_string(s.cluster.nodes) + " node(s) x " + std::to_string(s.cluster.gpus_per_node) + " " +
                      s.cluster.gpu.name},
      {"requests", std::to_string(m.completed) + " completed, " + std::to_string(m.rejected) + " rejected"},
      {"TTFT p50 / p99", human_time(m.ttft.p50) + " / " + human_time(m.ttft.p99)},
      {"TPOT p50 / p99", human_time(m.tpot.p50) + " / " + human_time(m.tpot.p99)},
      {"E2E p50 / p99", human_time(m.e2e.p50) + " / " + human_time(m.e2e.p99)},
      {"throughput", fmt("%.4g requests/s", m.requests_per_s) + ", " + fmt("%.4g output tokens/s", m.output_tokens_per_s)}};
  if (m.goodput_requests_per_s) {
    facts.emplace_back("goodput", fmt("%.4g requests/s", *m.goodput_requests_per_s) + " (SLO attainment " +
                                      fmt("%.1f%%", 100 * m.slo_attainment.value_or(0)) + ")");
  }
  page.facts(facts);

  page.heading("Latency");
  std::vector<double> ttft, tpot, e2e;
  for (const inf::Request& r : f.outcome.requests) {
    if (r.prefill_only || r.finish < r.arrival || r.first_token == sim::Time::max() || !r.done()) continue;
    ttft.push_back((r.first_token - r.arrival).seconds());
    e2e.push_back((r.finish - r.arrival).seconds());
    if (r.num_output > 1) tpot.push_back((r.finish - r.first_token).seconds() / static_cast<double>(r.num_output - 1));
  }
  page.chart(svg::line_chart("TTFT and TPOT, cumulative distribution", "latency", "s", "fraction of requests", "%",
                             {svg::cdf("TTFT", ttft), svg::cdf("TPOT", tpot)}),
             "Time to first token and time per output token (vLLM's benchmark_serving definitions), per request.");
  page.chart(svg::line_chart("End-to-end latency, cumulative distribution", "latency", "s", "fraction of requests",
                             "%", {svg::cdf("E2E", e2e)}));

  page.heading("Throughput over time");
  const double end = f.outcome.end.seconds();
  const int bins = 60;
  const double w = end > 0 ? end / bins : 1.0;
  std::vector<double> prefill(bins, 0), decode(bins, 0);
  for (const inf::StepRecord& st : f.outcome.steps) {
    const int b = std::clamp(static_cast<int>(st.end.seconds() / w), 0, bins - 1);
    prefill[static_cast<size_t>(b)] += static_cast<double>(st.prefill_tokens) / w;
    decode[static_cast<size_t>(b)] += static_cast<double>(st.tokens - st.prefill_tokens) / w;
  }
  svg::LineSeries p{"prefill tokens/s", {}}, d{"decode tokens/s", {}};
  for (int b = 0; b < bins; ++b) {
    p.points.emplace_back((b + 0.5) * w, prefill[static_cast<size_t>(b)]);
    d.points.emplace_back((b + 0.5) * w, decode[static_cast<size_t>(b)]);
  }
  page.chart(svg::line_chart("Tokens processed per second, all replicas", "simulated time", "s", "tokens/s", "",
                             {p, d}),
             "Engine steps binned by when they end, in " + human_time(w) + " bins.");

  page.heading("Memory per GPU against HBM");
  std::vector<std::string> pools{"serving replicas"};
  std::vector<const inf::MemoryPlan*> plans{&f.setup->memory};
  if (f.setup->prefill_memory.capacity.count() > 0 && f.setup->prefill_memory.num_blocks > 0) {
    pools = {"decode replicas", "prefill replicas"};
    plans.push_back(&f.setup->prefill_memory);
  }
  std::vector<svg::Series> mem{{"weights", {}}, {"activations", {}}, {"outside PyTorch", {}}, {"KV cache", {}}};
  for (const auto* plan : plans) {
    mem[0].values.push_back(plan->weights.as_double());
    mem[1].values.push_back(plan->activations.as_double());
    mem[2].values.push_back(plan->non_torch.as_double());
    mem[3].values.push_back(std::max(0.0, plan->kv_cache.as_double()));
  }
  const double cap = f.setup->memory.capacity.as_double();
  page.chart(svg::stacked_bars("HBM per GPU by pool", pools, mem, "B", {cap, "HBM capacity " + gib(cap)}),
             "vLLM's start-up plan: what is left of gpu_memory_utilization x HBM after weights, activations and "
             "buffers becomes KV-cache blocks.");

  page.heading("Engine steps per replica");
  std::vector<std::string> rows;
  for (const auto& r : f.outcome.replicas) rows.push_back("replica " + std::to_string(r.index));
  std::vector<svg::Span> spans;
  for (const inf::StepRecord& st : f.outcome.steps) {
    const size_t cat = st.prefills > 0 && st.decodes > 0 ? 2 : st.prefills > 0 ? 0 : 1;
    spans.push_back({static_cast<size_t>(std::max(0, st.replica)), st.start.seconds(), st.end.seconds(), cat});
  }
  if (!rows.empty() && !spans.empty()) {
    page.chart(svg::timeline("Engine steps over the run", rows, {"prefill", "decode", "mixed"}, spans, end),
               "Each replica's steps: prefill only, decode only, or both in one batch.");
  }
  add_links(page, summary);
  add_notes(page, s);
  return page.render();
}

std::string run_html(const RunFigures& f, const Json& summary) {
  const Scenario& s = *f.scenario;
  HtmlReport page("gcsim report: " + s.config_path);
  page.facts(head_facts(f));
  if (summary.contains("results") && summary["results"].is_array() && !summary["results"].empty()) {
    page.heading("Bus bandwidth against message size");
    std::map<std::string, svg::LineSeries> by_op;
    for (const auto& r : summary["results"]) {
      const std::string op = r.value("op", "") + " (" + std::to_string(r.value("ranks", 0)) + " GPUs)";
      by_op[op].name = op;
      by_op[op].points.emplace_back(std::log10(std::max(1.0, num(r, "bytes"))), num(r, "busbw_GBps"));
    }
    std::vector<svg::LineSeries> lines;
    for (auto& [k, l] : by_op) lines.push_back(l);
    page.chart(svg::line_chart("Bus bandwidth (nccl-tests definition)", "message size", "log10B", "GB/s", "", lines));
  }
  page.heading("Timeline");
  const std::string tl = op_kind_timeline(f, "Ops per GPU and stream");
  if (tl.empty()) {
    page.paragraph("No op took simulated time.");
  } else {
    page.chart(tl, "Each row is a stream of one GPU (the first " + std::to_string(kMaxTimelineRanks) +
                       " GPUs at most); a pixel's colour is the kind of op that kept it busiest.");
  }
  page.heading("Peak memory per GPU against HBM");
  std::vector<std::string> gpus;
  svg::Series peak{"peak HBM", {}};
  for (size_t r = 0; r < f.memory_peak.size() && r < 64; ++r) {
    gpus.push_back(std::to_string(r));
    peak.values.push_back(f.memory_peak[r].as_double());
  }
  const double cap = s.cluster.gpu.hbm_capacity.as_double();
  page.chart(svg::stacked_bars("Peak HBM per GPU", gpus, {peak}, "B", {cap, "HBM capacity " + gib(cap)}),
             "The HBM ledger's peak on each GPU (alloc and free ops).");
  add_links(page, summary);
  add_notes(page, s);
  return page.render();
}

}  // namespace gcsim::cli
