// `gcsim calibrate`: no GPU to measure is bad input (exit 2, said plainly);
// --fit on the committed H100 measurements (with --kernel-grid for the terms
// fitted apart) reproduces the committed profile
// and meets issue 6's held-out targets; --validate prints them; bad files
// are bad input.
#include <filesystem>

#include "catch.h"
#include "run_gcsim.h"

using gcsim::test::read_text;
using gcsim::test::run_gcsim;
using gcsim::test::source_path;
using gcsim::test::TempDir;
using gcsim::test::write_text;

namespace {
const std::string kH100 = "calibration/measurements/h100-sxm/";

// The profile without its "# Made by:" line (which names the output path).
std::string without_command(const std::string& text) {
  const auto at = text.find("# Made by:");
  if (at == std::string::npos) return text;
  return text.substr(0, at) + text.substr(text.find('\n', at) + 1);
}
}  // namespace

TEST_CASE("calibrate without a GPU benchmark or without a GPU exits 2 and says why", "[cli]") {
  TempDir dir;
  auto none = run_gcsim({"calibrate", "-o", (dir / "p.yaml").string(), "--bench",
                         (dir / "gcsim_microbench").string()});
  CHECK(none.exit_status == 2);
  CHECK(none.err.find("cannot be measured") != std::string::npos);
  CHECK(none.err.find("--fit") != std::string::npos);
  // A benchmark that finds no CUDA device exits 3 (gcsim_microbench's code).
  write_text(dir / "no_gpu.sh", "#!/bin/sh\necho 'no CUDA device' >&2\nexit 3\n");
  std::filesystem::permissions(dir / "no_gpu.sh", std::filesystem::perms::owner_all);
  auto no_gpu = run_gcsim({"calibrate", "-o", (dir / "p.yaml").string(), "--bench",
                           (dir / "no_gpu.sh").string()});
  CHECK(no_gpu.exit_status == 2);
  CHECK(no_gpu.err.find("no CUDA GPU") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir / "p.yaml"));
}

TEST_CASE("calibrate --fit reproduces the committed H100 profile, which meets the targets",
          "[scenario]") {
  TempDir dir;
  const auto out = (dir / "h100.yaml").string();
  auto fit = run_gcsim({"calibrate", "--fit", source_path(kH100 + "microbench_2026-11-22.json"),
                        "--fit", source_path(kH100 + "attention_2026-11-22.json"), "--fit",
                        source_path(kH100 + "serving_kernels_2026-11-27/serving_kernels.json"), "--kernel-grid",
                        source_path(kH100 + "kernel_grid_2026-11-26/kernel_grid.json"), "-o", out});
  INFO(fit.err);
  REQUIRE(fit.exit_status == 0);
  CHECK(without_command(read_text(out)) ==
        without_command(read_text(source_path("calibration/profiles/h100-sxm.yaml"))));

  auto v = run_gcsim({"calibrate", "--validate", source_path("calibration/profiles/h100-sxm.yaml")});
  INFO(v.out << v.err);
  REQUIRE(v.exit_status == 0);
  // Issue 6: held-out GEMMs median <= 5% and p90 <= 15%; memory-bound ops
  // and attention median <= 10%. The held-out table comes first.
  const std::string held = v.out.substr(0, v.out.find("fitted cases:"));
  for (const char* row : {"GEMM (all)", "memory-bound (all)", "attention (all)"}) {
    const auto at = held.find(row);
    REQUIRE(at != std::string::npos);
    const std::string line = held.substr(at, held.find('\n', at) - at);
    INFO(line);
    CHECK(line.find(" met") != std::string::npos);
  }
}

TEST_CASE("calibrate --fit reproduces the committed H200 profile", "[scenario]") {
  // The H100's method and inputs on an H200 (2026-11-28): 2026-11-22's
  // microbenchmarks and attention run, this H200's decode steps (the graph
  // latency) and kernel grid (cuBLAS's setup, split-K, the eager softmax).
  // Its kernel-grid classes are checked in test_h200_kernel_grid.cpp. The
  // microbenchmarks' held-out GEMMs miss issue 6's median (5.5% against 5%;
  // 4.6% before the kernel-grid terms, which the 528-GEMM grid favours:
  // calibration/fit/h200_profile_2026-11-28.md), so only the reproduction is
  // held here.
  const std::string h200 = "calibration/measurements/h200-x4/";
  const std::string set = "calibration/measurements/h200-x1/calibration_set_2026-11-28/";
  TempDir dir;
  const auto out = (dir / "h200.yaml").string();
  auto fit = run_gcsim({"calibrate", "--fit", source_path(h200 + "microbench_2026-11-22.json"), "--fit",
                        source_path(h200 + "attention_2026-11-22.json"), "--fit",
                        source_path(set + "serving_kernels.json"), "--kernel-grid",
                        source_path(set + "kernel_grid.json"), "-o", out});
  INFO(fit.err);
  REQUIRE(fit.exit_status == 0);
  CHECK(without_command(read_text(out)) ==
        without_command(read_text(source_path("calibration/profiles/h200-sxm.yaml"))));
}

