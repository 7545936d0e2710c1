// The vocabulary-parallel cross entropy under TP (framework_profile.h,
// cross_entropy_forward/backward with tp > 1): Megatron-LM's autograd
// function of eager PyTorch ops, which strategy_step_bench.py runs in both
// builds (the compiled build compiles the final norm only under TP). By
// hand, then pass by pass against the kernels torch.profiler timed inside
// the measured TP4 steps (rank 0, 8 x 4096 tokens x 8000 columns; one
// launch each per step) on 4 H100s and 4 H200s (calibration/measurements/
// h100-x4 and h200-x4/strategy_step_2026-11-26), and against the last
// pipeline stage of the compiled TP2xPP2 step (calibration/measurements/
// h100-x4/strategy_ranks_2026-11-27, calibration/fit/strategy_ranks_2026-11-27.md).
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


double bytes(const std::vector<FrameworkPass>& passes) {
  double b = 0;
  for (const auto& p : passes) b += static_cast<double>(p.elements) * p.bytes_per_element;
  return b;
}

nlohmann::json load(const std::string& file) {
  std::ifstream in(std::string(GCSIM_SOURCE_DIR) + "/calibration/measurements/" + file);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

// µs per launch of the kernels of `kernels` (a rank's kernel table) whose
// name holds every one of `parts`, and their launches per step.
std::pair<double, double> per_launch(const nlohmann::json& kernels, std::initializer_list<const char*> parts) {
  double us = 0, calls = 0;
  for (const auto& k : kernels) {
    const std::string name = k.at("name").get<std::string>();
    bool all = true;
    for (const char* part : parts) all = all && name.find(part) != std::string::npos;
    if (!all) continue;
    us += k.at("per_step_us").get<double>();
    calls += k.at("per_step_count").get<double>();
  }
  REQUIRE(calls > 0);
  return {us / calls, calls};
}

const nlohmann::json& point(const nlohmann::json& run, const std::string& strategy, const std::string& build) {
  for (const auto& r : run.at("results")) {
    if (r.at("strategy") == strategy && r.at("build") == build) return r;
  }
  FAIL("no " << strategy << " " << build);
  return run;
}

// The loss's big kernels: the pass, the measured kernel's name parts, and
// whether the eager step launches that kernel for the loss alone (its sum
// and broadcast mul are also the eager norms' kernels).
struct LossKernel {
  const char* pass;
  bool backward;
  std::initializer_list<const char*> parts;
  bool eager_unique;
};
const LossKernel kLossKernels[] = {
    {" max", false, {"reduce_kernel<512, 1", "MaxOps<float>"}, true},
    {" sub max", false, {"elementwise_kernel<128, 2", "gpu_kernel_impl_nocast<at::native::CUDAFunctor_add<float>"}, true},
    {" exp", false, {"exp_kernel_cuda"}, true},
    {" sum", false, {"reduce_kernel<512, 1", "sum_functor<float, float, float>"}, false},
    {" div sum", false, {"elementwise_kernel<128, 2", "DivFunctor<float>"}, true},
    {" bwd mul", true, {"elementwise_kernel<128, 2", "gpu_kernel_impl_nocast<at::native::BinaryFunctor", "MulFunctor<float>"}, false},
};

}  // namespace

