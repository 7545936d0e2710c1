// An expert-parallel MoE layer predicted and measured on 2 H200s (NV18):
// calibration/microbench/moe_ep_bench.py, calibration/measurements/h200-x2/
// moe_ep_2026-11-26/moe_ep.json. Each point runs as a graph `moe` op with the
// token copies the bench sent (`expert_tokens`), forward and backward
// separately, with the h200-sxm preset on the flow model; gcsim's layer
// time (its slowest rank) is compared with the measured un-instrumented pass
// (`plain_us_per_rank`, the slower rank).
//
// Fitted on the 2-GPU file: the eager-kernel efficiencies (workloads/moe/
// moe_layer.h, on the hidden-2048 points with 16K and 32K tokens) and the
// host's costs (EagerHostCost: per kernel launch, per NCCL call, the counts'
// .tolist(); on every point, calibration/fit/moe_host_fit.py). The 4-GPU
// file is held out. With 16K and 32K tokens every point and ratio is held to
// 10%. The 4K-token points, where the host decides the time, are held to
// 15% (ratios 25%): there the measurement carries the host's run-to-run
// spread (the 2-GPU hidden-2048 forward measured 4.6% faster at skew 0.8
// than at skew 0, which no GPU cost explains; a ratio takes two such
// points), and the bench's backward starts with the host ahead by the
// forward's tail, which a `pass: bwd` op does not have (host and GPU start
// together), so gcsim's host-bound backward is up to 14% long there.
#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "catch.h"
#include "scenario/run_gcsim.h"

using gcsim::test::read_json;
using gcsim::test::run_summary;
using gcsim::test::source_path;

namespace {

struct Point {
  std::string name;
  int hidden, experts, tokens;
  double skew;
  double measured_us[2];   // fwd, bwd: the slower rank's plain pass
  double simulated_us[2];
};

// `gpus` ranks, each sending expert e the bench's copies: `expert_tokens`
// counts all of them (sources spread evenly).
std::string moe_yaml(const nlohmann::ordered_json& r, const char* pass, int gpus,
                     const std::string& gpu) {
  std::string copies;
  for (const auto& c : r["expert_tokens_per_source"]) {
    copies += (copies.empty() ? "" : ", ") + std::to_string(gpus * c.get<int64_t>());
  }
  return "cluster: {gpu: " + gpu + ", nodes: 1, gpus_per_node: " + std::to_string(gpus) + "}\n"
         "network: {model: flow}\n"
         "workload:\n  kind: graph\n  ops:\n"
         "    - {name: moe, op: moe, tokens: " + std::to_string(r["tokens_per_rank"].get<int>()) +
         ", hidden: " + std::to_string(r["hidden"].get<int>()) +
         ", expert_ffn: " + std::to_string(r["expert_ffn"].get<int>()) +
         ", experts: " + std::to_string(r["experts"].get<int>()) +
         ", top_k: " + std::to_string(r["top_k"].get<int>()) + ", expert_tokens: [" +
         copies + "], pass: " + pass + "}\n";
}

std::vector<Point> points(const char* file, int gpus, const std::string& gpu = "h200-sxm") {
  const auto doc = read_json(source_path(file));
  std::vector<Point> out;
  for (const auto& r : doc["results"]) {
    Point p{r["name"].get<std::string>(), r["hidden"].get<int>(), r["experts"].get<int>(),
            r["tokens_per_rank"].get<int>(),
            r["skew"].get<double>(), {0, 0}, {0, 0}};
    const char* passes[] = {"fwd", "bwd"};
    for (int i = 0; i < 2; ++i) {
      for (const auto& rank : r["plain_us_per_rank"]) {
        p.measured_us[i] = std::max(p.measured_us[i], rank[passes[i]].get<double>());
      }
      const auto s = run_summary(moe_yaml(r, passes[i], gpus, gpu));
      p.simulated_us[i] = s["moe"][0]["layer_time_s"].get<double>() * 1e6;
    }
    out.push_back(p);
  }
  return out;
}

// Each point and its skewed/balanced ratio against the measurement (the
// tolerances and the known gap below).
// Points with fewer than `asserted_from` tokens are printed only.
void check_points(const std::vector<Point>& ps, size_t count, int asserted_from = 0) {
  REQUIRE(ps.size() == count);
  std::map<std::string, const Point*> balanced;  // by shape and tokens
  const auto key = [](const Point& p) {
    return std::to_string(p.hidden) + "/" + std::to_string(p.experts) + "/" + std::to_string(p.tokens);
  };
  for (const Point& p : ps) {
    if (p.skew == 0.0) balanced[key(p)] = &p;
  }
  const char* passes[] = {"fwd", "bwd"};
  for (const Point& p : ps) {
    for (int i = 0; i < 2; ++i) {
      const double err = p.simulated_us[i] / p.measured_us[i] - 1.0;
      const Point& b = *balanced.at(key(p));
      const double ratio_m = p.measured_us[i] / b.measured_us[i];
      const double ratio_s = p.simulated_us[i] / b.simulated_us[i];
      const bool host_bound = p.tokens < 16384;
      std::printf("moe %-32s %s measured %8.0f us gcsim %8.0f us (%+5.1f%%)  skewed/balanced %.3f vs %.3f (%+5.1f%%)%s\n",
                  p.name.c_str(), passes[i], p.measured_us[i], p.simulated_us[i], 100 * err, ratio_m,
                  ratio_s, 100 * (ratio_s / ratio_m - 1),
                  p.tokens < asserted_from ? "  (not asserted)" : host_bound ? "  (host-bound)" : "");
      if (p.tokens < asserted_from) continue;
      INFO(p.name << " " << passes[i]);
      CHECK(std::abs(err) <= (host_bound ? 0.15 : 0.10));
      CHECK(std::abs(ratio_s / ratio_m - 1.0) <= (host_bound ? 0.25 : 0.10));
    }
  }
}

}  // namespace

