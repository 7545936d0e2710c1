// Serving steps against a real one (issue 16): calibration/microbench/
// serving_step_bench.py's Llama-2-70B-shaped decoder (8 layers) on 4 H100
// SXM, TP4 and TP2, decode (batch 1 .. 256, KV 512 .. 8192) eager and with
// the step in a CUDA graph, prefill (512 .. 8192 tokens) eager; MEASURED
// below, provenance in its folder's README. The configs are
// calibration/validation/serving/*.yaml (one per point, pytorch-eager);
// calibration/fit/serving_fit.py fits the two serving values and prints
// the same comparison as a table.
//
// Compared end to end, per point and build: gcsim's step (summary.json's
// breakdown.decode_steps / prefill_steps mean_step_s: the run's one step of
// that kind) against the replica's slowest rank's median step; and per
// class on the eager build (gemm, attention, elementwise + norm,
// communication: gcsim's kernel_classes_s against rank 0's torch.profiler
// sums). "Before" is the model without the framework key (vLLM's fused
// kernels, no host cost: -s workload.framework=vllm). Held out: every
// point but the fit points (kFitHost for the host cost, kFitBandwidth for
// the bandwidth fraction; serving_framework.cpp). Tolerances: see the
// constants below.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "catch.h"
#include "scenario/run_gcsim.h"
#include "scenario/serving_runs.h"
#include "workloads/inference/serving_framework.h"

using gcsim::test::read_json;
using gcsim::test::rel;
using gcsim::test::serving_config;
using gcsim::test::serving_step;
using gcsim::test::source_path;

