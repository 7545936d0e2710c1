#include "workloads/training/optimizer_step.h"

namespace gcsim::workloads::training {

namespace {
constexpr double kFp32 = 4.0;  // bytes: main gradient and master weight

// PyTorch's clip_grad_norm_ and foreach AdamW over fp32 parameters,
// gradients and states (optimizer_step.h lists the passes).
std::vector<OptimizerPass> torch_foreach_passes(const OptimizerConfig& o) {
  std::vector<OptimizerPass> p;
  if (o.grad_clip > 0) {
    p.push_back({"grad norm (foreach)", kFp32, 0.0, true, 2.0, true});
    p.push_back({"clip scale (foreach)", kFp32, kFp32, true, 1.0});
  }
  p.push_back({"weight decay (foreach)", kFp32, kFp32, true, 1.0});
  p.push_back({"m lerp (foreach)", 2 * kFp32, kFp32, true, 3.0});
  p.push_back({"v scale (foreach)", kFp32, kFp32, true, 1.0});
  p.push_back({"v addcmul (foreach)", 2 * kFp32, kFp32, true, 3.0});
  p.push_back({"sqrt v (foreach)", kFp32, kFp32, true, 1.0});
  p.push_back({"bias correction (foreach)", kFp32, kFp32, true, 1.0});
  p.push_back({"eps (foreach)", kFp32, kFp32, true, 1.0});
  p.push_back({"param addcdiv (foreach)", 3 * kFp32, kFp32, true, 3.0});
  return p;
}
}  // namespace

std::vector<OptimizerPass> optimizer_passes(const OptimizerConfig& o, Precision precision,
                                            Framework framework) {
  if (!o.step) return {};  // `optimizer.step: false`: no update, no passes
  if (framework != Framework::megatron) return torch_foreach_passes(o);
  const double g = o.grad_bytes;
  std::vector<OptimizerPass> passes;
  // The gradient buffers are zeroed before the next accumulation.
  passes.push_back({"zero gradients", 0.0, g, false, 0.0});
  // Gradients accumulated in 16 bits are copied to fp32 main gradients;
  // fp32 accumulation (grad_dtype: fp32) uses its buffer in place.
  if (g < kFp32) passes.push_back({"gradients to fp32", g, kFp32, true, 1.0});
  // fp16's dynamic loss scale: divide by the scale and look for inf/NaN.
  if (precision == Precision::fp16) passes.push_back({"unscale + inf check", kFp32, kFp32, true, 2.0, true});
  if (o.grad_clip > 0) passes.push_back({"gradient norm", kFp32, 0.0, true, 2.0, true});
  // Adam reads the gradient and its states (master weight, m, v) and writes
  // the states back.
  passes.push_back({"adam", kFp32 + o.state_bytes, o.state_bytes, true, 12.0});
  passes.push_back({"master to model weights", kFp32, o.weight_bytes, true, 1.0});
  return passes;
}

OptimizerScope optimizer_scope(const RankParams& p, int zero_stage, int dp_ranks, int expert_dp_ranks) {
  auto over = [&](bool sharded) {
    return p.dense / (sharded ? dp_ranks : 1) + p.expert / (sharded ? expert_dp_ranks : 1);
  };
  return {over(zero_stage >= 1), over(zero_stage >= 2)};
}

double optimizer_bytes(const std::vector<OptimizerPass>& passes, const OptimizerScope& scope) {
  double bytes = 0;
  for (const OptimizerPass& pass : passes) bytes += pass.bytes() * (pass.over_shard ? scope.shard : scope.held);
  return bytes;
}

}  // namespace gcsim::workloads::training
