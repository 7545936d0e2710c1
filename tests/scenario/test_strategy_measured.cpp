// Strategies on 4 GPUs against a real step: framework_step.py's Llama-style
// model (8 layers, hidden 4096, MHA, SwiGLU, RMSNorm, rotary, vocabulary
// 32000, sequence 4096; AMP over fp32 parameters, clip + foreach AdamW,
// global batch 8 sequences) trained one step under DP4 (DDP), TP4, TP2xDP2,
// PP2xDP2, PP4 and TP2xPP2 (Megatron-style TP, 1F1B over NCCL send/recv),
// in eager PyTorch and torch.compile'd (calibration/microbench/
// strategy_step_bench.py; MEASURED below, with provenance in its folder's
// README). The configs are calibration/validation/strategy_step/*.yaml;
// calibration/fit/strategy_compare.py prints the same comparison as a table.
//
// Compared, per strategy and build: the step (the slowest rank's median of
// back-to-back steps), the kernel classes (torch.profiler's kernel time per
// step, the mean over the 4 ranks, as gcsim's breakdown.kernel_classes) and
// the peak memory (torch.cuda.max_memory_allocated of the fullest rank
// against gcsim's memory.peak_bytes_per_gpu); and the order of the
// strategies by step time. Tolerances: see kTolerance.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "catch.h"
#include "scenario/run_gcsim.h"

using gcsim::test::read_json;
using gcsim::test::run_gcsim;
using gcsim::test::source_path;
using gcsim::test::TempDir;

