// Framework profiles against a real step: a Llama-style model (RMSNorm,
// rotary, SwiGLU, MHA, untied head, AMP over fp32 parameters, foreach
// AdamW) trained on one H200 in eager PyTorch and with each layer and the
// head + loss torch.compile'd (calibration/microbench/framework_step.py;
// calibration/measurements/h200-x1/framework_step_2026-11-26/
// framework_step.json, PyTorch 2.11, CUDA 13.0, cuDNN 9.19): step time =
// median spacing of 20 back-to-back steps; per class = torch.profiler's
// kernel durations summed over 3 steps. The configs are
// calibration/validation/framework_step/*.yaml (rested clocks: about a
// second of load per point).
//
// Fitted (calibration/fit/framework_fit.py) on h2048/L4/s2048/b2: the
// vectorized passes' bandwidth fraction and the generic passes' SM
// operations per element (framework_profile.h, PassAccess), the optimizer's
// bandwidth fraction; on the launch-bound h512 model: the host µs per
// kernel. Everything else is held out, and the same script's H100 run
// (calibration/measurements/h100-sxm/framework_step_2026-11-26) is held out
// whole. Tolerances: the fitted classes within 2% (what is left is the
// launch overheads the fit ignores); held-out elementwise classes within 6%
// on the H200 (+2.3 .. +5.2%: a pass more or less in the lists moves a
// class by ~5%); optimizer within 5% (+1.2 .. +1.6%); steps within 6% (the
// attention class, another model's, is +47 .. +67% of 1.3-2.3 ms and sets
// most of the step error, -3.3 .. +5.1%).
#include <iterator>
#include <string>

#include "catch.h"
#include "scenario/run_gcsim.h"

using gcsim::test::read_json;
using gcsim::test::run_gcsim;
using gcsim::test::source_path;
using gcsim::test::TempDir;

namespace {

struct Measured {
  const char* shape;
  const char* framework;
  double step_us, elementwise_us, optimizer_us;
  double elementwise_tol, step_tol;
};

// elementwise = every kernel that is not a GEMM, attention or multi-tensor
// optimizer kernel (elementwise, norm, copies, cross entropy, the
// embedding's sort), per step.
const Measured kPoints[] = {
    {"llama_h2048_L4_s2048_b2", "pytorch-eager", 30217.5, 11119.5, 8406.7, 0.02, 0.06},
    {"llama_h4096_L2_s4096_b1", "pytorch-eager", 48566.0, 12432.6, 16398.5, 0.06, 0.06},
    {"llama_h2048_L4_s4096_b1_v128k", "pytorch-eager", 53204.2, 17177.4, 18035.0, 0.06, 0.06},
    {"llama_h2048_L4_s2048_b2", "torch-compile", 21931.0, 3016.7, 8437.0, 0.02, 0.06},
    {"llama_h4096_L2_s4096_b1", "torch-compile", 40113.1, 4033.2, 16455.2, 0.06, 0.06},
    {"llama_h2048_L4_s4096_b1_v128k", "torch-compile", 40823.5, 4683.0, 18031.4, 0.06, 0.06},
};

// The same script on one H100 (PyTorch 2.11, CUDA 13.0), nothing refitted:
// the GPU-bound shapes. Eager's elementwise class +1.0 .. +3.3% (one
// bandwidth fraction for every pass, fitted on the H200, made it +20 ..
// +26%), so 5%; compiled +9.4 .. +11.3% (+10.6 .. +11.5% before the loss's
// log-softmax became a reduction pass with its own SM cost), so 13%: the
// plain kernels at the fraction fitted on the H200, where norm kernels
// partly bound by their SMs and reading from L2 lower it. Optimizer +2.7 ..
// +4.2% (6%); steps +1.6 .. +4.5% (6%).
const Measured kPointsH100[] = {
    {"llama_h2048_L4_s2048_b2", "pytorch-eager", 35329.8, 13121.0, 11483.1, 0.05, 0.06},
    {"llama_h4096_L2_s4096_b1", "pytorch-eager", 56663.1, 14851.7, 22491.3, 0.05, 0.06},
    {"llama_h2048_L4_s4096_b1_v128k", "pytorch-eager", 63474.9, 21013.7, 24652.4, 0.05, 0.06},
    {"llama_h2048_L4_s2048_b2", "torch-compile", 25593.7, 3666.5, 11487.1, 0.13, 0.06},
    {"llama_h4096_L2_s4096_b1", "torch-compile", 46993.6, 5077.8, 22493.1, 0.13, 0.06},
    {"llama_h2048_L4_s4096_b1_v128k", "torch-compile", 48046.8, 5801.7, 24703.5, 0.13, 0.06},
};

nlohmann::ordered_json run(const std::string& shape, const std::string& framework,
                           const std::string& gpu = "h200-sxm") {
  TempDir tmp;
  const auto r = run_gcsim({"run",
                            source_path("calibration/validation/framework_step/" + shape + ".yaml"),
                            "-s", "workload.framework=" + framework, "-s", "cluster.gpu=" + gpu,
                            "-o", (tmp / "out").string(), "-q"});
  REQUIRE(r.exit_status == 0);
  return read_json(tmp / "out" / "summary.json");
}

void check_points(const Measured* points, size_t n, const std::string& gpu, double optimizer_tol) {
  for (size_t i = 0; i < n; ++i) {
    const Measured& m = points[i];
    INFO(gpu << " " << m.shape << " " << m.framework);
    const auto s = run(m.shape, m.framework, gpu);
    const auto& k = s["breakdown"]["kernel_classes"];
    const double elementwise_us =
        (k["elementwise"].get<double>() + k["norm"].get<double>()) * 1e6;
    CHECK(elementwise_us == Approx(m.elementwise_us).epsilon(m.elementwise_tol));
    CHECK(k["optimizer"].get<double>() * 1e6 == Approx(m.optimizer_us).epsilon(optimizer_tol));
    CHECK(s["step_time_s"].get<double>() * 1e6 == Approx(m.step_us).epsilon(m.step_tol));
  }
}

}  // namespace

