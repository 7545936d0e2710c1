#include "sim/cli/serving_plan.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "sim/report/format.h"
#include "sim/report/html_report.h"
#include "sim/scenario/inference_workload_loader.h"
#include "sim/cli/plan_command.h"
#include "sim/cli/point_runner.h"
#include "sim/report/svg_chart.h"
#include "sim/config/config_error.h"

namespace gcsim::cli {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using sim::config::ConfigError;
using Clock = std::chrono::steady_clock;

namespace {

// One deployment of the search.
struct Deployment {
  int tp = 1, pp = 1, replicas = 1;
  int64_t max_num_seqs = 256, max_num_batched_tokens = 8192;
  bool chunked_prefill = true;
  int gpus() const { return tp * pp * replicas; }
  std::string label() const {
    return "TP" + std::to_string(tp) + (pp > 1 ? " PP" + std::to_string(pp) : "") + " x " +
           std::to_string(replicas) + " replica" + (replicas > 1 ? "s" : "") + ", max_num_seqs " +
           std::to_string(max_num_seqs) + ", budget " + std::to_string(max_num_batched_tokens) +
           (chunked_prefill ? ", chunked prefill" : ", no chunking");
  }
  std::vector<std::string> overrides() const {
    return {"workload.serving.tp=" + std::to_string(tp),
            "workload.serving.pp=" + std::to_string(pp),
            "workload.serving.replicas=" + std::to_string(replicas),
            "workload.serving.scheduler.max_num_seqs=" + std::to_string(max_num_seqs),
            "workload.serving.scheduler.max_num_batched_tokens=" + std::to_string(max_num_batched_tokens),
            std::string("workload.serving.scheduler.enable_chunked_prefill=") + (chunked_prefill ? "true" : "false")};
  }
};

struct Candidate {
  Deployment d;
  std::string rule, reason;  // pruned when rule is not empty
  RunPoint run;              // on the analytical network model
  RunPoint final;            // on the config's network model (top K), when it is not analytical
  const RunPoint& best_run() const { return final.status == "ok" ? final : run; }
};

std::vector<Deployment> enumerate(const Scenario& s) {
  const auto& sv = s.inference->serving;
  const int gpus = s.cluster.total_gpus();
  const bool v1 = sv.scheduler.mode == workloads::inference::SchedulerMode::v1;
  std::vector<Deployment> out;
  for (int tp = 1; tp <= std::min(gpus, s.cluster.gpus_per_node); tp *= 2) {
    for (int pp : {1, 2}) {
      if (tp * pp > gpus || pp > sv.model.layers) continue;
      const int most = gpus / (tp * pp);
      std::vector<int> replicas;
      for (int r = 1; r <= most; r *= 2) replicas.push_back(r);
      if (replicas.back() != most) replicas.push_back(most);
      for (int r : replicas) {
        for (int64_t seqs : {64, 128, 256}) {
          for (int64_t budget : {2048, 8192}) {
            for (bool chunked : {true, false}) {
              if (chunked && !v1) continue;  // vllm-v0's chunking is not modelled
              out.push_back({tp, pp, r, seqs, budget, chunked});
            }
          }
        }
      }
    }
  }
  return out;
}

double goodput(const Json& s) { return std::max(0.0, summary_number(s, "goodput_requests_per_s")); }
double attainment(const Json& s) { return std::max(0.0, summary_number(s, "slo_attainment")); }
double p99(const Json& s, const char* key) {
  return s.contains(key) ? std::max(0.0, summary_number(s[key], "p99")) : 0.0;
}

// `v` to three significant digits: goodputs that differ only in when the
// last request ended compare equal, and the latencies decide.
double three_digits(double v) {
  if (!(v > 0)) return 0;
  const double unit = std::pow(10.0, std::floor(std::log10(v)) - 2);
  return std::round(v / unit) * unit;
}

// Meets the attainment target first, then the most goodput per GPU (three
// significant digits), then the fewest GPUs, the lowest p99 TTFT and TPOT;
// the listing order breaks ties.
std::vector<size_t> rank(const std::vector<Candidate>& c, double target, bool final) {
  std::vector<size_t> ok;
  for (size_t i = 0; i < c.size(); ++i) {
    if ((final ? c[i].best_run() : c[i].run).status == "ok") ok.push_back(i);
  }
  std::stable_sort(ok.begin(), ok.end(), [&](size_t a, size_t b) {
    const Json& x = (final ? c[a].best_run() : c[a].run).summary;
    const Json& y = (final ? c[b].best_run() : c[b].run).summary;
    const bool mx = attainment(x) >= target, my = attainment(y) >= target;
    if (mx != my) return mx;
    const double gx = three_digits(goodput(x) / c[a].d.gpus()), gy = three_digits(goodput(y) / c[b].d.gpus());
    if (gx != gy) return gx > gy;
    if (c[a].d.gpus() != c[b].d.gpus()) return c[a].d.gpus() < c[b].d.gpus();
    if (p99(x, "ttft_s") != p99(y, "ttft_s")) return p99(x, "ttft_s") < p99(y, "ttft_s");
    return p99(x, "tpot_s") < p99(y, "tpot_s");
  });
  return ok;
}

Json deployment_json(const Candidate& c) {
  const Json& s = c.best_run().summary;
  return Json{{"tp", c.d.tp},
              {"pp", c.d.pp},
              {"replicas", c.d.replicas},
              {"gpus_used", c.d.gpus()},
              {"max_num_seqs", c.d.max_num_seqs},
              {"max_num_batched_tokens", c.d.max_num_batched_tokens},
              {"enable_chunked_prefill", c.d.chunked_prefill},
              {"label", c.d.label()},
              {"goodput_requests_per_s", goodput(s)},
              {"goodput_per_gpu", goodput(s) / c.d.gpus()},
              {"slo_attainment", attainment(s)},
              {"ttft_p99_s", p99(s, "ttft_s")},
              {"tpot_p99_s", p99(s, "tpot_s")},
              {"output_tokens_per_s", s.contains("throughput") ? summary_number(s["throughput"], "output_tokens_per_s") : 0.0},
              {"fits", true},
              {"point", c.best_run().dir.filename().string()}};
}

}  // namespace

int serving_plan(const Scenario& s, const ServingPlanArgs& a, const MpiWorld& world, std::ostream& out) {
  const auto wall_start = Clock::now();
  const auto& sv = s.inference->serving;
  if (!sv.slo.any()) {
    fail_config_key(a.config, a.sets, "workload", "slo",
                    "an inference plan ranks deployments by goodput: set workload.slo (ttft, tpot or e2e)");
  }
  if (sv.rate_search.enabled) {
    fail_config_key(a.config, a.sets, "workload.requests.arrival", "rate",
                    "gcsim plan serves the config's load: give a fixed arrival rate, not `search`");
  }
  if (sv.disaggregation.enabled) {
    fail_config_key(a.config, a.sets, "workload.serving", "disaggregation",
                    "gcsim plan does not search disaggregated deployments yet");
  }
  const double target = sv.rate_search.target;
  const fs::path dir(a.out_dir);
  auto progress = [&](const std::string& line) {
    if (a.quiet) return;
    const std::string who = world.size() > 1 ? " rank " + std::to_string(world.rank()) + ":" : "";
    std::fprintf(stderr, "[plan]%s %s\n", who.c_str(), line.c_str());
  };

  // 1. Each deployment through the loader's rules, on -j threads.
  std::vector<Candidate> cands;
  for (const Deployment& d : enumerate(s)) cands.push_back({d, "", "", {}, {}});
  progress(std::to_string(cands.size()) + " deployments; checking them on " + std::to_string(a.jobs) + " thread(s)");
  {
    auto work = [&](size_t t, size_t n) {
      for (size_t i = t; i < cands.size(); i += n) {
        LoadOptions load;
        load.overrides = a.sets;
        for (auto& o : cands[i].d.overrides()) load.overrides.push_back(std::move(o));
        try {
          load_scenario(a.config, load);
        } catch (const ConfigError& e) {
          cands[i].rule = e.key().empty() ? "config" : e.key();
          cands[i].reason = e.message();
        }
      }
    };
    std::vector<std::thread> pool;
    for (size_t t = 1; t < static_cast<size_t>(a.jobs); ++t) pool.emplace_back(work, t, static_cast<size_t>(a.jobs));
    work(0, static_cast<size_t>(a.jobs));
    for (auto& th : pool) th.join();
  }
  std::map<std::string, size_t> pruned;
  std::map<std::string, std::string> examples;
  std::vector<size_t> alive;
  for (size_t i = 0; i < cands.size(); ++i) {
    if (cands[i].rule.empty()) {
      alive.push_back(i);
    } else {
      ++pruned[cands[i].rule];
      examples.emplace(cands[i].rule, cands[i].reason);
    }
  }

  // 2. Every survivor simulated on the analytical network model.
  const auto run_all = [&](const std::vector<size_t>& which, const char* sub, bool analytical, RunPoint Candidate::*slot) {
    std::vector<RunPoint> points;
    for (size_t i : which) {
      RunPoint p;
      p.overrides = a.sets;
      for (auto& o : cands[i].d.overrides()) p.overrides.push_back(std::move(o));
      if (analytical) p.overrides.push_back("network.model=analytical");
      char name[32];
      std::snprintf(name, sizeof name, "%04zu", i);
      p.dir = dir / sub / name;
      points.push_back(std::move(p));
    }
    run_points(a.config, points, a.jobs, world, {[&](const RunPoint& p, size_t done, size_t mine) {
      const Candidate& c = cands[which[static_cast<size_t>(&p - points.data())]];
      progress(std::to_string(done) + "/" + std::to_string(mine) + " " + c.d.label() + ": " +
               (p.status == "ok" ? fmt("goodput %.4g req/s", goodput(p.summary)) + fmt(", attainment %.3f", attainment(p.summary))
                                 : p.status + ": " + p.reason));
    }, {}});
    for (size_t k = 0; k < which.size(); ++k) cands[which[k]].*slot = std::move(points[k]);
  };
  progress(std::to_string(alive.size()) + " deployments left; simulating them on the analytical network model");
  run_all(alive, "points", true, &Candidate::run);
  // 3. The top K again on the config's own network model.
  if (s.network.model != "analytical") {
    std::vector<size_t> top = rank(cands, target, false);
    if (top.size() > static_cast<size_t>(a.top)) top.resize(static_cast<size_t>(a.top));
    progress("simulating the top " + std::to_string(top.size()) + " on the " + s.network.model + " network model");
    run_all(top, "final", false, &Candidate::final);
  }
  const std::vector<size_t> ranked = rank(cands, target, true);
  if (!world.root()) return 0;

  const bool have_best = !ranked.empty() && attainment(cands[ranked.front()].best_run().summary) >= target;
  if (have_best) {
    const Candidate& b = cands[ranked.front()];
    LoadOptions load;
    load.overrides = b.best_run().overrides;
    const Scenario best = load_scenario(a.config, load);
    std::ofstream f(dir / "best.yaml");
    f << "# gcsim plan's best deployment for " << a.config << ": " << b.d.label() << "\n"
      << "# goodput " << fmt("%.6g", goodput(b.best_run().summary)) << " requests/s on " << b.d.gpus()
      << " GPUs (" << b.best_run().dir.string() << "); `gcsim run` on this file reproduces it.\n"
      << sim::config::to_documented_yaml(best.resolved, *best.source);
  }
  const double wall = std::chrono::duration<double>(Clock::now() - wall_start).count();

  // plan.json
  Json j = Json::object();
  j["config"] = a.config;
  j["kind"] = "inference";
  j["model"] = sv.model.name;
  j["gpu"] = s.cluster.gpu.name;
  j["gpus"] = s.cluster.total_gpus();
  j["network_model"] = s.network.model;
  j["slo_attainment_target"] = target;
  j["best"] = have_best ? deployment_json(cands[ranked.front()]) : Json(nullptr);
  j["candidates_evaluated"] = cands.size();
  j["candidates_simulated"] = alive.size();
  Json pj = Json::object(), ej = Json::object();
  for (const auto& [rule, n] : pruned) pj[rule] = n;
  for (const auto& [rule, m] : examples) ej[rule] = m;
  j["pruned"] = pj;
  j["pruned_examples"] = ej;
  Json ranked_j = Json::array();
  for (size_t i : ranked) ranked_j.push_back(deployment_json(cands[i]));
  j["ranked"] = ranked_j;
  j["wall_time_s"] = wall;
  {
    std::ofstream f(dir / "plan.json");
    f << j.dump(2) << "\n";
  }
  // plan.csv: every deployment.
  {
    std::ofstream f(dir / "plan.csv");
    f << "candidate,tp,pp,replicas,gpus_used,max_num_seqs,max_num_batched_tokens,enable_chunked_prefill,status,rule,"
         "goodput_requests_per_s,goodput_per_gpu,slo_attainment,ttft_p99_s,tpot_p99_s\n";
    for (size_t i = 0; i < cands.size(); ++i) {
      const Candidate& c = cands[i];
      const RunPoint& r = c.best_run();
      f << i << "," << c.d.tp << "," << c.d.pp << "," << c.d.replicas << "," << c.d.gpus() << "," << c.d.max_num_seqs
        << "," << c.d.max_num_batched_tokens << "," << (c.d.chunked_prefill ? "true" : "false") << ","
        << (c.rule.empty() ? r.status : "pruned") << "," << c.rule;
      if (r.status == "ok") {
        f << "," << fmt("%.6g", goodput(r.summary)) << "," << fmt("%.6g", goodput(r.summary) / c.d.gpus()) << ","
          << fmt("%.4f", attainment(r.summary)) << "," << fmt("%.6g", p99(r.summary, "ttft_s")) << ","
          << fmt("%.6g", p99(r.summary, "tpot_s")) << "\n";
      } else {
        f << ",,,,,\n";
      }
    }
  }
  // plan.md and stdout.
  std::ostringstream md;
  size_t npruned = 0;
  for (const auto& [rule, n] : pruned) npruned += n;
  md << "# gcsim plan: serving " << sv.model.name << " on up to " << s.cluster.total_gpus() << " x " << s.cluster.gpu.name
     << "\n\n" << cands.size() << " deployments evaluated: " << npruned << " pruned, " << alive.size()
     << " simulated on the analytical network model"
     << (s.network.model != "analytical" ? ", the top " + std::to_string(a.top) + " again on `" + s.network.model + "`" : "")
     << ". Ranked by goodput per GPU among those whose SLO attainment reaches " << fmt("%.0f%%", 100 * target) << ".\n\n";
  md << "| pruned by | deployments | for example |\n|---|---:|---|\n";
  for (const auto& [rule, n] : pruned) {
    std::string ex = examples[rule];
    std::replace(ex.begin(), ex.end(), '|', '/');
    md << "| `" << rule << "` | " << n << " | " << ex << " |\n";
  }
  if (have_best) {
    const Candidate& b = cands[ranked.front()];
    md << "\n## Best: " << b.d.label() << "\n\n" << fmt("%.4g", goodput(b.best_run().summary) / b.d.gpus())
       << " good requests/s per GPU on " << b.d.gpus() << " GPUs, SLO attainment "
       << fmt("%.1f%%", 100 * attainment(b.best_run().summary)) << ". `best.yaml` runs it.\n";
  } else {
    md << "\n**No deployment reaches the SLO attainment target.**\n";
  }
  md << "\n## Deployments, best first\n\n| # | deployment | GPUs | goodput/GPU | goodput | SLO attainment | TTFT p99 | TPOT p99 |\n"
     << "|---:|---|---:|---:|---:|---:|---:|---:|\n";
  for (size_t k = 0; k < ranked.size() && k < 20; ++k) {
    const Candidate& c = cands[ranked[k]];
    const Json& r = c.best_run().summary;
    md << "| " << k + 1 << " | " << c.d.label() << " | " << c.d.gpus() << " | " << fmt("%.4g", goodput(r) / c.d.gpus())
       << " | " << fmt("%.4g", goodput(r)) << " | " << fmt("%.1f%%", 100 * attainment(r)) << " | "
       << human_time(p99(r, "ttft_s")) << " | " << human_time(p99(r, "tpot_s")) << " |\n";
  }
  md << "\nWall time " << fmt("%.1f s", wall) << ".\n";
  {
    std::ofstream f(dir / "plan.md");
    f << md.str();
  }
  // report.html: goodput against GPUs with the Pareto front.
  {
    HtmlReport page("gcsim plan: serving " + sv.model.name);
    page.facts({{"config", a.config},
                {"deployments", std::to_string(cands.size()) + " evaluated, " + std::to_string(npruned) + " pruned, " +
                                    std::to_string(alive.size()) + " simulated"},
                {"best", have_best ? cands[ranked.front()].d.label() : "none reaches the target"},
                {"wall time", fmt("%.1f s", wall)}});
    std::vector<svg::ScatterPoint> pts;
    for (size_t k = 0; k < ranked.size(); ++k) {
      const Candidate& c = cands[ranked[k]];
      const bool meets = attainment(c.best_run().summary) >= target;
      pts.push_back({static_cast<double>(c.d.gpus()), goodput(c.best_run().summary), k == 0 && have_best ? 2 : meets ? 0 : 1,
                     k == 0 && have_best ? "best" : "", meets});
    }
    page.heading("Goodput against GPUs");
    page.chart(svg::scatter("Goodput (requests/s meeting every SLO) against GPUs used", "GPUs", "", "goodput (req/s)", "",
                            pts, {"meets the attainment target", "misses it", "best"}),
               "Each deployment simulated. The front: the most goodput for no more GPUs.");
    std::vector<std::vector<std::string>> rows;
    for (size_t k = 0; k < ranked.size() && k < 20; ++k) {
      const Candidate& c = cands[ranked[k]];
      const Json& r = c.best_run().summary;
      rows.push_back({std::to_string(k + 1), c.d.label(), std::to_string(c.d.gpus()), fmt("%.4g", goodput(r) / c.d.gpus()),
                      fmt("%.1f%%", 100 * attainment(r)), human_time(p99(r, "ttft_s")), human_time(p99(r, "tpot_s"))});
    }
    page.heading("Deployments, best first");
    page.table({"#", "deployment", "GPUs", "goodput/GPU", "SLO attainment", "TTFT p99", "TPOT p99"}, rows);
    page.write(dir / "report.html");
  }
  out << "gcsim plan: wrote " << (dir / "plan.json").string() << ", plan.csv, plan.md, report.html"
      << (have_best ? ", best.yaml" : "") << "\n\n" << md.str();
  return 0;
}

}  // namespace gcsim::cli