namespace {

constexpr const char* kMeasured =
    "calibration/measurements/h100-x4/strategy_step_2026-11-26/strategy_step.json";
constexpr const char* kGpu = "h100-sxm";
// The same bench on 4 H200s (held out: nothing was fitted to it; the
// framework passes were fitted on one H200's single-GPU step).
constexpr const char* kMeasuredH200 =
    "calibration/measurements/h200-x4/strategy_step_2026-11-26/strategy_step.json";
constexpr const char* kGpuH200 = "h200-sxm";
// A second model on 4 H100s, held out (`strategy_step_bench.py --model gqa`,
// measured after gcsim's predictions were committed, c0bf800): hidden 3072,
// 24 query and 8 KV heads (GQA), SwiGLU 8192, Llama 3's vocabulary of
// 128256, sequence 4096; configs calibration/validation/strategy_step_gqa.
constexpr const char* kMeasuredGqa =
    "calibration/measurements/h100-x4/strategy_step_gqa_2026-11-27/strategy_step.json";
// The same bench on a second 4x H100 host 12 minutes later (the call asked
// for H200s; the steps within -1.7 .. +0.1% of the first host's).
constexpr const char* kMeasuredGqaB =
    "calibration/measurements/h100-x4/strategy_step_gqa_2026-11-27b/strategy_step.json";

const char* const kClasses[] = {"gemm", "attention", "elementwise+norm", "optimizer"};

// Tolerances. Steps: issue 16's bar (mean 5%, max 10% per build), met on
// both GPUs with the configs' `cluster.clocks: model` (each measured point
// is seconds of load, so the power cap sets the clock). Each step starts
// from its own periodic clock state (cluster.clock_start: auto, sim/cli/
// clock_warmup.h; at 1980 MHz: the optimizer's memory-bound passes end the
// step under the cap): H100 eager -2.9 .. +3.1% (mean 2.2%), compiled
// -6.0 .. +3.7% (3.0%); H200 eager -4.5 .. +2.6% (1.6%), compiled -7.1 ..
// +2.5% (3.0%). Started from back-to-back GEMMs' state instead, with
// DDP's buckets (grad_buckets.h): H100 eager -1.5 .. +5.0% (mean 1.9%), compiled -5.0 ..
// +3.2% (mean 2.9%); H200 (held out) eager -3.1 .. +2.8% (mean 1.6%),
// compiled -6.5 .. +1.7% (mean 2.9%). With whole-layer buckets: H100 eager
// -0.8 .. +5.1% (1.8%), compiled -4.3 .. +3.0% (2.6%); H200 eager -2.2 ..
// +3.6% (1.6%), compiled -5.5 .. +1.5% (2.6%).
// Under `rested` they were H100 compiled -8.6 .. -1.9% (mean 5.0%) and H200
// compiled -10.2 .. -5% (mean 6.6%): the compiled GEMM class, -4 .. -11%
// rested, is -2 .. +5% under the power model (DP's all-reduce beside the
// backward, models/gpu/interference.h, and a denser step holding the clock
// lower). History: before the framework passes were split by access
// pattern one bandwidth fraction per framework made H100's eager
// elementwise + norm class +18 .. +32% and the eager steps +5.4 .. +13.1%.
// Classes: GEMM at issue 16's 10% (eager -4 .. +1%, compiled -2 .. +5%);
// elementwise + norm within 16% eager (+4 .. +15%: DP4 +15% on the H100s,
// +11% on the H200s) and 14% compiled (-2 .. +13%). DP4's eager class is
// gcsim's charge for the memory-bound kernels beside DDP's all-reduces:
// since the DP buckets follow DDP's (grad_buckets.h), about 200 of rank
// 0's memory kernels run beside an all-reduce, as in the real step (43.9
// ms of its elementwise + norm kernels beside NCCL), where the real step
// with its all-reduces on against the same step under no_sync adds 4.5 ms
// to them besides DDP's copies
// (calibration/measurements/h100-x4/ddp_bucket_timeline_2026-11-26).
// gcsim charged +16.9 ms while a memory kernel was one tile per SM (an SM
// an all-reduce holds cost it a second wave: the class +18%, bound 19%);
// now its work spreads over the SMs left in one wave at the bandwidth
// those SMs draw (models/gpu/memory_spread.h, measured on an H100 with
// SMs held: 1.00x at 108 of 132 SMs), so the holds cost 3.4 ms and the
// extra is 13.9 ms (calibration/fit/ddp_bucket_compare.py). What is left
// is the HBM share NCCL takes (interference.h), which on 2x H100 matches
// kernels beside 256 MiB all-reduces (streaming 1.19-1.26x measured,
// 1.22x gcsim; layer_norm forward 1.43-1.59x, 1.43x;
// calibration/measurements/h100-x2/memkern_2026-11-27), the sizes of
// DDP's buckets here (64-500 MiB: its parameters exceed the 25 MiB cap);
// why the 4-GPU step loses only 4.5 ms is not settled (NCCL's 4-rank
// channels and HBM traffic are not measured beside kernels). With
// whole-layer buckets (before) the class was +12% eager, +15% compiled. Compiled: the loss's
// SM-bound reduction passes run at the capped clock (+13% -> +15% on DP4
// against rested; calibration/fit/reduction_kernels_2026-11-26.md); what
// is left is the plain kernels at the H200-fitted vectorized
// fraction); attention 8% (cuDNN's kernels, -4.4 .. +5.6% on the H100s
// with the grid schedule, below; 2% above the worst for run-to-run spread;
// before the tail 0 .. -16%: measured on 2x
// H100, calibration/measurements/h100-x2/attention_beside_nccl_2026-11-26,
// cuDNN's one-CTA-per-SM kernels run 1.13-1.18x beside an NCCL all-reduce
// kernel that only waits for its peer and 1.06-1.13x beside a waiting
// recv; gcsim's NCCL kernels hold their SMs from their rank's issue, p2p
// included (network.holds_from_issue, on; models/cluster/nccl_kernel_holds.h,
// held against those cases in test_waiting_nccl_measured.cpp), and the
// pipeline receives are posted where the 1F1B issues them
// (pipeline_receives.h), but the class does not move (TP2xPP2 -16%), nor
// should it: every p2p of the measured 1F1B is waited on before the next
// kernel, so nothing runs beside attention there. The gap is the causal
// grid's tail (calibration/measurements/h100-sxm/attention_grid_size_
// 2026-11-27: alone on one H100, b1 h16 costs 26% / 21% more per unit of
// work than b8 h8), which gcsim's wave model did not charge; now charged
// (models/gpu/attention_grid_tail.h): TP2xPP2 -16 -> +3% both builds;
// with cuDNN's forward as two 64-row CTAs a SM, a lone one latency-bound
// (the same schedule, fitted on the serving grids too), +3.3% eager, +5.6%
// compiled;
// with DDP's buckets the DP4 all-reduce after
// {norm2 + proj} runs beside the attention backward as in the real step,
// whose cuDNN backward it makes 12.4 instead of 11.3 ms, but it becomes
// ready at the attention's launch and waits for its last wave, so gcsim
// charges it nothing: the class stays -5% eager, -0% compiled on DP4);
// optimizer 6% (+3% everywhere). Peak memory within 5% (-3.2 .. +1.1%,
// PP4 corrected as below).
constexpr double kStep = 0.10, kStepMean = 0.05;
constexpr double kGemm = 0.10, kAttention = 0.08, kOptimizer = 0.06;
// Memory-bound kernels also slow at the capped clock below the clock their
// SMs need (memory_clock.h, measured on an H100: layer norm 0.88, GELU 0.92
// of their rested rate), which the spread model above does not offset: DP4
// eager is +15% with the spread alone and +18% with both, DP4 compiled
// +10% and +16% (strategy_compare.py on the merged tree, 2026-11-27). The
// class misses issue 16's 10% on DP4 and PP4/PP2xDP2 compiled; these bounds
// hold today's misses from growing (the remaining NCCL HBM share beside the
// low-efficiency passes: README Status), they are not the bar.
// Since the issue-bound memory passes no longer take the GEMMs' arithmetic
// stretch beside a collective (network.interference.memory_sensitivity 0,
// measured in the real DP4 step: silu_backward 1.31x, the SwiGLU cat 1.12x
// beside DDP's all-reduces; models/gpu/interference.h) DP4 eager is +16%
// on the H100s (+18% before) and +9% on the H200s (+12%); compiled
// unchanged (+16% / +8%). Eager bound 0.20 -> 0.18 (2 points above the worst).
// With the TP loss as the eager vocabulary-parallel cross entropy the
// benchmark runs in both builds (framework_profile.h, 2026-11-27; it was
// the compiled build's fused loss, 6 of its 52 B an element): compiled
// TP2xPP2 -7 -> +3% (H100s) and -13 -> -3% (H200s), but TP4 +6 -> +16% and
// -0 -> +10%, TP2xDP2 +1 -> +14% and -6 -> +7%: the missing loss had hidden
// the compiled norms' separate weight-gradient pass, which inductor fuses
// into the input-gradient kernel at 8192 tokens a rank and more (6.45 ms of
// TP4's class; calibration/fit/strategy_ranks_2026-11-27.md). The compiled
// bound stays 0.18 (TP4 on the H100s, 2 points below it).
constexpr double kElementwiseEager = 0.18, kElementwiseCompile = 0.18;
constexpr double kPeak = 0.05;
// Strategy order: pairs whose measured steps are closer than 3% are not
// held to an order (the H100's compiled TP2xPP2 and PP2xDP2, 2.5% apart,
// and the H200's compiled DP4 and TP2xDP2, 1.8% apart, come out swapped);
// every pair further apart is (check_order's note).
constexpr double kOrderGap = 0.03;

// PP4 ran right after PP2xDP2 and kept its DDP buckets until it ended: its
// memory between steps is 3.83 GB above the 0.07 GB every other point
// leaves beside parameters, Adam's states and buckets (the 2026-11-26 runs:
// PP2xDP2's 940,605,440 parameters x 4 B of fp32 bucket). What a rank holds
// between steps beyond its parameters, Adam's m and v (12 B a parameter)
// and, with DP, DDP's fp32 bucket (4 B), above the least any rank of the
// run holds, is such a leftover when over 0.5 GB, and comes off that rank's
// peak (strategy_compare.py's leftovers()).
constexpr double kLeftoverFloor = 0.5e9;

struct Point {
  std::string strategy, build;
  std::string configs;  // folder of the model's configs under calibration/validation
  double step_s = 0, peak_bytes = 0;
  std::map<std::string, double> classes;  // seconds per step
  // NCCL kernel time per step as the profiler counts it (waits included),
  // the mean over each pipeline stage's ranks (gcsim: per_rank's
  // communication_with_waits_s of the stage's simulated rank).
  std::map<int, double> stage_communication;
};

std::string config_of(const Point& m) {
  static const std::map<std::string, std::string> files = {
      {"DP4", "dp4"}, {"TP4", "tp4"}, {"TP2xDP2", "tp2_dp2"},
      {"PP2xDP2", "pp2_dp2"}, {"PP4", "pp4"}, {"TP2xPP2", "tp2_pp2"},
      {"DP4flush", "dp4_flush"}};
  return source_path("calibration/validation/" + m.configs + "/" + files.at(m.strategy) + ".yaml");
}

// Elementwise, norm and what the profiler's name rules leave unclassed
// together: the profiles' passes do not follow PyTorch's kernel names one
// to one (a norm's mul is "elementwise" to the profiler).
std::string class_key(const std::string& c) {
  return c == "gemm" || c == "attention" || c == "optimizer" || c == "communication"
             ? c
             : "elementwise+norm";
}

std::vector<Point> load_measured(const char* file, const std::string& configs = "strategy_step") {
  std::vector<Point> out;
  const auto doc = read_json(source_path(file));
  // Each rank's leftover from an earlier point (kLeftoverFloor).
  const auto held = [](const auto& r, const auto& rank) {
    const double kept = 12.0 + (r["dp"].template get<int>() > 1 ? 4.0 : 0.0);
    return rank["memory_between_steps_bytes"].template get<double>() -
           rank["params"].template get<double>() * kept;
  };
  double floor = 1e30;
  for (const auto& r : doc["results"]) {
    for (const auto& rank : r["ranks"]) floor = std::min(floor, held(r, rank));
  }
  for (const auto& r : doc["results"]) {
    Point p;
    p.strategy = r["strategy"].get<std::string>();
    p.build = r["build"].get<std::string>();
    p.configs = configs;
    p.step_s = r["step_us"].get<double>() * 1e-6;
    for (const auto& rank : r["ranks"]) {
      const double left = held(r, rank) - floor;
      p.peak_bytes = std::max(p.peak_bytes, rank["peak_memory_bytes"].get<double>() -
                                                (left > kLeftoverFloor ? left : 0.0));
    }
    const double ranks = static_cast<double>(r["ranks"].size());
    const int stages = r["pp"].get<int>();
    for (const auto& rank : r["ranks"]) {
      for (const auto& [name, v] : rank["classes"].items()) {
        p.classes[class_key(name)] += v["us"].get<double>() * 1e-6 / ranks;
      }
      const auto& comm = rank["classes"]["communication"];
      p.stage_communication[rank["pp_rank"].get<int>()] +=
          comm["us"].get<double>() * 1e-6 * stages / ranks;
    }
    out.push_back(p);
  }
  return out;
}

const std::vector<Point>& measured() {
  static const std::vector<Point> points = load_measured(kMeasured);
  return points;
}

const std::vector<Point>& measured_h200() {
  static const std::vector<Point> points = load_measured(kMeasuredH200);
  return points;
}

const std::vector<Point>& measured_gqa() {
  static const std::vector<Point> points = load_measured(kMeasuredGqa, "strategy_step_gqa");
  return points;
}

// On 4 H200s with the seventh strategy (DP4flush), predicted before the run
// (calibration/validation/strategy_step_gqa/PREDICTIONS_H200.txt).
constexpr const char* kMeasuredGqaH200 =
    "calibration/measurements/h200-x4/strategy_step_gqa_2026-11-27/strategy_step.json";

const std::vector<Point>& measured_gqa_h200() {
  static const std::vector<Point> points = load_measured(kMeasuredGqaH200, "strategy_step_gqa");
  return points;
}

const std::vector<Point>& measured_gqa_b() {
  static const std::vector<Point> points = load_measured(kMeasuredGqaB, "strategy_step_gqa");
  return points;
}

const Point& simulated(const Point& m, const char* gpu = kGpu) {
  static std::map<std::string, Point> cache;
  const std::string key = m.configs + "/" + m.strategy + "/" + m.build + "/" + gpu;
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  TempDir tmp;
  const std::string framework = m.build == "eager" ? "pytorch-eager" : "torch-compile";
  const auto r = run_gcsim({"run", config_of(m), "-s", "workload.framework=" + framework,
                            "-s", std::string("cluster.gpu=") + gpu, "-o",
                            (tmp / "out").string(), "-q"});
  REQUIRE(r.exit_status == 0);
  const auto s = read_json(tmp / "out" / "summary.json");
  Point p = m;
  p.step_s = s["step_time_s"].get<double>();
  p.peak_bytes = s["memory"]["peak_bytes_per_gpu"].get<double>();
  p.classes.clear();
  for (const auto& [name, v] : s["breakdown"]["kernel_classes"].items()) {
    p.classes[class_key(name)] += v.get<double>();
  }
  p.classes["communication"] = s["breakdown"]["communication_with_waits_s"].get<double>();
  p.stage_communication.clear();
  for (const auto& rank : s["per_rank"]) {
    p.stage_communication[rank["pipeline_rank"].get<int>()] =
        rank["communication_with_waits_s"].get<double>();
  }
  return cache.emplace(key, p).first->second;
}

double rel(double sim, double meas) { return (sim - meas) / meas; }

// Checks the GEMM, attention, elementwise + norm and optimizer classes of
// simulated point `s` against measured `m` (communication is compared per
// stage, below: the profiler's NCCL kernels include their waits).
void check_classes(const Point& m, const Point& s) {
  const std::map<std::string, double> tolerance = {
      {"gemm", kGemm},
      {"attention", kAttention},
      {"elementwise+norm", m.build == "eager" ? kElementwiseEager : kElementwiseCompile},
      {"optimizer", kOptimizer}};
  for (const char* c : kClasses) {
    INFO(m.strategy << " " << m.build << " " << c);
    CHECK(std::abs(rel(s.classes.at(c), m.classes.at(c))) <= tolerance.at(c));
  }
}

// Checks that every pair of one build whose measured steps differ by more
// than kOrderGap comes out of gcsim (on `gpu`) in the measured order;
// returns how many pairs were held to it.
int check_order(const std::vector<Point>& pts, const char* gpu) {
  int pairs = 0;
  for (size_t i = 0; i < pts.size(); ++i) {
    for (size_t j = i + 1; j < pts.size(); ++j) {
      const Point& a = pts[i];
      const Point& b = pts[j];
      if (a.build != b.build || std::abs(rel(a.step_s, b.step_s)) <= kOrderGap) continue;
      // Every pair is held since TP2xDP2's TP and DP all-reduces share
      // each GPU's NVLink (models/cluster/scale_up_ports.h): the H100's
      // eager DP4 / TP2xDP2 (4.4% apart, 300.4 vs 313.9 ms) was swapped
      // (gcsim 303.2 vs 301.4 ms; now 303.2 vs 309.6). The H200's compiled
      // TP2xPP2 / PP2xDP2 (3.8% apart, 269.5 vs 259.7 ms), excepted until
      // then, already came out in order (262.8 vs 260.7 ms; now 272.8 vs
      // 260.8).
      INFO(a.strategy << " vs " << b.strategy << " (" << a.build << ")");
      CHECK((simulated(a, gpu).step_s < simulated(b, gpu).step_s) == (a.step_s < b.step_s));
      ++pairs;
    }
  }
  return pairs;
}

}  // namespace

