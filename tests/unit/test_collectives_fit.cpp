// The collective parameters fitted to NCCL 2.28.9 on 2x H200
// (calibration/measurements/h200-x4/nccl_2026-11-26/, 2-GPU runs, and the
// max_ctas runs of calibration/measurements/h200-x2/README.md), and the same
// parameters predicting the 4-GPU runs without refitting.
// The fit itself takes a minute: run it with
//   GCSIM_FIT_REPORT=out.md build/tests/gcsim_tests "[.fit]"
// which prints the fitted fields (for models/collectives/fitted_params.cpp)
// and writes the predicted-vs-measured report.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "calibration/fit/collective_fit.h"
#include "catch.h"
#include "unit/collective_fit_values.h"
#include "scenario/run_gcsim.h"

using namespace gcsim;
using calibration::NcclMeasurement;
using models::collectives::CollectiveOp;
using models::collectives::CollectiveParams;

namespace {

models::gpu::GpuSpec h200() {
  // configs/hardware/h200-sxm.yaml; the local copy's rate comes from its HBM.
  return test::switch_gpu("h200-sxm", 4800);
}

// NCCL 2.28.9 on 4x H200, 2026-11-26: every op on 2, 3 and 4 GPUs with
// NCCL's own choices (8 B - 4 GiB), and all-reduce forced Ring with each
// protocol on 2 GPUs.
std::vector<NcclMeasurement> sweep() {
  const std::string dir = "calibration/measurements/h200-x4/nccl_2026-11-26/";
  auto v = calibration::load_nccl_sweep(test::source_path(dir + "nccl_default.json"));
  for (const auto& m : calibration::load_nccl_sweep(test::source_path(dir + "nccl_forced.json"))) {
    v.push_back(m);
  }
  return v;
}

std::vector<NcclMeasurement> with_ranks(const std::vector<NcclMeasurement>& all, int n) {
  std::vector<NcclMeasurement> v;
  for (const auto& m : all) {
    if (m.ranks == n) v.push_back(m);
  }
  return v;
}

// The measurement ran with NVLS off (NCCL_NVLS_ENABLE=0).
CollectiveParams fitted() {
  CollectiveParams p = models::collectives::params_for(h200());
  p.nvls = false;
  return p;
}

}  // namespace

namespace {

// The values committed before issue 17's broadcast change (commit
// c128796): where the committed fit started.
CollectiveParams previous_fit() {
  return test::with_fit_values(fitted(), {{5.28301, 0.050266, 3538, 267.363},
                                          {11.3265, 1.1694, 1223509, 57.7881},
                                          {7.46459, 2.69405, 230563, 26.1367},
                                          180043, 3.74704, 80.558, 64.7709, 0.421142});
}

}  // namespace

TEST_CASE("collective fit: run it (hidden; prints fields, writes GCSIM_FIT_REPORT)", "[.fit]") {
  const auto all = sweep();
  auto two = with_ranks(all, 2);
  for (const auto& m : calibration::h200_channel_points()) two.push_back(m);
  // The committed values: the whole two-stage fit on the 2-GPU points from
  // the values committed before (previous_fit(): a broadcast chain then
  // filled with half a ring slice and overlapped every hop, and a link had
  // no reverse overhead), rerun once those changed, LL's fields held
  // (neither change touches an LL transfer; freeing them too gives rms
  // 0.0721 instead of 0.0723 and every 4-GPU latency median ~1 point
  // worse). GCSIM_FIT_FULL=1 starts from NCCL's defaults and frees every
  // field instead (what `gcsim calibrate --collectives` does); it stops at
  // a worse optimum here (rms 0.0766).
  const bool full = std::getenv("GCSIM_FIT_FULL") != nullptr;
  const CollectiveParams start = full ? calibration::fit_start(h200()) : previous_fit();
  const calibration::CollectiveFit fit = calibration::fit_collective_params(
      two, h200(), start, calibration::kFitIterations, false,
      full ? std::vector<std::string>{} : std::vector<std::string>{"LL."});
  std::cout << "rms log error " << fit.rms_log_error << " over " << fit.points << " points, "
            << fit.evaluations << " evaluations\n"
            << calibration::fitted_fields_cpp(fit.params);
  CollectiveParams p = fit.params;
  p.source = "fit";
  if (const char* path = std::getenv("GCSIM_FIT_REPORT")) {
    auto rows = all;
    for (const auto& m : calibration::h200_channel_points()) rows.push_back(m);
    std::ofstream(path) << calibration::fit_report(p, h200(), rows, {8});
  }
  CHECK(fit.rms_log_error < 0.2);
}

