// The interference of an NCCL all-reduce and the GEMMs beside it
// (models/gpu/interference.h) against the 2x H200 measurement
// calibration/measurements/h200-x2/gemm_beside_nccl_2026-11-22.json (NCCL
// 2.28.9, 24 channels, rested clocks at the start), replayed as the
// measurement's harness: on both ranks GEMMs back to back on the compute
// stream and all-reduces back to back on the comm stream, released at t = 0
// ("steady": both ~20 ms; "single": one all-reduce beside 2x its length of
// GEMMs). Statistics as the script takes them: the median per-GEMM time of
// GEMMs wholly inside the all-reduces' window over the GEMM alone, and the
// median per-all-reduce time over the all-reduce alone; ranks pooled.
// calibration/fit/interference_compare.py prints the same table.
//
// Fitted (--fit --exclude gemm8192_ar256MiB) on the three steady cases:
// kernel_sensitivity 0.5, collective_sensitivity 0.3. Measured (mean of the
// two ranks) against gcsim before (SMs only) and now:
//   case               GEMM meas  before  now      AR meas  before  now
//   8192 / 1 GiB steady   1.342   1.188  1.383      1.280   1.000  1.244   fit
//   4096 / 1 GiB steady   1.483   1.250  1.455      1.164   1.000  1.229   fit
//   4096 / 256 MiB steady 1.454   1.250  1.449      1.211   1.000  1.230   fit
//   8192 / 1 GiB single   1.330   1.187  1.383      1.526   1.420  1.665   held out
//   4096 / 1 GiB single   1.437   1.250  1.455      1.186   1.054  1.283   held out
//   4096 / 256 MiB single 1.427   1.250  1.449      1.263   1.208  1.438   held out
// The 8192^3 / 256 MiB cases are left out: there the all-reduce waits for
// whole GEMMs (the persistent GEMM's queued CTAs take the SMs it frees),
// a scheduling effect the SM model does not have (GEMM steady 1.136
// measured, 1.377 now; README, Status).
// Tolerances: the two ranks of one case differ by up to 5% (GEMM) and 8%
// (all-reduce) in the measurement; GEMMs are held to 6%, all-reduces to
// 15% (the held-out single releases include the wait for the first GEMM,
// whose length the SM model sets).
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "catch.h"
#include "scenario/run_gcsim.h"

using Json = nlohmann::ordered_json;

