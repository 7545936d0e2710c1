// `gcsim calibrate --power-activity`: the runtime's activity of the power
// bench's kernels at held clocks, which calibration/fit/power_fit.py fits
// with; the table agrees with the library call it prints, and bad options
// are bad input (exit 2, naming the option).
#include <nlohmann/json.hpp>

#include "catch.h"
#include "run_gcsim.h"

using gcsim::test::run_gcsim;

TEST_CASE("calibrate --power-activity prints the runtime's activity per kernel and clock", "[cli][power]") {
  auto r = run_gcsim({"calibrate", "--power-activity", "--gpu", "h100-sxm", "--clock-bound-share", "0.4"});
  REQUIRE(r.exit_status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["gpu"] == "h100-sxm");
  CHECK(j["clock_bound_share"].get<double>() == 0.4);
  REQUIRE(j["clocks"].size() == 51);  // 0.50, 0.51 ... 1.00
  CHECK(j["clocks"][0].get<double>() == 0.5);
  CHECK(j["clocks"][50].get<double>() == 1.0);
  for (const char* k : {"gemm", "copy", "sigmoid", "add", "mul", "gemm_wide", "gemm_fp32", "gemm_decode"}) {
    INFO(k);
    REQUIRE(j["kernels"].contains(k));
    CHECK(j["kernels"][k]["tensor"].size() == 51);
  }
  // The 1 GiB copy reads and writes 1 GiB: its HBM activity times its
  // duration times the peak bandwidth gives back those 2 GiB (to the
  // 1 ps rounding of the runtime's times).
  const auto& copy = j["kernels"]["copy"];
  const double bytes = copy["hbm"][50].get<double>() * copy["duration_s"][50].get<double>() *
                       j["hbm_bandwidth_bytes_per_s"].get<double>();
  CHECK(bytes == Approx(2.0 * (1 << 30)).epsilon(1e-6));
  CHECK(copy["tensor"][50].get<double>() == 0.0);
  // bf16 GEMMs load the tensor pipes, fp32 ones the CUDA cores; a lower
  // clock stretches the arithmetic, so a larger share of the time is in it.
  const auto& gemm = j["kernels"]["gemm"];
  CHECK(gemm["tensor"][50].get<double>() > 0.5);
  CHECK(gemm["tensor"][50].get<double>() < 1.0);
  CHECK(gemm["tensor"][0].get<double>() > gemm["tensor"][50].get<double>());
  CHECK(gemm["duration_s"][0].get<double>() > gemm["duration_s"][50].get<double>());
  CHECK(j["kernels"]["gemm_fp32"]["vector"][50].get<double>() > 0.5);
  CHECK(j["kernels"]["gemm_fp32"]["tensor"][50].get<double>() == 0.0);
}

TEST_CASE("calibrate --power-activity with bad options is bad input", "[cli][power]") {
  auto no_gpu = run_gcsim({"calibrate", "--power-activity"});
  CHECK(no_gpu.exit_status == 2);
  CHECK(no_gpu.err.find("--power-activity needs --gpu") != std::string::npos);
  auto unknown = run_gcsim({"calibrate", "--power-activity", "--gpu", "h100-sxn"});
  CHECK(unknown.exit_status == 2);
  CHECK(unknown.err.find("h100-sxn") != std::string::npos);
  auto share = run_gcsim({"calibrate", "--power-activity", "--gpu", "h100-sxm", "--clock-bound-share", "1.5"});
  CHECK(share.exit_status == 2);
  CHECK(share.err.find("--clock-bound-share 1.5 lies outside its physical range") != std::string::npos);
  auto not_number = run_gcsim({"calibrate", "--power-activity", "--gpu", "h100-sxm", "--clock-bound-share", "x"});
  CHECK(not_number.exit_status == 2);
  CHECK(not_number.err.find("clock-bound-share") != std::string::npos);
  auto no_power = run_gcsim({"calibrate", "--power-activity", "--gpu", "a100-sxm-80gb"});
  CHECK(no_power.exit_status == 2);
  CHECK(no_power.err.find("no power: block") != std::string::npos);
}