namespace {

// The fit's rms log error over the 2-GPU points (its report).
constexpr double kFitRms = 0.0723;
// Issue 17's targets on 4 held-out GPUs: busbw median error <= 5 % pooled
// and no op above 15 % (>= 1 MiB); latency within 20 % (8 B - 64 KiB).
constexpr double kBwPooledMax = 0.05, kBwOpMax = 0.15, kLatOpMax = 0.20;

}  // namespace

TEST_CASE("collective model: every fitted value is physical, 2 GPUs fitted, 4 GPUs held out",
          "[collectives][calibration]") {
  const auto all = sweep();
  auto two = with_ranks(all, 2);
  for (const auto& m : calibration::h200_channel_points()) two.push_back(m);
  const CollectiveParams p = fitted();
  CHECK(p.source.find("fit to NCCL 2.28.9 on 2x H200") != std::string::npos);
  // Every fitted field inside the physical range calibration::fit_ranges()
  // states with its reason.
  const auto bad = calibration::out_of_range(p);
  for (const auto& b : bad) INFO(b);
  CHECK(bad.empty());
  // The fit's own figure over the 2-GPU points (collective_fit_hopper_2026-11-26.md).
  const double fit_error = calibration::rms_log_error(p, h200(), two);
  CHECK(fit_error == Approx(kFitRms).margin(0.002));
  // NCCL's defaults on the same points do worse.
  CollectiveParams defaults = models::collectives::nccl_default_params(h200());
  defaults.nvls = false;
  CHECK(calibration::rms_log_error(defaults, h200(), two) > fit_error * 1.3);

  // 4 GPUs, not fitted. Bandwidth (>= 1 MiB): the median over every op's
  // points, and each op's own median; latency (8 B - 64 KiB): each op's
  // median (calibration::series_errors: |predicted / measured - 1|).
  for (const auto& e : calibration::series_errors(p, h200(), all, 4)) {
    INFO(e.series << ": busbw median error " << e.bw_median << " over " << e.bw_points
                  << " sizes, latency median error " << e.lat_median << " over " << e.lat_points);
    CHECK(e.bw_median < kBwOpMax);  // every op, all-to-all included
    if (e.series == "all_to_all") {
      // The grouped send/recv model with connection windows (p2p channels,
      // rounds, local copy, 1/X = 1/(k r) + 1/R): median 4.6 % (13.9 %
      // before the windows), worst 19.1 % (1 MiB: 256 KiB per peer in 4
      // parts of 64 KiB, where each part's first step dominates).
      CHECK(e.bw_max < 0.22);
    }
    // send_recv keeps no latency point (host-bound below 256 MiB, README
    // of the data). Broadcast's latency is compared as measured, per call
    // of a back-to-back loop, where each call's hops down the chain overlap
    // the next (13.9 %; 24 % when one call alone was compared).
    if (e.lat_points == 0) continue;
    CHECK(e.lat_median < kLatOpMax);
  }
  const double pooled = calibration::pooled_bw_median(p, h200(), all, 4);
  INFO("pooled busbw median error " << pooled);
  CHECK(pooled < kBwPooledMax);
}

TEST_CASE("collective fit: held fields keep their start values", "[collectives][calibration]") {
  // A short fit (10 iterations per restart) on the 2-GPU broadcast points:
  // with LL's fields held they come back as they went in, and the fit
  // still moves the others.
  std::vector<NcclMeasurement> points;
  for (const auto& m : with_ranks(sweep(), 2)) {
    if (m.op == CollectiveOp::broadcast) points.push_back(m);
  }
  // From the committed values (each inside its range: a value outside comes
  // back clamped into it, held or not).
  const CollectiveParams start = fitted();
  const auto fit = calibration::fit_collective_params(points, h200(), start, 10, false, {"LL."});
  using models::collectives::Algorithm;
  using models::collectives::Protocol;
  // (Held values pass through the fit's log-space vector: equal to 1e-9.)
  const auto& ll = fit.params.latency_of(Algorithm::ring, Protocol::ll);
  const auto& ll0 = start.latency_of(Algorithm::ring, Protocol::ll);
  CHECK(ll.base.microseconds() == Approx(ll0.base.microseconds()).epsilon(1e-9));
  CHECK(ll.step_scale_up.microseconds() == Approx(ll0.step_scale_up.microseconds()).epsilon(1e-9));
  CHECK(fit.params.protocol_of(Protocol::ll).slice == start.protocol_of(Protocol::ll).slice);
  CHECK(fit.params.protocol_of(Protocol::ll).max_per_gpu.gb_per_s() ==
        Approx(start.protocol_of(Protocol::ll).max_per_gpu.gb_per_s()).epsilon(1e-9));
  CHECK(fit.params.latency_of(Algorithm::ring, Protocol::simple).base !=
        start.latency_of(Algorithm::ring, Protocol::simple).base);
}

