// The Hopper collective fit (2x H200) against the first H100 NCCL data:
// 2x H100 (calibration/measurements/h100-x2/nccl_2gpu_2026-11-26/) and 4x
// H100 on two machines (calibration/measurements/h100-x4/nccl_2026-11-26/,
// repeat/ = machine B). Report: calibration/fit/collective_fit_h100_2026-11-26.md.
// An H100-only fit on the 2-GPU runs, for comparison (a minute):
//   GCSIM_FIT_REPORT=out.md build/tests/gcsim_tests "[.fith100]"
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "calibration/fit/collective_fit.h"
#include "catch.h"
#include "unit/collective_fit_values.h"
#include "scenario/run_gcsim.h"

using namespace gcsim;
using calibration::NcclMeasurement;
using models::collectives::CollectiveParams;

namespace {

models::gpu::GpuSpec h100() {
  // configs/hardware/h100-sxm.yaml; the local copy's rate comes from its HBM.
  return test::switch_gpu("h100-sxm", 3350);
}

// The rows of `file` whose run name starts with `run_prefix` ("" = all).
std::vector<NcclMeasurement> runs_of(const std::string& file, const std::string& run_prefix) {
  std::vector<NcclMeasurement> v;
  for (const auto& m : calibration::load_nccl_sweep(test::source_path(file))) {
    if (m.run.rfind(run_prefix, 0) == 0) v.push_back(m);
  }
  return v;
}

const std::string kTwo = "calibration/measurements/h100-x2/nccl_2gpu_2026-11-26/nccl_2gpu.json";
const std::string kFourA = "calibration/measurements/h100-x4/nccl_2026-11-26/nccl_4gpu.json";
const std::string kFourB = "calibration/measurements/h100-x4/nccl_2026-11-26/repeat/nccl_4gpu.json";
// The 4x H200 runs the Hopper fit is checked on (8 B - 4 GiB).
const std::string kFourH200 = "calibration/measurements/h200-x4/nccl_2026-11-26/nccl_default.json";

// The 2-GPU points an H100 fit uses: the default run (every op, NCCL's
// choices) and all-reduce forced Ring with each protocol; the same-machine
// repeat is left for the spread.
std::vector<NcclMeasurement> two_gpu_fit_points() {
  std::vector<NcclMeasurement> v;
  for (const auto& m : runs_of(kTwo, "")) {
    if (m.run != "repeat_n2.json") v.push_back(m);
  }
  return v;
}

// The committed h100-sxm parameters (the shared Hopper fit), NVLS off as measured.
CollectiveParams committed() {
  CollectiveParams p = models::collectives::params_for(h100());
  p.nvls = false;
  return p;
}

void print_errors(const CollectiveParams& p, const std::vector<NcclMeasurement>& runs, int n,
                  const char* label) {
  std::printf("%s: pooled busbw median %.1f%%\n", label,
              100 * calibration::pooled_bw_median(p, h100(), runs, n));
  for (const auto& e : calibration::series_errors(p, h100(), runs, n)) {
    std::printf("| %s | %d | %.1f%% | %.1f%% | %.1f%% | %.1f%% |\n", e.series.c_str(), n,
                100 * e.bw_median, 100 * e.bw_max, 100 * e.lat_median, 100 * e.lat_max);
  }
}

}  // namespace

namespace {

// The H100-only fit before issue 17's broadcast change: where its refit
// started.
CollectiveParams previous_h100_only_fit() {
  return test::with_fit_values(committed(), {{5.16487, 0.050268, 4096, 270.87},
                                             {11.1975, 1.14722, 2769164, 57.7276},
                                             {7.71794, 2.799, 436425, 15.6341},
                                             177536, 3.31188, 81.4153, 55.5826, 0.398326});
}

// The H100-only fit ("[.fith100]": the whole two-stage fit on the 2x H100
// runs, from NCCL's defaults at first, refitted from its values once a
// broadcast chain filled with NCCL's buffer step and a link lost the
// reverse overhead, LL's fields held: rms log error 0.0710 over 270 points
// against the shared fit's 0.0745), kept to test the choice of one Hopper
// fit.
CollectiveParams h100_only_fit() {
  return test::with_fit_values(committed(), {{5.16487, 0.050268, 4096, 270.87},
                                             {10.4863, 1.11389, 4176136, 14.4847},
                                             {7.15994, 2.78934, 221029, 15.0121},
                                             178958, 3.91994, 81.2502, 57.7051, 0.398607});
}

}  // namespace