TEST_CASE("moe layer on 2 H200s: each point and the skewed/balanced ratio within 10%",
          "[moe][measured]") {
  check_points(points("calibration/measurements/h200-x2/moe_ep_2026-11-26/moe_ep.json", 2), 18);
}

// Held out entirely (nothing was fitted on 4 GPUs): the same layers on 4
// H200s, calibration/measurements/h200-x4/moe_ep_2026-11-26/moe_ep.json.
// With the host modelled (2026-11-26): >= 16K tokens, every point -3.8% ..
// +2.1% and ratios -1.3% .. +5.2% (before: hidden-2048 forward -16.5% ..
// -2.5%, ratios up to +11.6%); 4K tokens -9.5% .. +13.6% (before: -46% ..
// +1.9%), ratios up to +19.5% (before +51%).
TEST_CASE("moe layer on 4 H200s (held out): each point and the ratio within 10%",
          "[moe][measured]") {
  check_points(points("calibration/measurements/h200-x4/moe_ep_2026-11-26/moe_ep.json", 4), 18);
}

// Held out on another GPU and another host: 4 H100s (calibration/
// measurements/h100-x4/moe_ep_2026-11-26), three shapes (the two above and a
// top-4 layer with 8 small experts per rank), 4K-32K tokens, nothing
// fitted there. The eager kernels take the H200's bytes per second per SM
// (EagerKernelEfficiency::on_gpu); the host is the H200 machine's fitted
// one, while this machine's host measured about 30 us per launch and
// 75-240 us per NCCL call (its `host_us_rank0`). With 16K and 32K tokens
// every point -8.7% .. +2.9%, ratios +0.2% .. +7.7% (2026-11-26; before the
// per-SM rescale +5% .. +14%); 8K -10.8% .. +6.8%, ratios -12.8% .. +10.2%,
// held to the host-bound 15% / 25%; 4K is printed only: the other host
// decides it and the top-4 layer's backward (72 expert launches) has the
// bench's head start over the forward, which a `pass: bwd` op does not
// (+41% balanced).
TEST_CASE("moe layer on 4 H100s (held out): each point and the ratio within 10%",
          "[moe][measured]") {
  check_points(points("calibration/measurements/h100-x4/moe_ep_2026-11-26/moe_ep.json", 4, "h100-sxm"),
               36, 8192);
}