TEST_CASE("collective model: a link carrying both ways loses the measured reverse overhead",
          "[collectives][calibration]") {
  // Measured directly on 2 GPUs at 4 GiB (nccl_default.json), not fitted: a
  // send/recv (each GPU sends and receives 4 GiB) against a broadcast (one
  // way), both streaming with no dependent steps.
  const auto all = sweep();
  auto time_of = [&](CollectiveOp op, int n) {
    for (const auto& m : all) {
      if (m.op == op && m.ranks == n && m.bytes == (int64_t{1} << 32)) return m.time_us;
    }
    FAIL("no 4 GiB " << models::collectives::op_name(op) << " on " << n << " GPUs");
    return 0.0;
  };
  const double both = time_of(CollectiveOp::send_recv, 2), one = time_of(CollectiveOp::broadcast, 2);
  CHECK(both == Approx(11762.3).epsilon(1e-4));
  CHECK(one == Approx(11592.7).epsilon(1e-4));
  const CollectiveParams p = fitted();
  CHECK(p.scale_up_reverse_overhead == Approx(both / one - 1.0).margin(5e-4));
  // Held out: a 3- and 4-GPU broadcast's middle ranks receive and send the
  // whole buffer. At 4 GiB measured 11810.6 and 11838.3 us, predicted within
  // 0.5 % (1.9 % and 2.1 % fast without the overhead).
  for (int n : {3, 4}) {
    for (const auto& m : all) {
      if (m.op != CollectiveOp::broadcast || m.ranks != n || m.bytes != (int64_t{1} << 32)) continue;
      const double predicted = calibration::predict_us(p, h200(), m, false);
      INFO(n << " GPUs: measured " << m.time_us << " us, predicted " << predicted);
      CHECK(std::abs(m.time_us / predicted - 1.0) < 0.01);
    }
  }
}

TEST_CASE("collective model: 8x H100 1 GiB all-reduce within 5% of NCCL's published ~370 GB/s",
          "[collectives][calibration]") {
  // Published 8x H100 ring all-reduce busbw ~370 GB/s at multi-GB messages
  // (nccl-tests issues 212, 290; ../shared/REFERENCE.md). The Hopper NVLink 4
  // fit (2 H200s) on 8 H100s, NVLS off, gcsim's own tuner; the issue asks
  // 1 GiB within 5 %. (KINDS.md's single reading on this workplace's 8x H100
  // was 361 GB/s at 1 GiB.)
  models::gpu::GpuSpec h100 = h200();
  h100.name = "h100-sxm";
  CollectiveParams p = models::collectives::params_for(h100);
  p.nvls = false;
  NcclMeasurement m;
  m.op = models::collectives::CollectiveOp::all_reduce;
  m.ranks = 8;
  m.bytes = int64_t{1} << 30;
  models::collectives::Plan plan;
  const double us = calibration::predict_us(p, h100, m, true, &plan);
  const double busbw = static_cast<double>(m.bytes) / (us * 1e-6) * 1e-9 * 14.0 / 8.0;
  INFO("8x H100 1 GiB: " << busbw << " GB/s");
  CHECK(plan.algorithm == models::collectives::Algorithm::ring);
  CHECK(std::abs(busbw / 370.0 - 1.0) < 0.05);
}

