// Two CUDA streams sharing one H100, measured
// (calibration/measurements/h100-sxm/concurrent_kernels_2026-11-22.json,
// calibration/microbench/concurrent_kernels.py) and replayed through
// `gcsim run` on h100-sxm: each case's prediction checked exactly against a
// hand computation from the model's closed forms, then against the
// measurement.
//
// The model, h100-sxm preset (B = 3350 GB/s x 0.90 = 3015 GB/s achieved;
// bf16 989.4 TF/s x 0.81 over 132 SMs; 1 us per wave; 2 us launch latency):
//  - a memory kernel has min(ceil(bytes / 64 KiB), 132) = 132 tiles; each SM
//    gets B / active_sms, so a wave over all 132 active SMs moves its tiles
//    at the full B whoever runs on them;
//  - kernels landing in the same instant split the free SMs evenly
//    (water-filling, 66 / 66 here); a persistent GEMM keeps the SMs it got
//    to its end and never grows.
//
// Hand computation (us, from release at t = 0; "end" is end_s):
//   1 GiB copy alone: 2 + 2^31 B / B + 1            =  715.266550
//   2 copies: each 132 tiles on 66 SMs, 2 waves at 132 active SMs:
//     2 + 2 (2^31 / B + 1)                          = 1428.533100  (2 x solo - 2)
//   GEMM 8192^3: 2048 tiles of 128x256, 2*128*256*8192 flops at
//     989.4e12*0.81/132 flop/s = 88.427405 us (+1 us) per wave:
//     alone 16 waves: 2 + 16 x 89.427405            = 1432.838480
//     beside a copy on 66 SMs: ceil(2048/66) = 32 waves = 2863.676960
//     the copy beside it: 2 waves on 66 SMs         = 1428.533100
//   GEMM 4096^3: 512 tiles, 44.213703 + 1 us per wave:
//     alone ceil(512/132) = 4 waves                 =  182.854812
//     beside layer_norm on 66 SMs: 8 waves          =  363.709624
//   layer_norm 8192x4096 bf16: 2*8192*4096*2 B at B x 0.70, + 1 + 2:
//     alone                                         =   66.595228
//     beside the GEMM: 2 waves on 66 SMs            =  131.190456
//
// Predicted against measured (medians, us; measured = each op's own CUDA
// event pair, the op on stream A enqueued first; wall = both):
//
//   case                              predicted   measured   ratio p/m
//   copy alone                           715.3      713.7     1.00
//   2 copies: each                      1428.5     1419.2-1421.4  1.01
//   GEMM 8192^3 alone                   1432.8     1392.1     1.03
//   GEMM 8192^3 beside copy             2863.7     1470.2     1.95   MISS
//   copy beside GEMM 8192^3             1428.5     2045.1     0.70   MISS
//   wall GEMM 8192^3 + copy             2863.7     2060.0     1.39   MISS
//   GEMM 4096^3 alone                    182.9      174.4     1.05
//   layer_norm alone                      66.6       64.0     1.04
//   GEMM 4096^3 beside layer_norm        363.7      178.5     2.04   MISS
//   layer_norm beside GEMM 4096^3        131.2      227.0     0.58   MISS
//   wall GEMM 4096^3 + layer_norm        363.7      238.5     1.53   MISS
//
// The gap: on the H100 the GEMM enqueued first took (nearly) every SM and
// the memory kernel on the other stream ran mostly after it (the GEMM
// slowed only 5.6 % / 2.4 %; the memory op's time ~= GEMM + its own alone;
// wall 2060 ~= 1392 + 714 - 46, 238.5 ~= 174 + 64). The model instead
// splits the SMs 66 / 66 between kernels landing at the same instant and,
// the GEMM being persistent, keeps it on 66 SMs to its end: twice its solo
// time, so the predicted wall is longer than running the two serially. Not hidden here: the misses are asserted as misses (outside 25 %)
// so that a model change that fixes them shows up here.
#include <cmath>
#include <cstdint>
#include <string>

#include "catch.h"
#include "scenario/run_gcsim.h"

using Json = nlohmann::ordered_json;

