// The kernel cost model against kernels measured on a real H100 SXM through
// the device tool (calibration/measurements/README.md, 2026-11-22), with the
// h100-sxm preset as shipped. This is a prediction test: the preset's
// efficiencies are single numbers per unit, not fitted per shape.
#include <fstream>
#include <iostream>
#include <memory>

#include "calibration/fit/kernel_validation.h"
#include "catch.h"
#include "preset_fixtures.h"

using namespace gcsim;

namespace {
std::vector<nlohmann::json> h100_runs() {
  std::vector<nlohmann::json> runs;
  for (const char* f : {"torch_kernels_2026-11-22.json", "torch_kernels_2026-11-22_repeat.json",
                        "torch_kernels_2026-11-22_call1_earlier_script.json"}) {
    std::ifstream in(std::string(GCSIM_SOURCE_DIR) + "/calibration/measurements/h100-sxm/" + f);
    REQUIRE(in);
    runs.push_back(nlohmann::json::parse(in));
  }
  return runs;
}

models::gpu::GpuSpec h100() { return test::gpu_preset("h100-sxm"); }

double error_of(const std::vector<calibration::KernelComparison>& rows, const std::string& label) {
  for (const auto& r : rows) {
    if (r.label == label) return r.error();
  }
  FAIL("no measurement for " << label);
  return 0;
}
}  // namespace

TEST_CASE("H100 kernel predictions against measurements", "[gpu][validation]") {
  const auto rows = calibration::compare_with_measurements(h100(), h100_runs());
  std::cout << calibration::comparison_table(rows);
  REQUIRE(rows.size() >= 20);

  // Large bf16 GEMMs (compute bound): within 12% of a rested H100.
  for (const char* s : {"gemm bf16 8192x8192x8192", "gemm bf16 8192x12288x4096", "gemm bf16 8192x4096x4096",
                        "gemm bf16 8192x16384x4096", "gemm bf16 8192x4096x16384"}) {
    INFO(s);
    CHECK(std::fabs(error_of(rows, s)) < 0.12);
  }
  // Mid-size GEMMs run 530-580 TF/s on the device (measured right after the
  // power-capped 8192^3 runs); the model predicts ~740: a gap of ~23%. On the
  // rested 2x H200 (same GH100 compute) 4096^3 took 183.5 us, the model 182.9
  // (calibration/measurements/h200-x2/README.md).
  CHECK(std::fabs(error_of(rows, "gemm bf16 4096x4096x4096")) < 0.30);
  CHECK(std::fabs(error_of(rows, "gemm bf16 2048x2048x2048")) < 0.30);
  // Wave quantization: 132 vs 144 tiles of 128x256 on 132 SMs.
  CHECK(std::fabs(error_of(rows, "gemm bf16 1536x2816x8192")) < 0.15);
  // Skinny, memory-bound GEMMs (decode GEMV reads 128 MiB of weights).
  CHECK(std::fabs(error_of(rows, "gemm bf16 1x8192x8192")) < 0.15);
  // Streaming copy and add of 1 GiB tensors: bandwidth bound.
  CHECK(std::fabs(error_of(rows, "memory copy 536870912 elements")) < 0.05);
  CHECK(std::fabs(error_of(rows, "memory add 536870912 elements")) < 0.05);

  // Layer and RMS norm at the preset's row-reduction bandwidth.
  CHECK(std::fabs(error_of(rows, "memory layer_norm 33554432 elements")) < 0.10);
  CHECK(std::fabs(error_of(rows, "memory rms_norm 33554432 elements")) < 0.10);
  // FlashAttention-2 (PyTorch SDPA) forward, backward and GQA decode.
  for (const char* s : {"attention fwd b4 h32/32 q2048 kv2048",
                        "attention fwd b4 h32/32 q2048 kv2048 causal",
                        "attention bwd b4 h32/32 q2048 kv2048 causal",
                        "attention fwd b1 h32/32 q8192 kv8192 causal",
                        "attention fwd b64 h32/8 q1 kv4096"}) {
    INFO(s);
    CHECK(std::fabs(error_of(rows, s)) < 0.15);
  }

  double sum = 0;
  for (const auto& r : rows) sum += std::fabs(r.error());
  // Mean over every measured kernel, small and odd ones included.
  // Small GEMMs (<= 1024^3, fixed costs of 6-10 us) and softmax are the
  // largest misses; the mean over all 31 kernels is 11.7% as shipped.
  CHECK(sum / static_cast<double>(rows.size()) < 0.15);
}