TEST_CASE("collective model: the shared Hopper fit holds on 2x and 4x H100 (two machines)",
          "[collectives][calibration]") {
  // h100-sxm carries the fit made on 2 H200s (same SM, NVLink 4, NVSwitch
  // and NCCL); none of these H100 points were fitted.
  const CollectiveParams p = committed();
  CHECK(p.source.find("fit to NCCL 2.28.9 on 2x H200") != std::string::npos);
  const auto bad = calibration::out_of_range(p);
  for (const auto& b : bad) INFO(b);
  CHECK(bad.empty());

  // 4 GPUs, machine A and machine B (collective_fit_h100_2026-11-26.md):
  // issue 17's done-when. Pooled busbw median 3.7 % and 4.5 % (4.5 %, 5.7 %
  // before a broadcast chain filled with NCCL's 512 KiB buffer step and a
  // link carrying both ways lost the reverse overhead; machine to machine
  // 1.1 %): below 5 %. Every op's busbw median below 15 %, broadcast's 8.6 %
  // and 9.8 % (14.9 %, 16.2 % before; its 2-16 MiB sizes still run 15-25 %
  // slower than predicted: the report says why). Latency per op inside 20 %.
  for (const std::string& file : {kFourA, kFourB}) {
    const auto runs = runs_of(file, "default_n4");
    INFO(file);
    CHECK(calibration::pooled_bw_median(p, h100(), runs, 4) < 0.05);
    for (const auto& e : calibration::series_errors(p, h100(), runs, 4)) {
      INFO(e.series << ": busbw median " << e.bw_median << ", latency median " << e.lat_median);
      CHECK(e.bw_median < 0.15);
      if (e.lat_points > 0) CHECK(e.lat_median < 0.20);
    }
  }
  // 2 GPUs (the group size the fit was made on, other GPU kind): pooled
  // 5.1 %; all-to-all 3.6 % (19.7 % before the connection windows).
  const auto two = runs_of(kTwo, "default_n2");
  CHECK(calibration::pooled_bw_median(p, h100(), two, 2) < 0.08);
  for (const auto& e : calibration::series_errors(p, h100(), two, 2)) {
    INFO(e.series << ": busbw median " << e.bw_median << ", latency median " << e.lat_median);
    CHECK(e.bw_median < 0.15);
    if (e.lat_points > 0) CHECK(e.lat_median < 0.20);
  }

  // The local copy on HBM3: 3350 x 0.9 / 2 = 1507.5 GB/s; device_copy
  // measured 1505-1506 GB/s at 1 GiB on both machines.
  const auto doc = nlohmann::json::parse(test::read_text(test::source_path(kFourB)));
  double measured = 0.0;
  for (const auto& r : doc["device_copy"]) {
    if (r["bytes"] == int64_t{1} << 30 && r["run"] == "default_n4.json") measured = r["algbw_GBps"];
  }
  CHECK(measured == Approx(1505).epsilon(0.01));
  CHECK(p.local_copy.gb_per_s() == Approx(measured).epsilon(0.01));
}

TEST_CASE("collective model: an H100-only fit is physical and no better on 4 H100s held out",
          "[collectives][calibration]") {
  // Why h100-sxm keeps the shared Hopper fit: refitted on the 2x H100 runs
  // alone, every value stays in its physical range, but the held-out 4-GPU
  // error does not improve beyond the machine-to-machine spread (1.1 %):
  // pooled no lower than the shared fit's (3.7 % and 4.5 %) less that spread
  // (3.6 % and 4.8 %).
  const CollectiveParams own = h100_only_fit();
  const auto bad = calibration::out_of_range(own);
  for (const auto& b : bad) INFO(b);
  CHECK(bad.empty());
  const auto two = two_gpu_fit_points();
  CHECK(calibration::rms_log_error(own, h100(), two) == Approx(0.0710).margin(0.002));
  for (const std::string& file : {kFourA, kFourB}) {
    const auto runs = runs_of(file, "default_n4");
    INFO(file);
    const double shared = calibration::pooled_bw_median(committed(), h100(), runs, 4);
    const double refit = calibration::pooled_bw_median(own, h100(), runs, 4);
    CHECK(refit > shared - 0.011);
  }
}