namespace {

struct Case {
  const char* name;
  int n;        // GEMM m = n = k
  int64_t ar;   // all-reduce bytes
  int n_gemm, n_ar;
  double gemm_measured, ar_measured;  // ratios (mean of the two ranks)
};

// The six cases of the header, n_gemm / n_ar as the measurement ran them.
const std::vector<Case> kCases = {
    {"gemm8192_ar1024MiB_steady", 8192, int64_t{1} << 30, 14, 7, 1.342, 1.280},
    {"gemm4096_ar1024MiB_steady", 4096, int64_t{1} << 30, 110, 7, 1.483, 1.164},
    {"gemm4096_ar256MiB_steady", 4096, int64_t{256} << 20, 110, 23, 1.454, 1.211},
    {"gemm8192_ar1024MiB_single", 8192, int64_t{1} << 30, 7, 1, 1.330, 1.526},
    {"gemm4096_ar1024MiB_single", 4096, int64_t{1} << 30, 39, 1, 1.437, 1.186},
    {"gemm4096_ar256MiB_single", 4096, int64_t{256} << 20, 12, 1, 1.427, 1.263},
};

std::string harness(int n, int64_t ar_bytes, int n_gemm, int n_ar) {
  std::string y =
      "cluster: {gpu: h200-sxm, nodes: 1, gpus_per_node: 2, clocks: rested}\n"
      "network: {model: flow}\n"
      "workload:\n  kind: graph\n  ops:\n";
  for (int i = 0; i < n_ar; ++i) {
    y += "    - {name: c" + std::to_string(i) + ", op: all_reduce, ranks: all, bytes: " +
         std::to_string(ar_bytes) + "B}\n";
  }
  for (int r = 0; r < 2; ++r) {
    for (int i = 0; i < n_gemm; ++i) {
      y += "    - {name: k" + std::to_string(r) + "_" + std::to_string(i) + ", rank: " +
           std::to_string(r) + ", op: gemm, m: " + std::to_string(n) + ", n: " +
           std::to_string(n) + ", k: " + std::to_string(n) + ", dtype: bf16}\n";
    }
  }
  return y;
}

using Spans = std::vector<std::pair<double, double>>;  // us

void spans(const Json& s, int rank, Spans& kernels, Spans& comms) {
  for (const auto& o : s["ops"]) {
    if (o["rank"] != rank) continue;
    const std::pair<double, double> sp{o["start_s"].get<double>() * 1e6,
                                       o["end_s"].get<double>() * 1e6};
    (o["name"].get<std::string>()[0] == 'c' ? comms : kernels).push_back(sp);
  }
  std::sort(kernels.begin(), kernels.end());
  std::sort(comms.begin(), comms.end());
}

double median(std::vector<double> v) {
  REQUIRE(!v.empty());
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// Lengths of the spans wholly inside [w0, w1] (5 us slack, as measured).
std::vector<double> inside(const Spans& s, double w0, double w1) {
  std::vector<double> out;
  for (const auto& [a, b] : s) {
    if (a >= w0 - 5.0 && b <= w1 + 5.0) out.push_back(b - a);
  }
  return out;
}

struct Ratios {
  double gemm = 0, ar = 0;
};

Ratios simulate(const Case& c, const std::vector<std::string>& extra) {
  Spans k, a, none;
  spans(gcsim::test::run_summary(harness(c.n, c.ar, 3, 0), extra), 0, k, none);
  spans(gcsim::test::run_summary(harness(c.n, c.ar, 0, c.n_ar), extra), 0, none, a);
  std::vector<double> k_alone, a_alone;
  for (const auto& [s, e] : k) k_alone.push_back(e - s);
  for (const auto& [s, e] : a) a_alone.push_back(e - s);
  const Json both = gcsim::test::run_summary(harness(c.n, c.ar, c.n_gemm, c.n_ar), extra);
  std::vector<double> ki, ai;
  for (int r = 0; r < 2; ++r) {
    Spans kr, ar;
    spans(both, r, kr, ar);
    for (double d : inside(kr, ar.front().first, ar.back().second)) ki.push_back(d);
    for (double d : inside(ar, kr.front().first, kr.back().second)) ai.push_back(d);
  }
  return {median(ki) / median(k_alone), median(ai) / median(a_alone)};
}

}  // namespace

TEST_CASE("interference: GEMMs and all-reduces on 2 H200s slow each other as measured",
          "[scenario][interference][measured]") {
  double err_now = 0, err_before = 0;
  for (const Case& c : kCases) {
    INFO(c.name);
    const Ratios now = simulate(c, {});
    const Ratios before = simulate(c, {"-s", "network.interference.enabled=false"});
    INFO("GEMM measured " << c.gemm_measured << " gcsim " << now.gemm << " (SMs only "
                          << before.gemm << "); all-reduce measured " << c.ar_measured
                          << " gcsim " << now.ar << " (SMs only " << before.ar << ")");
    CHECK(std::abs(now.gemm / c.gemm_measured - 1.0) <= 0.06);
    CHECK(std::abs(now.ar / c.ar_measured - 1.0) <= 0.15);
    const double n = static_cast<double>(kCases.size());
    err_now += std::abs(now.gemm / c.gemm_measured - 1.0) / n;
    err_before += std::abs(before.gemm / c.gemm_measured - 1.0) / n;
  }
  // SMs alone left the GEMMs 10-16% fast: mean |error| 13%, now 2.2%.
  CHECK(err_before > 0.10);
  CHECK(err_now < 0.04);
}

TEST_CASE("interference: fitted sensitivities stay inside their physical range",
          "[scenario][interference]") {
  // [0, 1] (models/gpu/interference.h): 1 would double a GEMM's arithmetic
  // under a full collective load, or the memory latency a channel sees
  // beside a GPU full of compute. The values a run uses are the fitted ones.
  const Json s = gcsim::test::run_summary(harness(4096, int64_t{1} << 20, 1, 1));
  const Json& p = s["config"]["network"]["interference"];
  CHECK(p["enabled"] == true);
  for (const char* key : {"kernel_sensitivity", "collective_sensitivity", "staging_in_hbm"}) {
    INFO(key);
    CHECK(p[key].get<double>() >= 0.0);
    CHECK(p[key].get<double>() <= 1.0);
  }
  CHECK(p["kernel_sensitivity"].get<double>() == Approx(0.5));
  CHECK(p["collective_sensitivity"].get<double>() == Approx(0.3));
}

TEST_CASE("bad input: interference sensitivities outside [0, 1]", "[cli][interference]") {
  gcsim::test::TempDir dir;
  const auto cfg = dir / "c.yaml";
  gcsim::test::write_text(cfg, harness(4096, int64_t{1} << 20, 1, 1));
  for (const char* key : {"kernel_sensitivity", "collective_sensitivity", "staging_in_hbm"}) {
    for (const char* value : {"1.5", "-0.1"}) {
      INFO(key << " = " << value);
      const auto r = gcsim::test::run_gcsim(
          {"run", cfg.string(), "-q", "-o", (dir / "out").string(), "-s",
           std::string("network.interference.") + key + "=" + value});
      CHECK(r.exit_status == 2);
      CHECK(r.err.find(std::string("network.interference.") + key) != std::string::npos);
      CHECK(r.err.find("[0, 1]") != std::string::npos);
    }
  }
}