TEST_CASE("strategies on 4 GPUs: step time per strategy against the measurement",
          "[cli][training][framework][strategy]") {
  std::map<std::string, std::vector<double>> errors;
  REQUIRE(measured().size() == 12);  // six strategies, eager and compiled
  for (const Point& m : measured()) {
    INFO(m.strategy << " " << m.build);
    const double e = rel(simulated(m).step_s, m.step_s);
    CHECK(std::abs(e) <= kStep);
    errors[m.build].push_back(std::abs(e));
  }
  for (const auto& [build, e] : errors) {
    INFO(build);
    double mean = 0;
    for (double x : e) mean += x / static_cast<double>(e.size());
    CHECK(mean <= kStepMean);
  }
}

TEST_CASE("strategies on 4 GPUs: kernel classes and peak memory against the measurement",
          "[cli][training][framework][strategy]") {
  // Communication is not compared: the profiler's NCCL kernels include the
  // time they wait for their peer (pipeline bubbles, DP all-reduces posted
  // beside the backward); gcsim counts transfers.
  for (const Point& m : measured()) {
    const Point& s = simulated(m);
    check_classes(m, s);
    INFO(m.strategy << " " << m.build << " peak memory");
    CHECK(std::abs(rel(s.peak_bytes, m.peak_bytes)) <= kPeak);
  }
}

