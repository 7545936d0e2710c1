// The H200's shipped calibration profile against kernels measured on one
// H200 on 2026-11-28 (calibration/measurements/h200-x1/
// calibration_set_2026-11-28/: kernel_grid.py 1.1 and
// serving_kernels_bench.py; calibration/profiles/h200-sxm.yaml is fitted on
// 2026-11-22's microbenchmarks, half of this grid and these decode steps).
// And what the same runs measure of a kernel's fixed costs:
// the gap a stream leaves between two kernels and the kernel's own
// duration, which the profile's least squares cannot tell apart.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>

#include "calibration/fit/kernel_grid_fit.h"
#include "calibration/fit/measurements.h"
#include "calibration/fit/profile_fit.h"
#include "models/gpu/hbm.h"
#include "models/gpu/kernel_cost_model.h"
#include "catch.h"
#include "preset_fixtures.h"

using namespace gcsim;

namespace {
const std::string kSet =
    std::string(GCSIM_SOURCE_DIR) + "/calibration/measurements/h200-x1/calibration_set_2026-11-28/";
const std::string kSet2 =
    std::string(GCSIM_SOURCE_DIR) + "/calibration/measurements/h200-x1/calibration_set_2026-11-28b/";
const std::string kH100Grid =
    std::string(GCSIM_SOURCE_DIR) + "/calibration/measurements/h100-sxm/kernel_grid_2026-11-27/kernel_grid.json";

// Issue 16's 10% per GEMM class (the H100 grid tests' classes); the eager
// softmax, which misses it on the H200 (12.1% fitted, 13.5% held out for
// log_softmax; the H100's 7.9% and 12.4%), at the H100 tests' widest
// softmax bar, 14%, and listed as a miss in the README.
void check_grid_bars(const std::map<std::string, calibration::GridClassError>& errors) {
  const std::map<std::string, double> bar{{"gemm llama", 0.10},     {"gemm large", 0.10},
                                          {"gemm decode", 0.10},    {"gemm wave", 0.10},
                                          {"gemm mid", 0.10},       {"gemm small", 0.10},
                                          {"split-K shapes", 0.10}, {"memory softmax", 0.14},
                                          {"memory log_softmax", 0.14}};
  for (const auto& [cls, limit] : bar) {
    INFO(cls);
    REQUIRE(errors.count(cls) == 1);
    CHECK(errors.at(cls).mean < limit);
  }
}
}  // namespace

TEST_CASE("H200 kernel grid: the shipped profile per class", "[gpu][validation]") {
  // The profile's kernel-grid terms (cuBLAS's setup, its setup per CTA,
  // split-K, the eager softmax) are fitted on this run's 7^3 grid's
  // even-index half and its softmax forward (kernel_grid_fit.h), as the
  // H100's are on its own grid; every other case is held out: the grid's
  // other half, the Llama, large, decode and wave GEMMs, log_softmax.
  // Before that refit (the profile of 2026-11-22's microbenchmarks alone,
  // every case held out) the same classes were: small 13.5% (max 86.8%),
  // mid 10.3%, split-K shapes 24.3%, softmax 31.4%, log_softmax 27.8%,
  // decode 6.4%, Llama 4.8%, large 1.3%, wave 2.7%.
  const auto spec = test::calibrated_gpu_preset("h200-sxm");
  const calibration::MeasurementSet set = calibration::load_measurements({kSet + "kernel_grid.json"});
  REQUIRE(set.items.size() >= 560);  // 528 GEMMs and 42 softmax / log_softmax rows (x2 passes)
  const auto errors = calibration::kernel_grid_class_errors(spec, set);
  for (const auto& [cls, e] : errors) {
    std::printf("  H200 %-30s n %3d  mean |error| %5.1f%%  bias %+5.1f%%  max %5.1f%%\n", cls.c_str(), e.n,
                100 * e.mean, 100 * e.bias, 100 * e.max);
  }
  check_grid_bars(errors);
  // The held-out half of the small grid alone, at the same 10%.
  REQUIRE(errors.count("gemm small (held out)") == 1);
  CHECK(errors.at("gemm small (held out)").mean < 0.10);
}