namespace {

constexpr const char* kMeasured =
    "calibration/measurements/h100-x4/serving_step_2026-11-26/serving_step.json";

struct Key {
  int tp = 0;
  std::string kind;
  int64_t batch = 0, kv = 0;
  bool operator<(const Key& o) const {
    return std::tie(tp, kind, batch, kv) < std::tie(o.tp, o.kind, o.batch, o.kv);
  }
  bool operator==(const Key& o) const { return !(*this < o) && !(o < *this); }
};

// calibration/fit/serving_fit.py's FIT_HOST and FIT_BANDWIDTH.
const Key kFitHost[] = {{4, "decode", 1, 512}, {4, "decode", 256, 2048}};
const Key kFitBandwidth = {4, "prefill", 1, 8192};

bool fitted(const Key& k) {
  return k == kFitBandwidth || std::find(std::begin(kFitHost), std::end(kFitHost), k) != std::end(kFitHost);
}

const char* const kClasses[] = {"gemm", "attention", "elementwise+norm", "communication"};

// Tolerances, from the held-out errors on 4 H100s (calibration/fit/
// serving_fit_2026-11-26.md) and what they stand for:
// - prefill of 2048 tokens and more, eager (GPU-bound): 8% (+2.0 .. -5.8%;
//   it was 10% for +2.3 .. -8.9% while serving ran at rested clocks: the
//   configs' clock_start: steady gives each step the power governor's
//   clock of the step repeated back to back, as the bench ran it, and
//   TP2's 4096/8192-token prefills settle at ~1820/1800 MHz);
// - shorter prefills and eager decode are host-bound, and this machine's
//   host speed is bimodal (the two TP2 replicas, same shapes at the same
//   time, 10.3 vs 16.5 ms; the TP4 512-token prefill 7.8 ms in one call,
//   14.3 in the next): prefill < 2048 within 25% (-18.6 .. +2.6%), eager
//   decode within 60% (-14.5 .. +58.1%, the fast host mode +45 .. +58%),
//   mean |error| of the eager build 25% (18.2%);
// - graph decode (GPU-bound, no host): -8.3 .. -0.1%, mean 4.2% (it was
//   +3.7 .. +17.9%, mean 9.8%, while an eager pass of a few thousand
//   elements put its SM work on one 64 KiB tile, one SM, instead of its
//   launch's CTAs; +9.2 .. +31.4% when a graph node also paid the stream's
//   2.4 us launch latency; -4.2 .. +2.2%, mean 1.9% since each NCCL kernel
//   node in the graph costs graph_collective_overhead: held to issue 16's
//   bar since, 10% and mean 5%). What is left: the decode attention class at
//   batch 1-8 (-9 .. -22% until cuDNN's decode terms were fitted kernel by
//   kernel, 2026-11-28: -13 .. 0%), the GEMMs (-1 .. -9%) and the eager passes' kernels
//   (calibration/fit/serving_small_kernels_2026-11-27.md): held to
//   [-12%, +12%] (the lower bound was 0 while every pass was too long),
//   mean at most 6%, before the graph's collective nodes were costed.
constexpr double kPrefillLong = 0.08, kPrefillShort = 0.25, kEagerDecode = 0.60;
constexpr double kEagerMean = 0.25, kGraphMax = 0.10, kGraphMean = 0.05;
// Classes on the eager build: GEMM within 10% (-9 .. +1%; 12% for -11 .. +2%
// at rested clocks, the TP2 prefills' GEMMs now at their steady clock); attention
// within 15% on decode (-13 .. 0% since cuDNN's split threshold, CTA latency
// floor and reduction kernel are modelled, fitted on single kernels,
// calibration/fit/decode_attention_split_2026-11-28.md; issue 16's 10% but
// for batch 1 at 8K keys, -13%, where cuDNN cuts the keys into more pieces
// than FlashAttention-2's rule; it was -22 .. +7% and held to 25% before)
// and 20% on prefill (-18 .. -4%; 22% for -20 .. -4% at rested clocks;
// -40 .. -13% before cuDNN's forward ran
// as its 64-row CTAs, two a SM, a lone one latency-bound:
// attention_grid_tail.h, the kernels alone within -8 .. +4%,
// calibration/measurements/h100-sxm/serving_kernels_2026-11-27). The class
// is the kernels' profiler durations: each kernel's time in the step less
// the gap before the next kernel (gpu_spec.h launch_gap); the attention
// kernel's model is fitted to profiler durations, so its class leaves out
// the whole launch latency its time in the step carries. What is left is
// not the kernel: TP2's 4096/8192-token prefills ran the kernel 23-25%
// slower in the step than alone (1111 us a layer against 890), where
// gcsim's kernel takes what it takes alone at the step's periodic clock
// (-15 .. -18%; -18 .. -20% at rested clocks: the clock explains a fifth
// of it); elementwise +
// norm within issue 16's 10% on every point (-9 .. +8%). It was held to 15%
// on long prefills and 30% on decode and short prefills (-10 .. +26%) while
// gcsim streamed the decode and 512-token activations from HBM, which the
// step reads back from L2: modelled since 2026-11-28 (models/gpu/
// l2_cache.h; the H100's L2 rate is the H200's scaled to its 50 MiB, so
// this run holds it out; +23% at batch 256 and +27% at 512 tokens before).
// Communication is not compared: the eager NCCL kernels include each rank's
// wait for the slowest host.
constexpr double kGemm = 0.10, kAttentionDecode = 0.15, kAttentionPrefill = 0.20;
constexpr double kElementwise = 0.10;

struct Build {
  double step_us = 0, host_us = 0, kernels = 0;
  std::map<std::string, double> classes;  // us per step
};

struct Point {
  Key key;
  std::map<std::string, Build> builds;  // "eager", "graph"
};

std::string class_key(const std::string& c) {
  return c == "gemm" || c == "attention" || c == "communication" ? c : "elementwise+norm";
}

std::vector<Point> measured() {
  static const std::vector<Point> points = [] {
    std::vector<Point> out;
    const auto doc = read_json(source_path(kMeasured));
    for (const auto& r : doc["results"]) {
      Point p;
      p.key = {r["tp"].get<int>(), r["kind"].get<std::string>(), r["batch"].get<int64_t>(),
               r["kv_len"].get<int64_t>()};
      for (const auto& [name, b] : r["builds"].items()) {
        Build m;
        m.step_us = b["step_us"].get<double>();
        m.kernels = b["kernels_per_step"].get<double>();
        if (b.contains("host_us") && b["host_us"].is_number()) m.host_us = b["host_us"].get<double>();
        for (const auto& [c, v] : b["classes_rank0"].items()) m.classes[class_key(c)] += v["us"].get<double>();
        p.builds[name] = m;
      }
      out.push_back(p);
    }
    return out;
  }();
  return points;
}

// gcsim's step of the point's kind: `before` runs vLLM's kernels.
Build simulated(const Key& k, const std::string& build, bool before) {
  std::vector<std::string> overrides;
  if (build == "graph") overrides.push_back("workload.serving.cuda_graphs=true");
  if (before) overrides.push_back("workload.framework=vllm");
  const auto b = serving_step(serving_config("serving", k.tp, k.kind, k.batch, k.kv), k.kind, overrides);
  Build out;
  out.step_us = b["mean_step_s"].get<double>() * 1e6;
  out.kernels = b["kernels_per_step"].get<double>();
  for (const auto& [c, v] : b["kernel_classes_s"].items()) out.classes[class_key(c)] += v.get<double>() * 1e6;
  return out;
}

}  // namespace

