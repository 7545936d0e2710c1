// The CUDA-graph decode step part by part (issue 16): calibration/microbench/
// serving_graph_parts_bench.py on 4 H100s, two hosts (calibration/
// measurements/h100-x4/serving_graph_parts_2026-11-27, provenance in its
// README): both serving models' decode step captured whole and without its
// 18 collectives, TP4 and TP2, batch 1-64 at KV 2048. What the collectives
// cost the step is the difference; gcsim's is its communication class (the
// NCCL kernels' time) plus one graph_collective_overhead per collective
// node. That value (5.2 us in the Hopper presets) is the first model's
// (Llama-2-70B's layer) mean; the second (Llama 3 8B's layer) is held out.
// calibration/fit/graph_parts_compare.py prints the same comparison.
//
// And held out, against issue 16's bar: the graph-parts steps on two more
// hosts. (The whole graph decode of serving_step_bench.py held out on more
// hosts and GPUs: test_serving_predicted.cpp.)
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "catch.h"
#include "scenario/run_gcsim.h"
#include "scenario/serving_runs.h"

using gcsim::test::graph_parts_point;
using gcsim::test::read_json;
using gcsim::test::rel;
using gcsim::test::serving_step;
using gcsim::test::source_path;

namespace {

constexpr const char* kParts[] = {
    "calibration/measurements/h100-x4/serving_graph_parts_2026-11-27/graph_parts.json",
    "calibration/measurements/h100-x4/serving_graph_parts_2026-11-27/v1.0_run/graph_parts.json"};
// Two more hosts, held out (the node cost was fitted on the two above): a
// third 4x H100 (TP4 and TP2) and a 2x H100 (TP2 alone).
constexpr const char* kPartsHeldOutHosts[] = {
    "calibration/measurements/h100-x4/serving_graph_parts_2026-11-27c/graph_parts.json",
    "calibration/measurements/h100-x2/serving_graph_parts_2026-11-27/graph_parts.json"};
// Issue 16's bar for a framework profile's steps: each within 10%, the mean
// within 5%.
constexpr double kStepMax = 0.10, kStepMean = 0.05;
// The collectives' share of the step: the node cost measured per point
// spans 2.8-6.9 us around its 5.2 us mean (graph_parts_compare.py) on a
// collective of 10-25 us in the step, so a point's share may sit up to ~20%
// from one constant.
constexpr double kShare = 0.20;
// Without the node cost the share is 13-46% short (mean 30%); with it the
// mean |error| must be under half of that: the term is what closes it.

struct Point {
  std::string model;
  int tp = 0;
  int64_t batch = 0, kv = 0;
  double full_us = 0, nocomm_us = 0;
  int runs = 0;
};

std::string config_dir(const std::string& model) {
  return model == "llama2_70b_shape_L8" ? "serving" : "serving_l3_8b";
}

// Each point's times, averaged over the runs in `paths`.
std::vector<Point> parts(const std::vector<const char*>& paths) {
  std::map<std::tuple<std::string, int, int64_t, int64_t>, Point> by_key;
  for (const char* path : paths) {
    const auto doc = read_json(source_path(path));  // kept: the loop reads into it
    for (const auto& r : doc["results"]) {
      Point& p = by_key[{r["model"].get<std::string>(), r["tp"].get<int>(), r["batch"].get<int64_t>(),
                         r["kv_len"].get<int64_t>()}];
      p.model = r["model"].get<std::string>();
      p.tp = r["tp"].get<int>();
      p.batch = r["batch"].get<int64_t>();
      p.kv = r["kv_len"].get<int64_t>();
      p.full_us += r["full_us"].get<double>();
      p.nocomm_us += r["nocomm_us"].get<double>();
      ++p.runs;
    }
  }
  std::vector<Point> out;
  for (auto& [k, p] : by_key) {
    p.full_us /= p.runs;
    p.nocomm_us /= p.runs;
    out.push_back(p);
  }
  return out;
}

struct Step {
  double step_us = 0, communication_us = 0;
};

// A graph-parts point: the model's TP4 b8 config at the point's TP, batch
// and KV length; `node_us` < 0 keeps the preset's graph_collective_overhead.
Step part_step(const Point& p, double node_us = -1) {
  std::vector<std::string> o = graph_parts_point(p.tp, p.batch, p.kv);
  if (node_us >= 0) {
    o.push_back("cluster.gpu={preset: h100-sxm, graph_collective_overhead: " + std::to_string(node_us) + "us}");
  }
  const auto b = serving_step("calibration/validation/" + config_dir(p.model) + "/tp4_decode_b8_kv2048.yaml",
                              "decode", o);
  return {b["mean_step_s"].get<double>() * 1e6, b["kernel_classes_s"]["communication"].get<double>() * 1e6};
}

}  // namespace