TEST_CASE("collective fit: errors of the Hopper fit on the H100 runs (hidden; prints)",
          "[.fitreport]") {
  const CollectiveParams p = committed();
  std::cout << "| op | GPUs | busbw median | busbw worst | latency median | latency worst |\n"
               "|---|---:|---:|---:|---:|---:|\n";
  print_errors(p, runs_of(kTwo, "default_n2"), 2, "H100 2 GPUs, A");
  print_errors(p, runs_of(kTwo, "repeat_n2"), 2, "H100 2 GPUs, A repeat");
  print_errors(p, runs_of(kFourA, "default_n4"), 4, "H100 4 GPUs, A");
  print_errors(p, runs_of(kFourA, "repeat_n4"), 4, "H100 4 GPUs, A repeat");
  print_errors(p, runs_of(kFourB, "default_n4"), 4, "H100 4 GPUs, B");
  print_errors(p, runs_of(kFourB, "repeat_n4"), 4, "H100 4 GPUs, B repeat");
  // The 4x H200 points up to 1 GiB, for a like-for-like baseline: the H100
  // sweep stops at 1 GiB, the fit report's 4-GPU figures run to 4 GiB.
  std::vector<NcclMeasurement> h200_to_1gib;
  for (const auto& m : runs_of(kFourH200, "")) {
    if (m.bytes <= (int64_t{1} << 30)) h200_to_1gib.push_back(m);
  }
  print_errors(p, h200_to_1gib, 4, "H200 4 GPUs, 8 B - 1 GiB");
  if (const char* path = std::getenv("GCSIM_FIT_REPORT")) {
    // Point by point: the 2-GPU runs and machine A's 4-GPU runs.
    auto rows = two_gpu_fit_points();
    for (const auto& m : runs_of(kFourA, "")) {
      if (m.run != "repeat_n4.json") rows.push_back(m);
    }
    std::ofstream(path) << calibration::fit_report(p, h100(), rows, {8});
  }
}

TEST_CASE("collective fit: an H100-only fit on the 2x H100 runs (hidden; prints, writes "
          "GCSIM_FIT_REPORT)",
          "[.fith100]") {
  // The whole two-stage fit on H100 2-GPU points alone: from NCCL's
  // defaults, as `gcsim calibrate --collectives` runs it (GCSIM_FIT_FULL=1),
  // or by default from previous_h100_only_fit(), LL's fields held (how
  // h100_only_fit() was made once a broadcast chain filled with NCCL's
  // buffer step and a link lost the reverse overhead).
  const auto two = two_gpu_fit_points();
  const bool full = std::getenv("GCSIM_FIT_FULL") != nullptr;
  const CollectiveParams start =
      full ? calibration::fit_start(h100()) : previous_h100_only_fit();
  const calibration::CollectiveFit fit = calibration::fit_collective_params(
      two, h100(), start, calibration::kFitIterations, false,
      full ? std::vector<std::string>{} : std::vector<std::string>{"LL."});
  std::cout << "rms log error " << fit.rms_log_error << " over " << fit.points << " points, "
            << fit.evaluations << " evaluations\n"
            << calibration::fitted_fields_cpp(fit.params);
  for (const auto& b : calibration::out_of_range(fit.params)) std::cout << "OUT OF RANGE " << b << "\n";
  CollectiveParams p = fit.params;
  p.source = "H100-only fit";
  std::printf("committed Hopper fit on the same points: rms log error %.4f\n",
              calibration::rms_log_error(committed(), h100(), two));
  print_errors(p, runs_of(kTwo, "default_n2"), 2, "H100-only fit, 2 GPUs, A (fitted)");
  print_errors(p, runs_of(kFourA, "default_n4"), 4, "H100-only fit, 4 GPUs, A");
  print_errors(p, runs_of(kFourB, "default_n4"), 4, "H100-only fit, 4 GPUs, B");
  if (const char* path = std::getenv("GCSIM_FIT_REPORT")) {
    auto rows = two;
    for (const auto& m : runs_of(kFourA, "")) rows.push_back(m);
    std::ofstream(path) << calibration::fit_report(p, h100(), rows, {8});
  }
  CHECK(fit.rms_log_error < 0.2);
}