TEST_CASE("serving fit: the fitted values are the fit points' and physical", "[validation][serving]") {
  const auto t = gcsim::workloads::inference::eager_serving_traits();
  // The host cost per launch: PyTorch's dispatcher and a CUDA launch take a
  // few us, NCCL's enqueue a few tens; this machine's eager decode steps
  // ran 25 - 45 us per launch. Fitted on kFitHost: gcsim's eager step there
  // with the fitted cost lands on the measured steps' mean.
  CHECK(t.host_us_per_kernel >= 2.0);
  CHECK(t.host_us_per_kernel <= 60.0);
  double meas = 0, sim = 0;
  for (const auto& p : measured()) {
    if (std::find(std::begin(kFitHost), std::end(kFitHost), p.key) == std::end(kFitHost)) continue;
    meas += p.builds.at("eager").step_us;
    sim += simulated(p.key, "eager", /*before=*/false).step_us;
  }
  CHECK(sim == Approx(meas).epsilon(0.005));
  CHECK(t.elementwise_bandwidth > 0.0);
  CHECK(t.elementwise_bandwidth <= 1.0);
}

TEST_CASE("serving steps against serving_step_bench on 4 H100s", "[validation][serving]") {
  std::map<std::string, std::vector<double>> before, after;
  int compared = 0;
  for (const auto& p : measured()) {
    const bool long_prefill = p.key.kind == "prefill" && p.key.kv >= 2048;
    for (const auto& [build, m] : p.builds) {
      const Build b = simulated(p.key, build, /*before=*/true);
      const Build a = simulated(p.key, build, /*before=*/false);
      INFO("TP" << p.key.tp << " " << p.key.kind << " b" << p.key.batch << " kv" << p.key.kv << " " << build
                << ": measured " << m.step_us << " us, before " << b.step_us << ", after " << a.step_us);
      before[build].push_back(std::abs(rel(b.step_us, m.step_us)));
      if (fitted(p.key)) continue;
      const double e = rel(a.step_us, m.step_us);
      after[build].push_back(std::abs(e));
      ++compared;
      if (build == "graph") {
        CHECK(std::abs(e) <= kGraphMax);
        continue;
      }
      CHECK(std::abs(e) <= (p.key.kind == "decode" ? kEagerDecode : long_prefill ? kPrefillLong : kPrefillShort));
      for (const char* c : {"gemm", "attention", "elementwise+norm"}) {
        const double ms = m.classes.at(c), gs = a.classes.at(c);
        INFO(c << ": measured " << ms << " us, gcsim " << gs);
        if (std::string(c) == "gemm") {
          CHECK(std::abs(rel(gs, ms)) <= kGemm);
        } else if (std::string(c) == "attention") {
          CHECK(std::abs(rel(gs, ms)) <= (p.key.kind == "decode" ? kAttentionDecode : kAttentionPrefill));
        } else {
          CHECK(std::abs(rel(gs, ms)) <= kElementwise);
        }
      }
    }
  }
  // 30 points, 20 with a graph build; 3 fitted.
  CHECK(compared == 27 + 18);
  const auto mean = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return s / static_cast<double>(v.size());
  };
  // The framework key's point: eager PyTorch is not vLLM's kernels. Before
  // it, every eager step came out 30 - 89% fast (mean 60.5%).
  CHECK(mean(after["eager"]) <= kEagerMean);
  CHECK(mean(after["eager"]) < mean(before["eager"]) / 2);
  CHECK(mean(after["graph"]) <= kGraphMean);
}