TEST_CASE("strategies on 4 GPUs: gcsim ranks the strategies as measured",
          "[cli][training][framework][strategy]") {
  // Every pair of one build whose measured steps differ by more than
  // kOrderGap must come out in the same order.
  CHECK(check_order(measured(), kGpu) == 24);
}

TEST_CASE("strategies on 4 H200s (held out): steps, peak memory and order",
          "[cli][training][framework][strategy]") {
  // Nothing fitted to this run. Under the configs' power-model clocks:
  // eager -3.1 .. +2.8% (mean 1.6%), compiled -6.5 .. +1.7% (mean 2.9%),
  // issue 16's bar for both builds. Under `rested` the compiled steps were
  // -10.2 .. -5% (mean 6.6%; GEMM class -5 .. -10%, lowest beside DP's
  // all-reduce). Peak memory -3.2 .. +1.1%.
  std::map<std::string, std::vector<double>> errors;
  REQUIRE(measured_h200().size() == 12);
  for (const Point& m : measured_h200()) {
    INFO(m.strategy << " " << m.build);
    const Point& s = simulated(m, kGpuH200);
    const double e = rel(s.step_s, m.step_s);
    CHECK(std::abs(e) <= kStep);
    errors[m.build].push_back(std::abs(e));
    CHECK(std::abs(rel(s.peak_bytes, m.peak_bytes)) <= kPeak);
  }
  for (const auto& [build, e] : errors) {
    INFO(build);
    double mean = 0;
    for (double x : e) mean += x / static_cast<double>(e.size());
    CHECK(mean <= kStepMean);
  }
  // 26 pairs are more than 3% apart (eager TP4/TP2xPP2 and TP2xPP2/PP4,
  // compiled DP4/TP2xDP2 and TP2xPP2/PP4 are not); all 26 held.
  CHECK(check_order(measured_h200(), kGpuH200) == 26);
}