TEST_CASE("vocabulary-parallel cross entropy: passes and bytes, hand-counted", "[training][framework]") {
  const FrameworkProfile eager(Framework::pytorch_eager);
  const FrameworkProfile compiled(Framework::torch_compile);
  const FrameworkProfile megatron(Framework::megatron);
  const int64_t tokens = 4096, cols = 16000, n = tokens * cols;
  for (const FrameworkProfile* p : {&eager, &compiled}) {
    const auto fwd = p->cross_entropy_forward(tokens, cols, 2);
    const auto bwd = p->cross_entropy_backward(tokens, cols, 2);
    // Forward over the logits: the fp32 cast (2 + 4 B), max (4), the
    // difference (4 + 4), exp in place (4 + 4), sum (4), the division in
    // place (4 + 4): 38 B an element; per token: the target's mask, shift,
    // fill, gather and mask (9 + 9 + 3 + 16 + 17 + 16 + 9), the log (8),
    // the loss (12), the mean (4): 103 B.
    CHECK(fwd.size() == 16);
    CHECK(bytes(fwd) == Approx(38.0 * n + 103.0 * tokens));
    // Backward: the scale in place (4 + 4) and the cast to bf16 (4 + 2)
    // over the logits; per token arange, float, 1 - x, index, sub, index_put
    // (8 + 5 + 8 + 24 + 12 + 24), and the 0-dim g / n (8 B).
    CHECK(bwd.size() == 9);
    CHECK(bytes(bwd) == Approx(14.0 * n + 81.0 * tokens + 8.0));
    // Every pass is an eager PyTorch kernel, in both builds.
    for (const auto& pass : fwd) CHECK(pass.eager_kernel);
    for (const auto& pass : bwd) CHECK(pass.eager_kernel);
    CHECK(named(fwd, " sub max").access == PassAccess::generic);
    CHECK(named(fwd, " exp").access == PassAccess::streaming);
    CHECK(named(bwd, " bwd mul").access == PassAccess::generic);
  }
  // TP 1 keeps the builds' own losses (the compiled one fused into one
  // reduction pass); Megatron's fused kernels stay the layer code's.
  CHECK(compiled.cross_entropy_forward(tokens, 32000, 1).size() == 2);
  CHECK(compiled.cross_entropy_forward(tokens, 32000).front().access == PassAccess::reduction);
  CHECK(megatron.cross_entropy_forward(tokens, cols, 2).empty());
  CHECK(megatron.cross_entropy_backward(tokens, cols, 4).empty());
}

TEST_CASE("vocabulary-parallel cross entropy: a compiled build costs its eager kernels as eager",
          "[training][framework]") {
  const FrameworkProfile eager(Framework::pytorch_eager);
  const FrameworkProfile compiled(Framework::torch_compile);
  const FrameworkTraits e = framework_traits(Framework::pytorch_eager);
  for (const auto& pass : compiled.cross_entropy_forward(4096, 16000, 2)) {
    const auto sc = compiled.shape(pass), se = eager.shape(pass);
    CHECK(sc.flops_per_element == se.flops_per_element);
    CHECK(sc.bandwidth_efficiency == se.bandwidth_efficiency);
  }
  const auto sub = compiled.shape(named(compiled.cross_entropy_forward(4096, 16000, 2), " sub max"));
  CHECK(sub.flops_per_element == e.generic_ops_per_element);
  CHECK(sub.bandwidth_efficiency == e.elementwise_bandwidth);
  // A compiled pass of the same access keeps the compiled traits.
  FrameworkPass own = named(compiled.cross_entropy_forward(4096, 16000, 2), " sub max");
  own.eager_kernel = false;
  CHECK(compiled.shape(own).flops_per_element == framework_traits(Framework::torch_compile).generic_ops_per_element);
}

