// The eager profile's streaming passes (framework_profile.h,
// PassAccess::streaming): the loss's row kernels over the vocabulary and
// SwiGLU's gradient cat, their loads counted and run at the achieved HBM
// bandwidth with no fitted fraction. By hand, then each against the very
// kernel torch.profiler timed inside the measured eager steps on one H100
// and one H200 (calibration/measurements/h100-sxm and h200-x1/
// framework_step_2026-11-26), on the GPU presets the validation configs use.
#include <cmath>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "catch.h"
#include "framework_pass_fixtures.h"
#include "models/gpu/kernel_cost_model.h"
#include "preset_fixtures.h"
#include "workloads/training/framework_profile.h"

using namespace gcsim;
using namespace gcsim::workloads::training;

namespace {

using test::named;
using test::pass_us;


// µs per call of the kernels whose name holds `part` in one measured shape.
double measured_us_per_call(const std::string& file, const std::string& shape, const std::string& part) {
  std::ifstream in(std::string(GCSIM_SOURCE_DIR) + "/calibration/measurements/" + file);
  REQUIRE(in.good());
  const nlohmann::json run = nlohmann::json::parse(in);
  for (const auto& r : run.at("results")) {
    if (r.at("build") != "eager" || r.at("shape").at("name") != shape) continue;
    double us = 0, calls = 0;
    for (const auto& k : r.at("kernels")) {
      if (k.at("name").get<std::string>().find(part) == std::string::npos) continue;
      us += k.at("per_step_us").get<double>();
      calls += k.at("per_step_count").get<double>();
    }
    REQUIRE(calls > 0);
    return us / calls;
  }
  FAIL("no eager shape " << shape << " in " << file);
  return 0;
}

}  // namespace

TEST_CASE("eager streaming passes: the loss's loads and the gradient cat, by hand", "[training][framework]") {
  const FrameworkProfile eager(Framework::pytorch_eager);
  // Rows of 32000 fp32 (125 KiB) pass a CTA's 48 KiB: PyTorch's three-pass
  // kernel, whose forward loads each row for the max, the sum and the write,
  // and whose backward loads the gradient twice (sum, then with the output).
  const auto fwd = eager.cross_entropy_forward(4096, 32000);
  const auto& lsm = named(fwd, " log_softmax");
  CHECK(lsm.access == PassAccess::streaming);
  CHECK(lsm.multipass_row_loads);
  CHECK(lsm.bytes_per_element == 8.0);  // one load and the store, 4 B each
  const auto& bwd = named(eager.cross_entropy_backward(4096, 32000), " log_softmax bwd");
  CHECK(bwd.access == PassAccess::streaming);
  CHECK(bwd.bytes_per_element == 16.0);  // three loads and the store
  // Rows of 8192 fp32 (32 KiB) stay in shared memory: one load of each.
  CHECK_FALSE(named(eager.cross_entropy_forward(512, 8192), " log_softmax").multipass_row_loads);
  CHECK(named(eager.cross_entropy_backward(512, 8192), " log_softmax bwd").bytes_per_element == 12.0);
  // SwiGLU's backward cats two contiguous gradients: a copy (r2 w2 per element).
  const auto& cat = named(eager.swiglu_backward(1000), " cat");
  CHECK(cat.access == PassAccess::streaming);
  CHECK(cat.elements == 2000);
  CHECK(cat.bytes_per_element == 4.0);
  // The compiled build keeps its own passes (one fused kernel each).
  for (const auto& p : FrameworkProfile(Framework::torch_compile).swiglu_backward(1000)) {
    CHECK(p.access != PassAccess::streaming);
  }

  // Streaming: the full achieved bandwidth, whatever the profile's fitted
  // fraction; the three-pass forward's bytes take the GPU's
  // multipass_reads loads of each row (2.25 on the H100 preset).
  FrameworkTraits slow = framework_traits(Framework::pytorch_eager);
  slow.elementwise_bandwidth = 0.25;
  const FrameworkProfile slow_profile(Framework::pytorch_eager, slow);
  CHECK(slow_profile.shape(lsm).bandwidth_efficiency == 1.0);
  const models::gpu::GpuSpec h100 = test::gpu_preset("h100-sxm");
  REQUIRE(h100.efficiency.softmax.multipass_reads == 2.25);
  const auto k = models::gpu::memory_kernel(h100, eager.shape(lsm));
  const double n = 4096.0 * 32000;
  CHECK(k.bytes_per_tile * static_cast<double>(k.tiles) == Approx((2.25 + 1.0) * 4.0 * n));
}

