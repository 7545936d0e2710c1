// A GPU at sustained clocks (models/gpu/sustained_clocks.h): tensor-core
// work is derated by the power-cap fraction, memory-bound work is not, and
// the datasheet peaks (MFU's denominator) stay.
#include "catch.h"
#include "gpu_test_specs.h"
#include "models/gpu/sustained_clocks.h"

using gcsim::models::gpu::at_sustained_clocks;
using gcsim::models::gpu::Dtype;

TEST_CASE("sustained clocks derate tensor-core efficiencies only", "[gpu][clocks]") {
  auto rested = gcsim::test::h100_datasheet();
  // Measured on an H100 SXM: 0.854 of the rested rate for GPT-3 175B TP8
  // layer GEMMs after the first second of back-to-back work
  // (calibration/measurements/h100-sxm/sustained_gemm_2026-11-22.json).
  rested.sustained_tensor_fraction = 0.854;
  const auto s = at_sustained_clocks(rested);
  CHECK(s.at_sustained_clocks);
  CHECK_FALSE(rested.at_sustained_clocks);
  for (Dtype d : {Dtype::tf32, Dtype::bf16, Dtype::fp16, Dtype::fp8, Dtype::int8}) {
    CHECK(s.efficiency.tensor_for(d) == Approx(rested.efficiency.tensor_for(d) * 0.854));
    CHECK(s.tensor_peak_for(d).flops_per_s() == rested.tensor_peak_for(d).flops_per_s());
  }
  CHECK(s.efficiency.attention == Approx(rested.efficiency.attention * 0.854));
  CHECK(s.efficiency.attention_backward == Approx(rested.efficiency.attention_backward * 0.854));
  // The SM clock stays at 1980 MHz through memory-bound kernels (same file):
  // HBM and CUDA-core rates are untouched.
  CHECK(s.efficiency.hbm == rested.efficiency.hbm);
  CHECK(s.efficiency.vector == rested.efficiency.vector);
  CHECK(s.efficiency.row_reduction == rested.efficiency.row_reduction);
  CHECK(s.hbm_bandwidth.bytes_per_s() == rested.hbm_bandwidth.bytes_per_s());
  // Derated once only: a spec already at sustained clocks (an exported
  // replay's, or the quiz's) is not cut to 0.854^2.
  const auto twice = at_sustained_clocks(s);
  CHECK(twice.efficiency.tensor_for(Dtype::bf16) == s.efficiency.tensor_for(Dtype::bf16));
  CHECK(twice.efficiency.attention == s.efficiency.attention);
}

TEST_CASE("a GPU without power capping is unchanged at sustained clocks", "[gpu][clocks]") {
  const auto rested = gcsim::test::h100_datasheet();  // fraction 1
  const auto s = at_sustained_clocks(rested);
  CHECK(s.efficiency.tensor == rested.efficiency.tensor);
  CHECK(s.efficiency.attention == rested.efficiency.attention);
}