TEST_CASE("vocabulary-parallel cross entropy against the TP4 steps' kernels on 4 H100s and 4 H200s",
          "[training][framework]") {
  const FrameworkProfile compiled(Framework::torch_compile);
  const FrameworkProfile eager(Framework::pytorch_eager);
  const int64_t tokens = 8 * 4096, cols = 32000 / 4;
  struct Case {
    const char* preset;
    const char* file;
  };
  for (const Case& c : {Case{"h100-sxm", "h100-x4/strategy_step_2026-11-26/strategy_step.json"},
                        Case{"h200-sxm", "h200-x4/strategy_step_2026-11-26/strategy_step.json"}}) {
    const models::gpu::GpuSpec gpu = test::gpu_preset(c.preset);
    const nlohmann::json run = load(c.file);
    for (const char* build : {"compile", "eager"}) {
      const FrameworkProfile& fw = std::string(build) == "compile" ? compiled : eager;
      const auto fwd = fw.cross_entropy_forward(tokens, cols, 4);
      const auto bwd = fw.cross_entropy_backward(tokens, cols, 4);
      const auto& kernels = point(run, "TP4", build).at("rank0_kernels");
      for (const LossKernel& k : kLossKernels) {
        if (&fw == &eager && !k.eager_unique) continue;
        INFO(c.preset << " " << build << " " << k.pass);
        const auto [measured, calls] = per_launch(kernels, k.parts);
        const double sim = pass_us(gpu, fw, named(k.backward ? bwd : fwd, k.pass));
        INFO(sim << " us, measured " << measured << " us (" << calls << " launches a step)");
        CHECK(calls == 1.0);  // one loss a step: these kernels are the loss's alone
        const FrameworkPass& pass = named(k.backward ? bwd : fwd, k.pass);
        if (pass.access == PassAccess::streaming) {
          // The reductions and exp at the presets' achieved bandwidth (3-5%
          // above the copy rate measured on those machines): within 15% (the
          // max reduction on the H200s reaches 0.88 of it: -11 .. -13%).
          CHECK(std::abs(sim / measured - 1.0) <= 0.15);
        } else {
          // The broadcast sub, div and mul at eager's fitted SM work per
          // element (178.2, fitted on the single-GPU step's 8M-element
          // kernels): 1000 us on both GPUs where these 262M-element kernels
          // take 855-925 us on the H100s and 755-838 us on the H200s (partly
          // HBM-bound: 1.1x apart). gcsim is 8-17% high on the H100s and
          // 19-33% on the H200s; not refitted here (calibration/fit/
          // strategy_ranks_2026-11-27.md): these bounds hold the miss, they
          // are not the bar.
          CHECK(sim >= measured);
          CHECK(sim / measured - 1.0 <= (std::string(c.preset) == "h100-sxm" ? 0.20 : 0.35));
        }
      }
    }
  }
}

