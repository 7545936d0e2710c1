#include "workloads/inference/serving_framework.h"

namespace gcsim::workloads::inference {

namespace {

using training::FrameworkPass;
using training::PassAccess;
using Passes = EagerServingPasses::Passes;

// Bytes per element: bf16 activations, fp32 inside the norm and the
// sampler, int64 token ids and bool masks.
constexpr double kF32 = 4, kB16 = 2, kI64 = 8, kBool = 1;
// A per-row value (the norm's variance and rsqrt): one fp32 read and written.
constexpr double kRowScalar = 2 * kF32;
constexpr PassAccess kGeneric = PassAccess::generic;
constexpr PassAccess kVectorized = PassAccess::vectorized;
// SiLU: an exponential and a reciprocal per element.
constexpr double kSigmoid = 2;

// Fitted by calibration/fit/serving_fit.py on calibration/measurements/
// h100-x4/serving_step_2026-11-26 (calibration/fit/serving_fit_2026-11-26.md).
// The host cost per launch: bisection on the eager decode step (host-bound)
// at TP4 batch 1 KV 512 (34.33 us) and batch 256 KV 2048 (44.91 us),
// averaged: that machine's CPU (64 cores, one Python process per GPU); the
// training eager profile's 48.6 us (autograd included) was the H200
// machine's. The vectorized passes' fraction of the achieved HBM bandwidth:
// bisection on the elementwise + norm class of the TP4 8192-token prefill,
// which stays above the measured one (+6%) even at 1.0: capped at 1 (those
// passes stream 67M-element tensors at 3.0 TB/s, the training profile's
// fraction was fitted on smaller ones). The generic passes' SM operations per
// element: the training eager profile's count with which this fit was made
// (161.2, 2026-11-26). The training count has since moved to 178.2 (it also
// carries the training step's generic kernels its lists leave out, 21 of 186
// a step); fitting serving's own count at bandwidth 1.0 on the same point
// gives 147.0, which brings the TP4 prefills' class to -0 .. +6% and the
// graph decode steps' mean error 9.8 -> 8.0%, but the TP2 long prefills,
// whose GEMMs (-10%) and attention (-17 .. -19%) already run slower in the
// real step than gcsim says, to -10.1%: not adopted until those are
// modelled (calibration/fit/framework_eager_refit_2026-11-27.md). In [1, 400].
constexpr double kEagerServingHostUsPerKernel = 39.62;
constexpr double kEagerServingElementwiseBandwidth = 1.0;
constexpr double kEagerServingGenericOpsPerElement = 161.2;

}  // namespace

const char* serving_framework_name(ServingFramework f) {
  switch (f) {
    case ServingFramework::vllm: return "vllm";
    case ServingFramework::pytorch_eager: return "pytorch-eager";
  }
  return "?";
}

std::optional<ServingFramework> parse_serving_framework(const std::string& s) {
  if (s == "vllm") return ServingFramework::vllm;
  if (s == "pytorch-eager") return ServingFramework::pytorch_eager;
  return std::nullopt;
}

training::FrameworkTraits eager_serving_traits() {
  training::FrameworkTraits t = training::framework_traits(training::Framework::pytorch_eager);
  t.host_us_per_kernel = kEagerServingHostUsPerKernel;
  t.elementwise_bandwidth = kEagerServingElementwiseBandwidth;
  t.generic_ops_per_element = kEagerServingGenericOpsPerElement;
  return t;
}

namespace {
// PyTorch's reduce_kernel over each of `rows` fp32 rows of `cols`: the
// grid Reduce.cuh's setReduceConfig gives (eager_row_reduce_grid).
FrameworkPass row_reduce_pass(const char* name, int64_t rows, int64_t cols, int sm_count) {
  FrameworkPass p{name, rows * cols, kF32};
  const training::RowReduceGrid grid = training::eager_row_reduce_grid(rows, cols, sm_count);
  p.ctas = grid.ctas;
  p.threads = grid.threads;
  return p;
}
}  // namespace

Passes EagerServingPasses::rms_norm(int64_t rows, int64_t cols, int sm_count) {
  const int64_t n = rows * cols;
  const FrameworkPass mean = row_reduce_pass(" mean", rows, cols, sm_count);
  // x.to(float32), x.pow(2), .mean(-1), var + eps, rsqrt, x * rsqrt (a
  // per-row broadcast), .to(bf16), weight * x (a per-column broadcast; one
  // row is the weight's own shape, which TensorIterator runs vectorized:
  // torch.profiler names vectorized_elementwise_kernel<8> there at batch 1,
  // elementwise_kernel<128, 4> from batch 32, calibration/measurements/
  // h100-sxm/serving_kernels_2026-11-27 `ops`).
  return {{" cast fp32", n, kB16 + kF32, kGeneric},
          {" pow", n, kF32 + kF32},
          mean,
          {" add eps", rows, kRowScalar},
          {" rsqrt", rows, kRowScalar, kVectorized, 1},
          {" mul rsqrt", n, kF32 + kF32, kGeneric},
          {" cast bf16", n, kF32 + kB16},
          {" mul weight", n, kB16 + kB16, rows == 1 ? kVectorized : kGeneric}};
}

Passes EagerServingPasses::rope(int64_t q_elements, int64_t k_elements) {
  // Hugging Face's rotate-half on q and k: the same unfused passes as the
  // training eager profile's forward (FrameworkProfile::rope_forward).
  const training::FrameworkProfile eager(training::Framework::pytorch_eager);
  return eager.rope_forward(q_elements, k_elements);
}

Passes EagerServingPasses::rope_tables(int64_t tokens, int64_t head_dim) {
  const int64_t n = tokens * head_dim;
  // cos[positions], sin[positions]: an index gather each.
  return {{" cos gather", n, 2 * kB16, kGeneric}, {" sin gather", n, 2 * kB16, kGeneric}};
}

Passes EagerServingPasses::kv_write(int64_t kv_elements) {
  // cache[..., slot] = k and = v: strided copies of the heads-first views.
  return {{" k copy", kv_elements, 2 * kB16, kGeneric}, {" v copy", kv_elements, 2 * kB16, kGeneric}};
}

Passes EagerServingPasses::residual_add(int64_t elements) {
  return {{" add", elements, 3 * kB16}};
}

Passes EagerServingPasses::swiglu(int64_t rows, int64_t cols) {
  // gate and up are the two halves of one GEMM output (strided views); of
  // one row each half is contiguous, and both kernels run vectorized
  // (vectorized_elementwise_kernel<8> at batch 1, elementwise_kernel<128, 4>
  // from batch 32: serving_kernels_2026-11-27 `ops`).
  const int64_t n = rows * cols;
  const PassAccess a = rows == 1 ? kVectorized : kGeneric;
  return {{" silu", n, 2 * kB16, a, kSigmoid}, {" mul", n, 3 * kB16, a}};
}

Passes EagerServingPasses::embedding(int64_t tokens, int64_t hidden, int tp) {
  const int64_t n = tokens * hidden;
  Passes out;
  if (tp > 1) {
    // mask = (ids < start) | (ids >= end); local = (ids - start).masked_fill(mask, 0)
    out.push_back({" ids lt", tokens, kI64 + kBool});
    out.push_back({" ids ge", tokens, kI64 + kBool});
    out.push_back({" mask or", tokens, 3 * kBool});
    out.push_back({" ids sub", tokens, 2 * kI64});
    out.push_back({" ids masked_fill", tokens, 2 * kI64 + kBool});
  }
  out.push_back({" gather", n, 2 * kB16});
  // rows outside this rank's range zeroed (a per-row mask, broadcast)
  if (tp > 1) out.push_back({" masked_fill", n, 2 * kB16, kGeneric});
  return out;
}

Passes EagerServingPasses::sampler(int64_t rows, int64_t vocab, int tp) {
  const int64_t n = rows * vocab;
  Passes out;
  // [tp, rows, vocab / tp] -> [rows, vocab]
  if (tp > 1) out.push_back({" logits permute", n, 2 * kB16, kGeneric});
  out.push_back({" logits fp32", n, kB16 + kF32, kGeneric});
  return out;
}

Passes EagerServingPasses::argmax(int64_t rows, int64_t vocab, int sm_count) {
  // PyTorch's reduce_kernel over each row of logits, a CTA a row: a decode
  // step's few rows run on as many SMs (8 x 128256 fp32: 27.5 us on an
  // H100, 8 x 32000: 10.2 us; calibration/measurements/h100-x4/
  // serving_step_l3_8b_2026-11-27 and serving_step_2026-11-26).
  return {row_reduce_pass(" argmax", rows, vocab, sm_count)};
}

}  // namespace gcsim::workloads::inference