TEST_CASE("graph decode part by part against serving_graph_parts_bench on 4 H100s", "[validation][serving]") {
  std::map<std::string, std::vector<double>> errors;
  double share_error = 0, share_error_without = 0;
  int compared = 0;
  for (const Point& p : parts({std::begin(kParts), std::end(kParts)})) {
    REQUIRE(p.runs == 2);
    const Step with = part_step(p);
    const Step without = part_step(p, 0.0);
    // 2 all-reduces a layer (8 layers), the embedding's, the logits' gather.
    const double share = with.communication_us + (with.step_us - without.step_us);
    const double share_without = without.communication_us;
    const double measured_share = p.full_us - p.nocomm_us;
    INFO(p.model << " TP" << p.tp << " b" << p.batch << ": step measured " << p.full_us << " us, gcsim "
                 << with.step_us << "; collectives' share measured " << measured_share << " us, gcsim " << share
                 << " (without the node cost " << share_without << ")");
    CHECK(with.step_us - without.step_us == Approx(18 * 5.2).epsilon(1e-6));
    CHECK(std::abs(rel(share, measured_share)) <= kShare);
    share_error += std::abs(rel(share, measured_share));
    share_error_without += std::abs(rel(share_without, measured_share));
    const double e = rel(with.step_us, p.full_us);
    CHECK(std::abs(e) <= kStepMax);
    errors[p.model].push_back(std::abs(e));
    ++compared;
  }
  CHECK(compared == 16);
  CHECK(share_error < share_error_without / 2);
  for (const auto& [model, v] : errors) {
    double s = 0;
    for (double x : v) s += x;
    INFO(model << ": mean |error| " << s / static_cast<double>(v.size()));
    CHECK(s / static_cast<double>(v.size()) <= kStepMean);
  }
}

TEST_CASE("graph decode on two more H100 hosts, held out", "[validation][serving]") {
  // The node cost there: 3.7-5.4 us (mean 4.5) for the first model, 2.8-5.1
  // (4.2) for the second on the 4x H100; 5.4-9.4 (6.6) and 3.3-5.3 (4.4) at
  // TP2 on the 2x H100.
  for (const char* path : kPartsHeldOutHosts) {
    std::map<std::string, std::vector<double>> errors;
    for (const Point& p : parts({path})) {
      const double gcsim = part_step(p).step_us;
      INFO(path << ": " << p.model << " TP" << p.tp << " b" << p.batch << ": measured " << p.full_us
                << " us, gcsim " << gcsim);
      CHECK(std::abs(rel(gcsim, p.full_us)) <= kStepMax);
      errors[p.model].push_back(std::abs(rel(gcsim, p.full_us)));
    }
    CHECK(errors.size() == 2);
    for (const auto& [model, v] : errors) {
      double s = 0;
      for (double x : v) s += x;
      INFO(path << ": " << model);
      CHECK(v.size() >= 4);
      CHECK(s / static_cast<double>(v.size()) <= kStepMean);
    }
  }
}