TEST_CASE("collective fit: per-op errors of the committed fit (hidden; prints a table)",
          "[.fitreport]") {
  const auto all = sweep();
  const CollectiveParams p = fitted();
  std::cout << "| op | GPUs | busbw median | busbw worst | latency median | latency worst |\n"
               "|---|---:|---:|---:|---:|---:|\n";
  for (int n : {2, 3, 4}) {
    for (const auto& e : calibration::series_errors(p, h200(), all, n)) {
      std::printf("| %s | %d | %.1f%% | %.1f%% | %.1f%% | %.1f%% |\n", e.series.c_str(), n,
                  100 * e.bw_median, 100 * e.bw_max, 100 * e.lat_median, 100 * e.lat_max);
    }
    std::printf("pooled busbw median on %d GPUs: %.1f%%\n", n,
                100 * calibration::pooled_bw_median(p, h200(), all, n));
  }
}

TEST_CASE("collective model: the 2-GPU fit on two other H200 machines, and the local copy rate",
          "[collectives][calibration]") {
  // calibration/measurements/h200-x2/nccl_2gpu_2026-11-26/: the same 2-GPU
  // sweep (8 B - 1 GiB) run again on two other 2x H200 machines, asked as
  // H100s (no H100 pair was lent). Same GPU kind and group size as the fit:
  // a check that the fit is not one machine's, not a held-out group size.
  const std::string dir = "calibration/measurements/h200-x2/nccl_2gpu_2026-11-26/";
  const CollectiveParams p = fitted();
  for (const char* file : {"nccl_2gpu.json", "repeat/nccl_2gpu.json"}) {
    std::vector<NcclMeasurement> runs;
    for (const auto& m : calibration::load_nccl_sweep(test::source_path(dir + file))) {
      if (m.run == "default_n2.json") runs.push_back(m);
    }
    REQUIRE(runs.size() == 8 * 28);  // 8 series (6 ops, 2 in two placements), 8 B - 1 GiB
    INFO(file);
    // The fit's own points give 5.7 % pooled, these 5.6-5.8 %; the other
    // machines differ from them by ~1 % at >= 1 MiB (README of the data).
    CHECK(calibration::pooled_bw_median(p, h200(), runs, 2) < 0.08);
    for (const auto& e : calibration::series_errors(p, h200(), runs, 2)) {
      INFO(e.series << ": busbw median " << e.bw_median << ", latency median " << e.lat_median);
      CHECK(e.bw_median < kBwOpMax);  // all-to-all 6.1-6.5 % (18 % before the connection windows)
      if (e.lat_points > 0) CHECK(e.lat_median < kLatOpMax);  // broadcast 6.6-8.1 % (15 % before)
    }
  }
  // The local copy (all-to-all's own slice) runs at HBM bandwidth x its
  // streaming efficiency / 2: 4800 x 0.9 / 2 = 2160 GB/s for h200-sxm.
  // nccl_sweep.py's device_copy measured 2132 GB/s at 1 GiB on both machines.
  const auto doc =
      nlohmann::json::parse(test::read_text(test::source_path(dir + "nccl_2gpu.json")));
  double measured = 0.0;
  for (const auto& r : doc["device_copy"]) {
    if (r["bytes"] == int64_t{1} << 30 && r["run"] == "default_n2.json") measured = r["algbw_GBps"];
  }
  CHECK(measured == Approx(2132).epsilon(0.01));
  CHECK(p.local_copy.gb_per_s() == Approx(measured).epsilon(0.03));
}

TEST_CASE("collective fit: errors on the other H200 machines' 2-GPU runs (hidden; prints)",
          "[.fitreport]") {
  const std::string dir = "calibration/measurements/h200-x2/nccl_2gpu_2026-11-26/";
  const CollectiveParams p = fitted();
  for (const char* file : {"nccl_2gpu.json", "repeat/nccl_2gpu.json"}) {
    std::vector<NcclMeasurement> runs;
    for (const auto& m : calibration::load_nccl_sweep(test::source_path(dir + file))) {
      if (m.run == "default_n2.json") runs.push_back(m);
    }
    std::printf("%s (default_n2): pooled busbw median %.1f%%\n", file,
                100 * calibration::pooled_bw_median(p, h200(), runs, 2));
    for (const auto& e : calibration::series_errors(p, h200(), runs, 2)) {
      std::printf("| %s | 2 | %.1f%% | %.1f%% | %.1f%% | %.1f%% |\n", e.series.c_str(),
                  100 * e.bw_median, 100 * e.bw_max, 100 * e.lat_median, 100 * e.lat_max);
    }
  }
}