TEST_CASE("strategies on 4 GPUs: the pipelines' NCCL time per stage as the profiler counts it",
          "[cli][training][framework][strategy]") {
  // The profiler's NCCL kernels run from their issue, so a pipeline's are
  // mostly waiting: for the upstream stage's activations, the downstream's
  // gradients, and, in clip_grad_norm_'s all-reduce of the squared norm over
  // the model-parallel (TP x PP) group, for the first stage's last backward
  // (25.4 ms on TP2xPP2's last stage, eager, one kernel: strategy_ranks_
  // 2026-11-27). gcsim counts the same from each op's issue (summary.json
  // breakdown.communication_with_waits_s, per_rank for each stage). Before
  // the norm's all-reduce was emitted (optimizer_step.h) the last stages
  // read 28.7 vs 86.8 ms (PP4 eager) and the class -9 .. -27%.
  // Now: the class -6 .. +5%, stages -11.5 .. +10.9% (the first stage,
  // whose norm all-reduce waits for no one, is the high end: +0.2 .. +10.9%;
  // the last stage of PP2xDP2 compiled the low end).
  // Bounds: the class mean at issue 16's 10%; each stage 12%: the two H100
  // runs (11-26 and its repeat) differ per stage by up to 3% (one stage's
  // two DP ranks differ by up to 8%, PP2xDP2 compiled's last stage 75.5 vs
  // 81.6 ms: which replica waits is not the same run to run).
  const std::map<std::string, std::pair<const std::vector<Point>*, const char*>> runs = {
      {"H100", {&measured(), kGpu}}, {"H200 (held out)", {&measured_h200(), kGpuH200}}};
  int stages = 0;
  for (const auto& [label, run] : runs) {
    for (const Point& m : *run.first) {
      if (m.stage_communication.size() < 2) continue;  // no pipeline
      const Point& s = simulated(m, run.second);
      INFO(label << " " << m.strategy << " " << m.build);
      CHECK(std::abs(rel(s.classes.at("communication"), m.classes.at("communication"))) <= 0.10);
      REQUIRE(s.stage_communication.size() == m.stage_communication.size());
      for (const auto& [stage, seconds] : m.stage_communication) {
        INFO("stage " << stage << ": gcsim " << s.stage_communication.at(stage) * 1e3
                      << " ms, measured " << seconds * 1e3 << " ms");
        CHECK(std::abs(rel(s.stage_communication.at(stage), seconds)) <= 0.12);
        ++stages;
      }
    }
  }
  CHECK(stages == 2 * (4 + 2 + 2) * 2);  // PP4, PP2xDP2, TP2xPP2; two builds; two GPUs
}