TEST_CASE("H200 kernel grid on a second machine: the shipped profile per class and all held out",
          "[gpu][validation]") {
  // kernel_grid.py 1.1 on another H200 (calibration_set_2026-11-28b, run
  // after the profile was refitted on the first): nothing of it fitted.
  const auto spec = test::calibrated_gpu_preset("h200-sxm");
  const calibration::MeasurementSet set =
      calibration::load_measurements({kSet2 + "kernel_grid.json"});
  REQUIRE(set.items.size() >= 560);
  const auto errors = calibration::kernel_grid_class_errors(spec, set);
  for (const auto& [cls, e] : errors) {
    std::printf("  H200 machine 2 %-30s n %3d  mean |error| %5.1f%%  bias %+5.1f%%  max %5.1f%%\n", cls.c_str(),
                e.n, 100 * e.mean, 100 * e.bias, 100 * e.max);
  }
  check_grid_bars(errors);  // the first machine's bars
  // The stream gap between the grid's small GEMMs: 1.377 us here, 1.258 on
  // the first H200, 1.281 and 1.342 on two H100s: a machine's spread of
  // ~0.1 us around the 1-element add_'s 1.248 us (both H200s); within the
  // 0.15 us the other machines agree to.
  CHECK(*calibration::measured_stream_gap_us(set) == Approx(1.258).margin(0.15));
}

TEST_CASE("a stream gap between kernels measured apart from the kernels", "[gpu][validation]") {
  // kernel_grid.py times each GEMM back to back (spacing) and profiles one
  // call (the kernel's duration). For a one-kernel GEMM under 10 us apart
  // the difference is the stream's idle gap. By hand, the first such H200
  // record (bf16 TN 128x128x128, results[3] of the file): its spacing and
  // duration.
  const calibration::MeasurementSet h200 = calibration::load_measurements({kSet + "kernel_grid.json"});
  const calibration::MeasurementSet h100 = calibration::load_measurements({kH100Grid});
  REQUIRE(h200.stream_gaps_us.size() >= 150);
  REQUIRE(h100.stream_gaps_us.size() >= 150);
  {
    std::ifstream in(kSet + "kernel_grid.json");
    const auto doc = nlohmann::json::parse(in);
    const nlohmann::json& results = doc.at("results");
    double first = -1;
    for (const auto& r : results) {
      if (r.value("kind", "") != "gemm" || !r.value("backlog_ok", false) || r.at("time_us").get<double>() >= 10 ||
          !r.contains("kernels") || r.at("kernels").size() != 1 ||
          r.at("kernels")[0].value("per_rep_count", 0.0) != 1.0) {
        continue;
      }
      first = r.at("time_us").get<double>() - r.at("kernels")[0].at("per_rep_us").get<double>();
      break;
    }
    CHECK(h200.stream_gaps_us.front() == Approx(first).margin(1e-9));
  }
  const double gap200 = *calibration::measured_stream_gap_us(h200);
  const double gap100 = *calibration::measured_stream_gap_us(h100);
  std::printf("stream gap between kernels: H200 %.3f us (%zu GEMMs), H100 %.3f us (%zu)\n", gap200,
              h200.stream_gaps_us.size(), gap100, h100.stream_gaps_us.size());
  // The same launch path on both chips: serving_kernels_bench.py's
  // 1-element add_ on a stream left 1.248 us between kernels on this H200
  // (stream_profile.median_end_to_start_us), 1.38 on an H100 (2026-11-27);
  // the grid's medians agree with it within 0.15 us, and with each other.
  CHECK(gap200 == Approx(1.248).margin(0.15));
  CHECK(gap100 == Approx(gap200).margin(0.15));
  // What the shipped profiles carry instead: a launch latency that is the
  // gap plus most of a small kernel's fixed time (the least squares fits
  // their sum on spacings alone), 2.4 and 2.7 us. Their graph node latency
  // (that less the saving measured on decode steps: 1.1 and 1.7 us) then
  // keeps fixed time the profiler counts inside the kernels, where a graph
  // leaves 0.26-0.44 us between them: gcsim's serving kernel classes come
  // out short by it (calibration/fit/h200_profile_2026-11-28.md).
  CHECK(test::calibrated_gpu_preset("h200-sxm").kernel_launch_latency.microseconds() > gap200 + 1.0);
  CHECK(test::calibrated_gpu_preset("h100-sxm").kernel_launch_latency.microseconds() > gap100 + 1.0);
}