TEST_CASE("calibrate --measured-fixed-costs keeps the split the runs measured", "[scenario]") {
  // The H200 set: the kernel grid's median stream gap 1.258 us
  // (test_h200_kernel_grid.cpp), the 1-element kernel's 0.896 us and the
  // decode steps' graph gap 0.4165 us (test_calibration_fit.cpp): written
  // as whole nanoseconds, not fitted; the least squares fits the rest.
  const std::string h200 = "calibration/measurements/h200-x4/";
  const std::string set = "calibration/measurements/h200-x1/calibration_set_2026-11-28/";
  TempDir dir;
  const auto out = (dir / "split.yaml").string();
  auto fit = run_gcsim({"calibrate", "--fit", source_path(h200 + "microbench_2026-11-22.json"), "--fit",
                        source_path(set + "serving_kernels.json"), "--kernel-grid",
                        source_path(set + "kernel_grid.json"), "--measured-fixed-costs", "-o", out});
  INFO(fit.err);
  REQUIRE(fit.exit_status == 0);
  const std::string text = read_text(out);
  CHECK(text.find("kernel_launch_latency: 1258ns") != std::string::npos);
  CHECK(text.find("graph_kernel_launch_latency: 417ns") != std::string::npos);
  CHECK(text.find("tile_overhead: 896ns") != std::string::npos);
  CHECK(text.find("--measured-fixed-costs") != std::string::npos);  // the command that made it
}

TEST_CASE("calibrate --measured-fixed-costs without its measurements is bad input", "[cli]") {
  const std::string set = "calibration/measurements/h200-x1/calibration_set_2026-11-28/";
  const std::string micro = source_path("calibration/measurements/h200-x4/microbench_2026-11-22.json");
  TempDir dir;
  const auto out = (dir / "p.yaml").string();
  auto no_grid = run_gcsim({"calibrate", "--fit", micro, "--measured-fixed-costs", "-o", out});
  CHECK(no_grid.exit_status == 2);
  CHECK(no_grid.err.find("needs --kernel-grid") != std::string::npos);
  auto no_steps = run_gcsim({"calibrate", "--fit", micro, "--kernel-grid", source_path(set + "kernel_grid.json"),
                             "--measured-fixed-costs", "-o", out});
  CHECK(no_steps.exit_status == 2);
  CHECK(no_steps.err.find("serving_kernels_bench.py") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(out));
}

TEST_CASE("calibrate on missing or wrong files is bad input", "[cli]") {
  TempDir dir;
  auto missing = run_gcsim({"calibrate", "--fit", (dir / "none.json").string(), "-o",
                            (dir / "p.yaml").string()});
  CHECK(missing.exit_status == 2);
  CHECK(missing.err.find("none.json") != std::string::npos);
  write_text(dir / "other.json", R"({"schema": "gcsim.nccl_sweep.v1", "results": []})");
  auto schema = run_gcsim({"calibrate", "--fit", (dir / "other.json").string(), "-o",
                           (dir / "p.yaml").string()});
  CHECK(schema.exit_status == 2);
  CHECK(schema.err.find("gcsim.microbench.v1") != std::string::npos);
  write_text(dir / "not_profile.yaml", "hello: 1\n");
  auto bad = run_gcsim({"calibrate", "--validate", (dir / "not_profile.yaml").string()});
  CHECK(bad.exit_status == 2);
  CHECK(bad.err.find("not a calibration profile") != std::string::npos);
  auto no_out = run_gcsim({"calibrate", "--fit", source_path(kH100 + "microbench_2026-11-22.json")});
  CHECK(no_out.exit_status == 2);
  CHECK(no_out.err.find("-o PROFILE.yaml") != std::string::npos);
}