TEST_CASE("a held-out model (GQA, vocabulary 128256) on 4 H100s (two hosts) and 4 H200s: steps, "
          "classes, peak memory and order",
          "[cli][training][framework][strategy]") {
  // Nothing fitted to this model's shapes: gcsim's steps were committed
  // before the run (c0bf800) and came out eager -0.5 .. +2.2% (mean 1.3%),
  // compiled -2.0 .. +3.2% (mean 1.6%), the order of both builds as
  // measured. Its peaks showed what the first model hid: the loss's working
  // tensors at 4x the vocabulary (the fp32 logits of 8192 tokens x 128256
  // are 4.2 GB): gcsim was -16 .. +3% (DP4 eager 39.8 vs 47.3 GiB) and,
  // with them counted (memory_model.h, loss_workspace_bytes: the byte
  // counts of F.cross_entropy's backward and the vocabulary-parallel loss's
  // forward, not fitted), -2.9 .. +3.2%; the first model's peaks moved
  // -3.2 .. +1.1% -> -3.2 .. +1.8% on both GPUs.
  // Classes: GEMM -7 .. +0%, attention -5 .. +6%, elementwise + norm
  // +1 .. +10% (DP4 compiled +10%), optimizer +2 .. +3%; the bounds are the
  // first model's (kGemm, kAttention, kOptimizer, kElementwise*), so this
  // set is held to what the fitted one is.
  // The second host: eager 1.5% (max 3.3%), compiled 1.9% (3.2%), order
  // held; the peaks are the same to 0.01 GiB.
  // 4 H200s, all seven strategies (DP4flush too): eager 1.3% (max 2.6%),
  // compiled 2.4% (3.8%), both orders as measured, peaks as on the H100s;
  // DP4flush's copies are compared with the optimizer (the flush test).
  struct Run {
    const std::vector<Point>* points;
    const char* gpu;
    size_t size;
    int pairs;
  };
  for (const Run& run : {Run{&measured_gqa(), kGpu, 12, 29}, Run{&measured_gqa_b(), kGpu, 12, 29},
                         Run{&measured_gqa_h200(), kGpuH200, 14, 40}}) {
    std::map<std::string, std::vector<double>> errors;
    REQUIRE(run.points->size() == run.size);
    for (const Point& m : *run.points) {
      INFO(run.gpu << " " << m.strategy << " " << m.build);
      const Point& s = simulated(m, run.gpu);
      const double e = rel(s.step_s, m.step_s);
      CHECK(std::abs(e) <= kStep);
      errors[m.build].push_back(std::abs(e));
      CHECK(std::abs(rel(s.peak_bytes, m.peak_bytes)) <= kPeak);
      if (m.strategy == "DP4flush") {
        CHECK(std::abs(rel(s.classes.at("optimizer") + s.classes.at("elementwise+norm"),
                           m.classes.at("optimizer") + m.classes.at("elementwise+norm"))) <= kOptimizer);
      } else {
        check_classes(m, s);
      }
    }
    for (const auto& [build, e] : errors) {
      INFO(build);
      double mean = 0;
      for (double x : e) mean += x / static_cast<double>(e.size());
      CHECK(mean <= kStepMean);
    }
    // Pairs more than 3% apart: eager 14 of 15 (DP4 / TP2xDP2, 239.8 vs
    // 246.9 ms, 2.9%, is not; 2.5% on the second host), compiled all 15 (the
    // closest DP4 / TP2xDP2, 192.4 vs 200.1 ms); all 29 held on each host.
    // The H200s: TP2xDP2 / DP4flush (0.9% and 1.2% apart) not held.
    CHECK(check_order(*run.points, run.gpu) == run.pairs);
  }
}