TEST_CASE("no stream gap without a kernel grid's profiled durations", "[gpu][validation]") {
  calibration::MeasurementSet empty;
  CHECK_FALSE(calibration::measured_stream_gap_us(empty).has_value());
  empty.stream_gaps_us = {3.0, 1.0, 2.0, 10.0};
  CHECK(*calibration::measured_stream_gap_us(empty) == Approx(2.5));  // median of four, by hand
}

TEST_CASE("a CTA a row pulls the same HBM bandwidth on an H200 as on an H100", "[gpu][validation]") {
  // row_reduce_bench.py on this H200 and on an H100 (h100-sxm/
  // row_reduce_2026-11-27): PyTorch's few-row reductions over 8 rows of
  // fp32 take the same time on both (softmax over 128256 columns from HBM
  // 42.35 against 42.38 us, from L2 33.25 / 33.15; mean 30.13 / 29.71;
  // argmax 40.02 / 38.82), though the H200's HBM is 1.43x faster. The H200
  // preset's sm_hbm_reach is the H100 profile's one-SM reach: 6 x 3350 GB/s
  // x 0.8779 / 132 SMs = 133.68 GB/s (written 133.7 GB/s); the H100's refit
  // with the GEMM tiles' overlap moved its HBM efficiency to 0.8813 (134.20
  // GB/s, +0.4%), which the H200 preset does not follow: held to 0.5%.
  const auto h100 = test::calibrated_gpu_preset("h100-sxm");
  const auto h200 = test::calibrated_gpu_preset("h200-sxm");
  CHECK(models::gpu::single_sm_hbm_reach(h100).bytes_per_s() == Approx(6 * 3350e9 * 0.8813 / 132).epsilon(1e-4));
  CHECK(models::gpu::single_sm_hbm_reach(h100).bytes_per_s() == Approx(133.7e9).epsilon(5e-3));
  CHECK(models::gpu::single_sm_hbm_reach(h200).bytes_per_s() == Approx(133.7e9).epsilon(1e-6));
  // The sampler's softmax over a decode step's logits: a CTA a row, 8 rows.
  models::gpu::MemoryOpShape soft;
  soft.kind = models::gpu::MemoryOpKind::softmax;
  soft.rows = 8;
  soft.cols = 128256;
  soft.dtype = models::gpu::Dtype::fp32;
  const auto on = [&](const models::gpu::GpuSpec& g) {
    const auto k = models::gpu::memory_kernel(g, soft);
    return (models::gpu::isolated_time(g, k, g.sm_count) - g.kernel_launch_latency).seconds() * 1e6;
  };
  const double ratio = on(h200) / on(h100);
  // The H200 as it was: its even share x the headroom its profile had
  // fitted then (6; with the reach set the headroom sets nothing on a GPU
  // with a clock and is not fitted).
  auto headroom_rule = h200;
  headroom_rule.sm_hbm_reach.reset();
  headroom_rule.sm_bandwidth_headroom = 6.0;
  const double before = on(headroom_rule) / on(h100);
  std::printf("8 x 128256 fp32 softmax: H100 %.2f us, H200 %.2f us (ratio %.3f; headroom rule %.3f; measured "
              "0.999-1.003)\n", on(h100), on(h200), ratio, before);
  // Measured ratio 1.00 (from HBM and from L2). The headroom rule gave the
  // H200 0.863 of the H100's time, outside issue 16's 10%; the SM's own
  // reach 1.079 (the profiles' row-reduction fractions differ, 0.74 and
  // 0.88, fitted on full-grid norms): within it.
  CHECK(std::abs(before - 1.0) > 0.10);
  CHECK(ratio == Approx(1.0).margin(0.10));
}