TEST_CASE("TP2xPP2 compiled, last stage: the head and loss kernels against gcsim's passes",
          "[training][framework]") {
  // calibration/measurements/h100-x4/strategy_ranks_2026-11-27: every rank's
  // kernel table; rank 2 is the last stage's TP rank 0 (8 micro-batches of
  // 4096 tokens, 16000 of the 32000 columns), rank 0 the first stage's.
  const nlohmann::json run = load("h100-x4/strategy_ranks_2026-11-27/strategy_ranks.json");
  const auto& rec = point(run, "TP2xPP2", "compile");
  const auto& last = rec.at("ranks").at(2);
  const auto& first = rec.at("ranks").at(0);
  REQUIRE(last.at("pp_rank") == 1);
  REQUIRE(first.at("pp_rank") == 0);
  const models::gpu::GpuSpec h100 = test::gpu_preset("h100-sxm");
  const FrameworkProfile compiled(Framework::torch_compile);
  const int64_t tokens = 4096, cols = 16000, hidden = 4096, micro = 8;
  const auto fwd = compiled.cross_entropy_forward(tokens, cols, 2);
  const auto bwd = compiled.cross_entropy_backward(tokens, cols, 2);
  auto us = [&](const FrameworkPass& p) { return pass_us(h100, compiled, p); };
  // The loss's big kernels, one launch each a micro-batch.
  for (const LossKernel& k : kLossKernels) {
    INFO(k.pass);
    const auto [measured, calls] = per_launch(last.at("kernels"), k.parts);
    CHECK(calls == static_cast<double>(micro));
    const FrameworkPass& pass = named(k.backward ? bwd : fwd, k.pass);
    const double sim = us(pass);
    INFO(sim << " us, measured " << measured << " us");
    if (pass.access == PassAccess::streaming) {
      // 65.5M elements: the max reduction reaches 2.29 TB/s here (2.88 on
      // TP4's 262M), the sum 2.64: within 25% (the max, -23%).
      CHECK(std::abs(sim / measured - 1.0) <= 0.25);
    } else {
      // The generic passes as on TP4 (above): 25-30% high at this size.
      CHECK(sim >= measured);
      CHECK(sim / measured - 1.0 <= 0.35);
    }
  }
  // PyTorch's casting copies (unrolled direct_copy): the last stage runs
  // four a micro-batch (logits.float(), the target mask's float, the head's
  // input gradient and its weight gradient to fp32); the first stage none.
  const auto [copy_us, copy_calls] = per_launch(last.at("kernels"), {"unrolled_elementwise_kernel<at::native::direct_copy"});
  CHECK(copy_calls == 4.0 * micro);
  const double copies_sim =
      micro * (us(named(fwd, " logits fp32")) + us(named(bwd, " bwd mask float")) +
               us(compiled.tp_head_grad_cast(tokens * hidden, 2).at(0)) +
               us(compiled.weight_grad_cast(hidden * cols, true, true).at(0)));
  INFO("casting copies: gcsim " << copies_sim << " us, measured " << copy_us * copy_calls << " us a step");
  // Generic passes (the same SM work per element as above): within 30%.
  CHECK(copies_sim / (copy_us * copy_calls) - 1.0 <= 0.30);
  CHECK(copies_sim >= copy_us * copy_calls * 0.95);
  // The vectorized bf16 copies the last stage runs beyond the first: the
  // head weight's cast, the final norm's output cast and the loss
  // gradient's cast back, three a micro-batch, at the copy rate.
  const auto [b_last, n_last] = per_launch(last.at("kernels"), {"bfloat16_copy_kernel_cuda"});
  const auto [b_first, n_first] = per_launch(first.at("kernels"), {"bfloat16_copy_kernel_cuda"});
  CHECK(n_last - n_first == 3.0 * micro);
  const double casts_measured = b_last * n_last - b_first * n_first;
  const double casts_sim = micro * (us(compiled.weight_cast(hidden * cols, true).at(0)) +
                                    us(compiled.tp_piece_forward(tokens * hidden, 2).at(0)) +
                                    us(named(bwd, " bwd cast bf16")));
  INFO("bf16 casts: gcsim " << casts_sim << " us, measured " << casts_measured << " us a step");
  // Streaming at the preset's achieved bandwidth, 3% above the copy rate.
  CHECK(std::abs(casts_sim / casts_measured - 1.0) <= 0.10);
}

TEST_CASE("compiled TP head: the eager head's casts, hand-counted", "[training][framework]") {
  const FrameworkProfile compiled(Framework::torch_compile);
  const FrameworkProfile eager(Framework::pytorch_eager);
  // The final norm's fp32 output cast to bf16 (4 + 2 B) and its gradient
  // back (2 + 4 B), generic and eager; nothing at TP 1 or when eager (the
  // eager norm's backward has the cast).
  const auto g = compiled.tp_head_grad_cast(1000, 2);
  REQUIRE(g.size() == 1);
  CHECK(bytes(g) == 6000);
  CHECK(g[0].access == PassAccess::generic);
  CHECK(g[0].eager_kernel);
  CHECK(compiled.tp_head_grad_cast(1000, 1).empty());
  CHECK(eager.tp_head_grad_cast(1000, 4).empty());
  // An eager linear of a compiled build: its gradient cast takes PyTorch's
  // generic path; a compiled one inductor's plain kernel.
  CHECK(compiled.weight_grad_cast(1000, false, true).at(0).access == PassAccess::generic);
  CHECK(compiled.weight_grad_cast(1000, false, false).at(0).access == PassAccess::streaming);
  CHECK(bytes(compiled.weight_grad_cast(1000, true, true)) == 18000);
}