TEST_CASE("data parallelism after the flush (no overlap), both models, beside DP4 on one host",
          "[cli][training][framework][strategy]") {
  // strategy_step_bench.py's DP4flush (calibration/measurements/h100-x4/
  // strategy_dp_flush_2026-11-27): no DDP; after the backward the
  // gradients are copied into one flat fp32 buffer, all-reduced once and
  // copied back; gcsim's `overlap_grad_reduce: false` (one reduce after the
  // flush, DDP's copies in and out). Its steps were committed before the
  // run (13bc783): first model eager +0.2%, compiled +0.3%; the held-out
  // model +0.6%, -0.1%; DP4 beside them +1.1 .. +1.3%.
  // Classes: the copies are torch._foreach_copy_ kernels, which the
  // profiler's name rules count as optimizer (multi_tensor_apply) and gcsim
  // as elementwise (DDP's bucket copies): the two classes are compared
  // together here (+2.1 .. +4.3%), held to kOptimizer's 6%.
  for (const auto& [file, configs] :
       {std::pair{"calibration/measurements/h100-x4/strategy_dp_flush_2026-11-27/mha/strategy_step.json",
                  "strategy_step"},
        std::pair{"calibration/measurements/h100-x4/strategy_dp_flush_2026-11-27/gqa/strategy_step.json",
                  "strategy_step_gqa"}}) {
    const std::vector<Point> pts = load_measured(file, configs);
    REQUIRE(pts.size() == 4);  // DP4 and DP4flush, eager and compiled
    for (const Point& m : pts) {
      INFO(configs << " " << m.strategy << " " << m.build);
      const Point& s = simulated(m);
      CHECK(std::abs(rel(s.step_s, m.step_s)) <= kStep);
      CHECK(std::abs(rel(s.peak_bytes, m.peak_bytes)) <= kPeak);
      if (m.strategy != "DP4flush") continue;
      // The reduce after the flush waits for no backward: within the
      // step's bar of the measured step, and its sum of copies, Adam and
      // elementwise passes as above.
      CHECK(std::abs(rel(s.step_s, m.step_s)) <= kStepMean);
      const double sim = s.classes.at("optimizer") + s.classes.at("elementwise+norm");
      const double meas = m.classes.at("optimizer") + m.classes.at("elementwise+norm");
      CHECK(std::abs(rel(sim, meas)) <= kOptimizer);
      for (const char* c : {"gemm", "attention"}) {
        INFO(c);
        CHECK(std::abs(rel(s.classes.at(c), m.classes.at(c))) <= kGemm);
      }
    }
    // No overlap costs 6-7% here (DP4 299.9 / 239.2 ms, after the flush
    // 319.7 / 253.0 eager), in gcsim too.
    CHECK(check_order(pts, kGpu) == 2);
  }
}