namespace {

constexpr int64_t kUs = 1'000'000;  // ps per microsecond

int64_t ps(double seconds) { return std::llround(seconds * 1e12); }
double us(int64_t p) { return static_cast<double>(p) / kUs; }

struct Span {
  int64_t start = -1, end = -1;  // ps
};

Span op(const Json& summary, const std::string& name) {
  for (const auto& o : summary["ops"]) {
    if (o["name"] == name && o["rank"] == 0) {
      return {ps(o["start_s"].get<double>()), ps(o["end_s"].get<double>())};
    }
  }
  FAIL("op " << name << " not found");
  return {};
}

std::string graph(const std::string& ops) {
  return "cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 1}\n"
         "workload:\n  kind: graph\n  ops:\n" +
         ops;
}

const std::string kCopyA = "    - {name: copy_a, rank: 0, op: memcpy, bytes: 1GiB, stream: a}\n";
const std::string kCopyB = "    - {name: copy_b, rank: 0, op: memcpy, bytes: 1GiB, stream: b}\n";
const std::string kGemm8A =
    "    - {name: gemm_a, rank: 0, op: gemm, m: 8192, n: 8192, k: 8192, dtype: bf16, stream: a}\n";
const std::string kGemm4A =
    "    - {name: gemm_a, rank: 0, op: gemm, m: 4096, n: 4096, k: 4096, dtype: bf16, stream: a}\n";
const std::string kNormB =
    "    - {name: ln_b, rank: 0, op: layer_norm, tokens: 8192, hidden: 4096, dtype: bf16, "
    "stream: b}\n";

// |predicted / measured - 1| <= 25 %.
bool within_quarter(double predicted, double measured) {
  return std::abs(predicted / measured - 1.0) <= 0.25;
}

// Hand-computed model figures (ps). Each tile time is rounded once to 1 ps,
// as the model does; sums agree to a few ps.
const double kHbm = 3350e9 * 0.90;                                    // B/s achieved
const int64_t kCopyWave = std::llround(2147483648.0 / kHbm * 1e12) + kUs;  // 1 GiB, 132 SMs
const int64_t kNormWave = std::llround(134217728.0 / (kHbm * 0.70) * 1e12) + kUs;
const double kSmRate = 989.4e12 * 0.81 / 132;
const int64_t kGemm8Wave = std::llround(2.0 * 128 * 256 * 8192 / kSmRate * 1e12) + kUs;
const int64_t kGemm4Wave = std::llround(2.0 * 128 * 256 * 4096 / kSmRate * 1e12) + kUs;

void check_ps(int64_t got, int64_t want) {
  INFO("got " << got << " ps, hand " << want << " ps");
  CHECK(std::llabs(got - want) <= 4);
}

}  // namespace

TEST_CASE("concurrent kernels: the hand figures", "[scenario]") {
  CHECK(kCopyWave == 713'266'550);
  CHECK(kGemm8Wave == 89'427'405);
  CHECK(kGemm4Wave == 45'213'703);
  CHECK(kNormWave == 64'595'228);
}

TEST_CASE("concurrent kernels: two 1 GiB copies share HBM, each ~2x solo", "[scenario]") {
  const Json solo = gcsim::test::run_summary(graph(kCopyA));
  const Span a1 = op(solo, "copy_a");
  CHECK(a1.start == 2 * kUs);
  check_ps(a1.end, 2 * kUs + kCopyWave);  // 715.266550 us

  const Json both = gcsim::test::run_summary(graph(kCopyA + kCopyB));
  const Span a = op(both, "copy_a"), b = op(both, "copy_b");
  CHECK(a.start == 2 * kUs);
  CHECK(b.start == 2 * kUs);
  // 66 SMs each, 132 tiles: 2 waves at the full-GPU share B / 132.
  check_ps(a.end, 2 * kUs + 2 * kCopyWave);  // 1428.533100 us = 2 x solo - 2 us
  check_ps(b.end, 2 * kUs + 2 * kCopyWave);

  // Measured: alone 713.7 (A) / 717.6 (B); together 1419.2 / 1421.4, wall
  // 1431.2 (1.98x). Predicted 715.3 and 1428.5: within 1 %.
  CHECK(std::abs(us(a1.end) / 713.71 - 1.0) <= 0.05);
  CHECK(std::abs(us(a.end) / 1419.17 - 1.0) <= 0.05);
  CHECK(std::abs(us(b.end) / 1421.44 - 1.0) <= 0.05);
  CHECK(std::abs(us(std::max(a.end, b.end)) / 1431.23 - 1.0) <= 0.05);
  // The slowdown ratio itself: 1428.5 / 715.3 = 1.997 against 1.99 measured.
  CHECK(std::abs(us(a.end) / us(a1.end) - 1419.17 / 713.71) <= 0.05);
}