TEST_CASE("framework profiles: step and kernel classes against the H200 measurement",
          "[cli][training][framework]") {
  check_points(kPoints, std::size(kPoints), "h200-sxm", 0.05);
}

TEST_CASE("framework profiles: held out on an H100, nothing refitted",
          "[cli][training][framework]") {
  check_points(kPointsH100, std::size(kPointsH100), "h100-sxm", 0.06);
}

TEST_CASE("framework profiles: a small model is host-bound", "[cli][training][framework]") {
  // h512, 4 layers, 2 x 256 tokens: measured 19.55 ms eager and 7.95 ms
  // compiled per step while the GPU's kernels add up to 2.09 and 1.33 ms.
  // The host cost per kernel is fitted on these two steps (within 1%
  // here); Megatron's profile, whose host never waits, gives the GPU time.
  const auto eager = run("small_h512_L4_s256_b2", "pytorch-eager");
  const auto compiled = run("small_h512_L4_s256_b2", "torch-compile");
  const auto megatron = run("small_h512_L4_s256_b2", "megatron");
  CHECK(eager["step_time_s"].get<double>() == Approx(19.554e-3).epsilon(0.01));
  CHECK(compiled["step_time_s"].get<double>() == Approx(7.949e-3).epsilon(0.01));
  CHECK(megatron["step_time_s"].get<double>() < 1.5e-3);
  // The step is the host's: kernels x cost, within the last kernels' tail.
  const auto& host = eager["breakdown"]["host"];
  CHECK(host["issue_s"].get<double>() == Approx(eager["step_time_s"].get<double>()).epsilon(0.05));
  CHECK(host["wait_s"].get<double>() > 0.5 * eager["step_time_s"].get<double>());
  CHECK(megatron["breakdown"]["host"]["wait_s"].get<double>() == 0.0);
}

TEST_CASE("framework profiles: eager host issue time on held-out shapes",
          "[cli][training][framework]") {
  // The eager host's issue time per step, measured with the GPU kept busy
  // (torch.cuda._sleep ahead of the step): 16.52, 13.15 and 19.78 ms on the
  // three GPU-bound shapes; gcsim's kernels x the cost fitted on the small
  // model gives +17.5%, -18.3% and -1.9%. Host time is noisy (the five
  // repetitions of one shape spread over 12.4-18.9 ms), so 20%.
  const struct {
    const char* shape;
    double host_us;
  } points[] = {{"llama_h2048_L4_s2048_b2", 16524.5},
                {"llama_h4096_L2_s4096_b1", 13153.9},
                {"llama_h2048_L4_s4096_b1_v128k", 19784.5}};
  for (const auto& p : points) {
    INFO(p.shape);
    const auto s = run(p.shape, "pytorch-eager");
    CHECK(s["breakdown"]["host"]["issue_s"].get<double>() * 1e6 ==
          Approx(p.host_us).epsilon(0.20));
  }
}