TEST_CASE("eager streaming passes against the kernels of the measured steps", "[training][framework]") {
  const FrameworkProfile eager(Framework::pytorch_eager);
  struct Case {
    const char* preset;
    const char* file;
    const char* shape;
    int64_t tokens, vocab, ffn;
  };
  const Case cases[] = {
      {"h100-sxm", "h100-sxm/framework_step_2026-11-26/framework_step.json", "llama_h2048_L4_s2048_b2", 4096, 32000, 5632},
      {"h100-sxm", "h100-sxm/framework_step_2026-11-26/framework_step.json", "llama_h4096_L2_s4096_b1", 4096, 32000, 11008},
      {"h100-sxm", "h100-sxm/framework_step_2026-11-26/framework_step.json", "llama_h2048_L4_s4096_b1_v128k", 4096, 128256, 5632},
      {"h200-sxm", "h200-x1/framework_step_2026-11-26/framework_step.json", "llama_h2048_L4_s2048_b2", 4096, 32000, 5632},
      {"h200-sxm", "h200-x1/framework_step_2026-11-26/framework_step.json", "llama_h4096_L2_s4096_b1", 4096, 32000, 11008},
      {"h200-sxm", "h200-x1/framework_step_2026-11-26/framework_step.json", "llama_h2048_L4_s4096_b1_v128k", 4096, 128256, 5632},
  };
  for (const Case& c : cases) {
    INFO(c.preset << " " << c.shape);
    const models::gpu::GpuSpec gpu = test::gpu_preset(c.preset);
    const bool large_vocabulary = c.vocab > 100000;
    const double fwd = pass_us(gpu, eager, named(eager.cross_entropy_forward(c.tokens, c.vocab), " log_softmax"));
    const double fwd_measured = measured_us_per_call(c.file, c.shape, "cunn_SoftMaxForward<");
    // Forward over 32000 columns: multipass_reads 2.25 is the H100 kernel
    // grid's (bf16 rows) and the H200 step's own value; the H100's fp32 rows
    // load 2.58 (-12%). Over 128256 columns the rows outgrow what L2 keeps
    // and both GPUs load 2.9 (-20 .. -25%): not modelled, so that bound is
    // the miss itself.
    INFO("forward " << fwd << " us, measured " << fwd_measured);
    CHECK(std::abs(fwd / fwd_measured - 1.0) <= (large_vocabulary ? 0.27 : 0.14));
    const double bwd = pass_us(gpu, eager, named(eager.cross_entropy_backward(c.tokens, c.vocab), " log_softmax bwd"));
    const double bwd_measured = measured_us_per_call(c.file, c.shape, "cunn_SoftMaxBackward<");
    // Backward: every load from HBM; the presets' achieved bandwidth (0.90 of
    // the pins) is 3% (H100) and 5% (H200) above the copy rate measured on
    // those machines, and the kernel reaches 0.93-0.98 of it: within 12%.
    INFO("backward " << bwd << " us, measured " << bwd_measured);
    CHECK(std::abs(bwd / bwd_measured - 1.0) <= 0.12);
    const double cat = pass_us(gpu, eager, named(eager.swiglu_backward(c.tokens * c.ffn), " cat"));
    const double cat_measured = measured_us_per_call(c.file, c.shape, "CatArrayBatchedCopy_vectorized<");
    // The cat is a plain copy: within 10% (the same 3-5% of the presets'
    // bandwidth, and its 45-120 us kernels' launch and tail).
    INFO("cat " << cat << " us, measured " << cat_measured);
    CHECK(std::abs(cat / cat_measured - 1.0) <= 0.10);
  }
}

TEST_CASE("eager streaming passes against the same kernels alone on a second H100", "[training][framework]") {
  // calibration/measurements/h100-sxm/elementwise_access_2026-11-27 (v2): the
  // loss's kernels and the gradient cat timed one by one at 4096 rows on
  // another H100 machine; nothing fitted to it.
  std::ifstream in(std::string(GCSIM_SOURCE_DIR) +
                   "/calibration/measurements/h100-sxm/elementwise_access_2026-11-27/elementwise_access.json");
  REQUIRE(in.good());
  const nlohmann::json run = nlohmann::json::parse(in);
  const models::gpu::GpuSpec h100 = test::gpu_preset("h100-sxm");
  const FrameworkProfile eager(Framework::pytorch_eager);
  auto measured = [&](const std::string& op) {
    for (const auto& r : run.at("results")) {
      if (r.at("op") == op && r.at("rows") == 4096) return r.at("time_us").get<double>();
    }
    FAIL("no " << op << " at 4096 rows");
    return 0.0;
  };
  const double fwd = pass_us(h100, eager, named(eager.cross_entropy_forward(4096, 32000), " log_softmax"));
  const double bwd = pass_us(h100, eager, named(eager.cross_entropy_backward(4096, 32000), " log_softmax bwd"));
  const double cat = pass_us(h100, eager, named(eager.swiglu_backward(4096 * 5632), " cat"));
  // Forward: 2.25 loads a row where this fp32 kernel loads 2.58 (-12%);
  // backward and cat within the presets' 3% bandwidth and launch/tail (8%).
  CHECK(fwd / measured("log_softmax fwd fp32 v32000") - 1.0 == Approx(-0.12).margin(0.04));
  CHECK(std::abs(bwd / measured("log_softmax bwd fp32 v32000") - 1.0) <= 0.08);
  CHECK(std::abs(cat / measured("swiglu grad cat (contiguous) bf16") - 1.0) <= 0.08);
}