TEST_CASE("concurrent kernels: GEMM 8192^3 beside a 1 GiB copy", "[scenario]") {
  const Json solo = gcsim::test::run_summary(graph(kGemm8A));
  const Span g1 = op(solo, "gemm_a");
  check_ps(g1.end, 2 * kUs + 16 * kGemm8Wave);  // 1432.838480 us
  CHECK(within_quarter(us(g1.end), 1392.13));    // measured alone (rested): 1.03

  const Json both = gcsim::test::run_summary(graph(kGemm8A + kCopyB));
  const Span g = op(both, "gemm_a"), c = op(both, "copy_b");
  // 66 / 66: the persistent GEMM keeps 66 SMs, ceil(2048/66) = 32 waves;
  // the copy runs 2 waves on the other 66.
  check_ps(g.end, 2 * kUs + 32 * kGemm8Wave);  // 2863.676960 us
  check_ps(c.end, 2 * kUs + 2 * kCopyWave);    // 1428.533100 us

  // Measured: GEMM 1470.2, copy 2045.1, wall 2060.0. The model misses by
  // more than 25 % (GEMM 1.95x, copy 0.70x, wall 1.39x): on the H100 the
  // GEMM, enqueued first, kept nearly all SMs and the copy mostly waited.
  CHECK_FALSE(within_quarter(us(g.end), 1470.18));
  CHECK_FALSE(within_quarter(us(c.end), 2045.09));
  CHECK_FALSE(within_quarter(us(std::max(g.end, c.end)), 2060.05));
  // The model's concurrent wall (2863.7) is longer than both ops run one
  // after the other (1432.8 + 715.3 = 2148.1): its 66-SM persistent GEMM
  // costs more than the copy's overlap saves. Measured, the wall (2060.0)
  // is under the serial sum (1392.1 + 713.7 = 2105.8).
  CHECK(us(std::max(g.end, c.end)) > us(g1.end) + 715.27);
  CHECK(2060.05 < 1392.13 + 713.71);
}

TEST_CASE("concurrent kernels: GEMM 4096^3 beside layer_norm 8192x4096", "[scenario]") {
  const Json g_solo = gcsim::test::run_summary(graph(kGemm4A));
  const Span g1 = op(g_solo, "gemm_a");
  check_ps(g1.end, 2 * kUs + 4 * kGemm4Wave);  // 182.854812 us
  CHECK(within_quarter(us(g1.end), 174.37));    // measured alone: 1.05

  const Json n_solo = gcsim::test::run_summary(graph(kNormB));
  const Span n1 = op(n_solo, "ln_b");
  check_ps(n1.end, 2 * kUs + kNormWave);  // 66.595228 us
  CHECK(within_quarter(us(n1.end), 63.98));  // measured alone: 1.04

  const Json both = gcsim::test::run_summary(graph(kGemm4A + kNormB));
  const Span g = op(both, "gemm_a"), n = op(both, "ln_b");
  check_ps(g.end, 2 * kUs + 8 * kGemm4Wave);  // 363.709624 us: ceil(512/66) = 8 waves
  check_ps(n.end, 2 * kUs + 2 * kNormWave);   // 131.190456 us: 2 waves on 66 SMs

  // Measured: GEMM 178.5, layer_norm 227.0, wall 238.5. Misses over 25 %:
  // GEMM 2.04x, layer_norm 0.58x, wall 1.53x (same cause as above).
  CHECK_FALSE(within_quarter(us(g.end), 178.50));
  CHECK_FALSE(within_quarter(us(n.end), 226.98));
  CHECK_FALSE(within_quarter(us(std::max(g.end, n.end)), 238.54));
  // Again the model's wall (363.7) exceeds its serial sum (182.9 + 66.6 =
  // 249.5); measured, the wall (238.5) is the serial sum (174.4 + 64.0).
  CHECK(us(std::max(g.end, n.end)) > us(g1.end) + us(n1.end) - 2.0);
}
