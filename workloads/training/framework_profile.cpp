#include "workloads/training/framework_profile.h"

#include "models/gpu/kernel_cost_model.h"

namespace gcsim::workloads::training {

namespace {

// Bytes per element of the tensors (fp32 residual stream and master
// weights, bf16 GEMM inputs and outputs under autocast).
constexpr double kF32 = 4, kB16 = 2;
// A per-row value (mean, rsqrt, log-sum-exp): one fp32 per row read and
// written, a launch of its own in eager PyTorch.
constexpr double kRowScalar = 2 * kF32;
// torch.compile's RMSNorm backward: the token count from which inductor
// folds the weight gradient's partial sums into the input gradient's
// kernel (measured on one H100: separate at 4096-7168 tokens, folded at
// 8192-16384; in the 4-GPU steps folded at 8192-32768), and tokens per row
// of partials (norm_backward).
constexpr int64_t kNormWeightFusedRows = 8192;
constexpr double kRowsPerPartial = 8;
// PyTorch's non-vectorised elementwise path and inductor's fused
// reductions (framework_profile.h).
constexpr PassAccess kGeneric = PassAccess::generic;
constexpr PassAccess kReduction = PassAccess::reduction;
constexpr PassAccess kVectorized = PassAccess::vectorized;
constexpr PassAccess kStreaming = PassAccess::streaming;
// Transcendentals per element: sigmoid is an exponential and a reciprocal.
constexpr double kSigmoid = 2;

// Whether PyTorch's eager (log_)softmax over fp32 rows of `cols` runs its
// three-pass kernel (rows past a CTA's 48 KiB of shared memory).
bool long_softmax_rows(int64_t cols) {
  return models::gpu::eager_softmax_kernel(cols, models::gpu::Dtype::fp32) ==
         models::gpu::EagerSoftmaxKernel::multipass;
}

// Fitted by calibration/fit/framework_fit.py on calibration/measurements/
// h200-x1/framework_step_2026-11-26 (calibration/fit/framework_profiles_2026-11-26.md),
// shape h2048, 4 layers, 2 x 2048 tokens: the vectorized passes' fraction of
// the achieved HBM bandwidth (against the measured vectorized kernels), the
// generic passes' SM operations per element (against the measured
// non-vectorised ones), the foreach optimizer's bandwidth fraction; and the
// host µs per launched kernel on the launch-bound small model (h512), the
// only shape whose step the host bounds. Held out on the same script's H100
// run and on 4 H100s under six strategies: the split carries across GPUs
// where one bandwidth fraction for all passes did not (0.548 eager made
// H100's elementwise class +20 .. +26%). torch-compile's two were refitted
// (0.807 -> 0.836, 130.6 -> 135.9) once the loss's log-softmax kernels
// became reduction passes with their own SM cost (below), which the
// vectorized fraction no longer absorbs. Both builds were refitted again
// (calibration/fit/framework_eager_refit_2026-11-27.md) once the passes
// measured at the achieved copy rate became streaming passes
// (PassAccess::streaming, their loads counted, no fraction): eager's loss row
// kernels and SwiGLU's gradient cat, and in both builds the passes over
// whole weights (casts, gradient accumulation, DDP's copies). The fraction
// had stood for the loss's three-pass kernels, the generic count had been
// lowered by the cat charged as a generic pass (3.3x its measured time), and
// the weights' casts had been charged the step's slower fraction: eager
// 0.739 -> 0.755 and 161.2 -> 178.2, torch-compile 0.836 -> 0.723 and
// 135.9 -> 122.3 (what is left in its vectorized class is the norms and
// pointwise chains, slower than a copy).
// Eager PyTorch's elementwise launches: CTAs of 128 threads, 4 elements a
// thread (ATen's num_threads() and thread_work_size(); the kernel names in
// the profiles carry them: elementwise_kernel<128, 4>).
constexpr int kEagerCtaThreads = 128;
constexpr int64_t kEagerThreadElements = 4;
constexpr double kEagerHostUsPerKernel = 48.6;
constexpr double kEagerElementwiseBandwidth = 0.755;
constexpr double kEagerGenericOpsPerElement = 178.2;
constexpr double kCompileHostUsPerKernel = 45.8;
constexpr double kCompileElementwiseBandwidth = 0.723;
constexpr double kCompileGenericOpsPerElement = 122.3;
// inductor's fused reductions (PassAccess::reduction): lane operations per
// element and SM cycles per CTA-long row, fitted by calibration/fit/
// reduction_fit.py on the compiled log-softmax forward alone on one H100 at
// 4096 rows of 32000 and of 128256 (calibration/measurements/h100-sxm/
// compiled_kernels_2026-11-26; calibration/fit/reduction_kernels_2026-11-26.md):
// held out at 8192 and 16384 rows +1.5 .. +3.8%. The same fit on the
// H200's training steps gives 61.15 and 2157.
constexpr double kCompileReductionOpsPerElement = 61.50;
constexpr double kCompileCyclesPerRow = 1549.0;
// The fraction of the achieved HBM bandwidth those reductions' bytes reach:
// plain contiguous Triton loops, which alone stream at 0.9-1.0 of it, above
// the step-fitted fraction of the vectorized passes (their backward, bound by
// its bytes on an H100, was +7 .. +12% at that fraction). Fitted by
// reduction_fit.py on the same run's log-softmax backward at 4096 rows of
// 32000 and 128256; held out on its other row counts and kernel_grid.py's
// loss shapes (calibration/fit/reduction_kernels_2026-11-26.md). Range
// [0.6, 1]: no slower than the framework's worst vectorized fraction, no
// faster than the achieved bandwidth.
constexpr double kCompileReductionBandwidth = 0.9127;
// Both builds run the same eager foreach AdamW: one fraction for its passes
// (0.899 fitted with the eager build, 0.895 with the compiled one).
constexpr double kForeachOptimizerBandwidth = 0.90;

using Passes = std::vector<FrameworkPass>;

Passes eager_norm_forward(int64_t rows, int64_t cols) {
  const int64_t n = rows * cols;
  return {{" pow", n, kF32 + kF32},            // x.pow(2)
          {" mean", n, kF32},                  // .mean(-1): reads, writes one per row
          {" add eps", rows, kRowScalar},      // var + eps
          {" rsqrt", rows, kRowScalar, kVectorized, 1},
          {" mul rsqrt", n, kF32 + kF32, kGeneric},   // x * rsqrt(var), broadcast per row
          {" mul weight", n, kF32 + kF32, kGeneric},  // weight * x, broadcast per column
          {" cast bf16", n, kF32 + kB16}};     // autocast: the GEMM's input
}

// Autograd of the forward above: the input cast's gradient to fp32, the
// weight's gradient (g * x̂ summed over tokens), g * weight, the rsqrt path
// (g * x summed per row, then scaled back through mean and pow), the direct
// path (g * rsqrt) and their sum. The bf16->fp32 cast and the products with
// a per-row or per-column factor take the generic path.
Passes eager_norm_backward(int64_t rows, int64_t cols) {
  const int64_t n = rows * cols;
  return {{" bwd cast fp32", n, kB16 + kF32, kGeneric},
          {" bwd weight mul", n, 3 * kF32},
          {" bwd weight sum", n, kF32},
          {" bwd mul weight", n, 2 * kF32, kGeneric},
          {" bwd rsqrt mul", n, 3 * kF32},
          {" bwd rsqrt sum", n, kF32},
          {" bwd rsqrt", rows, kRowScalar},
          {" bwd pow", n, 2 * kF32, kGeneric},
          {" bwd mul rsqrt", n, 2 * kF32, kGeneric},
          {" bwd add", n, 3 * kF32}};
}

// rotate-half on one tensor: -x2 (half the elements), cat, x * cos,
// rotate_half(x) * sin, their sum; bf16 throughout. The half views, the cat
// and cos/sin broadcast over batch and heads take the generic path.
void eager_rope(Passes& out, const char* which, int64_t n) {
  const std::string w = which;
  out.push_back({w + " neg", n / 2, 2 * kB16, kGeneric});
  out.push_back({w + " cat", n, 2 * kB16, kGeneric});
  out.push_back({w + " mul cos", n, 2 * kB16, kGeneric});
  out.push_back({w + " mul sin", n, 2 * kB16, kGeneric});
  out.push_back({w + " add", n, 3 * kB16});
}

// Megatron-LM's vocabulary-parallel cross entropy as eager PyTorch runs it
// (strategy_step_bench.py's VocabParallelCrossEntropy; the kernels as
// torch.profiler names them on 4 H100s, calibration/measurements/h100-x4/
// strategy_ranks_2026-11-27) over `tokens` rows of this rank's `cols`
// vocabulary columns. The passes over the logits: the fp32 cast and the
// products and differences with a per-row value (broadcast) take the
// generic path; the row reductions (max, sum), the in-place exp and the
// gradient's cast back to bf16 are plain contiguous kernels over hundreds
// of MB to GB, measured at the achieved copy rate (streaming). The rest are
// per-token kernels over the int64 targets and fp32 row values (launches,
// a few bytes a token).
Passes vocab_parallel_ce_forward(int64_t tokens, int64_t cols) {
  const int64_t n = tokens * cols;
  constexpr double kI64 = 8, kBool = 1;
  return {{" logits fp32", n, kB16 + kF32, kGeneric},          // logits.float()
          {" max", n, kF32, kStreaming},                       // logits.max(-1) (then all-reduced)
          {" sub max", n, 2 * kF32, kGeneric},                 // logits - max: broadcast per row
          {" target below", tokens, kI64 + kBool},             // target < vocab_start
          {" target above", tokens, kI64 + kBool},             // target >= vocab_end
          {" target outside", tokens, 3 * kBool},              // their or
          {" target local", tokens, 2 * kI64},                 // target - vocab_start
          {" target fill", tokens, 2 * kI64 + kBool},          // .masked_fill(outside, 0)
          {" target gather", tokens, kI64 + 2 * kF32},         // z.gather(-1, local)
          {" target mask", tokens, 2 * kF32 + kBool},          // .masked_fill(outside, 0.0) (all-reduced)
          {" exp", n, 2 * kF32, kStreaming, 1},                // z.exp_()
          {" sum", n, kF32, kStreaming},                       // z.sum(-1) (all-reduced)
          {" log", tokens, 2 * kF32, kVectorized, 1},          // log(sum_exp)
          {" loss", tokens, 3 * kF32},                         // - target logit
          {" div sum", n, 2 * kF32, kGeneric},                 // z.div_(sum_exp): the probabilities, saved
          {" mean", tokens, kF32}};                            // loss.mean()
}

// Its backward: the target's probability less one (an index, a sub and an
// index_put over the tokens), the softmax scaled by the loss's gradient
// (in place, a 0-dim CUDA tensor broadcast: the generic path), and
// logits.float()'s backward, the cast to the head GEMM's bf16.
Passes vocab_parallel_ce_backward(int64_t tokens, int64_t cols) {
  const int64_t n = tokens * cols;
  constexpr double kI64 = 8, kBool = 1;
  return {{" bwd arange", tokens, kI64},
          {" bwd mask float", tokens, kBool + kF32},
          {" bwd one minus", tokens, 2 * kF32},
          {" bwd index", tokens, 2 * kI64 + 2 * kF32},
          {" bwd sub", tokens, 3 * kF32},
          {" bwd index put", tokens, 2 * kI64 + 2 * kF32},
          {" bwd scale", 1, 2 * kF32},                         // g / n
          {" bwd mul", n, 2 * kF32, kGeneric},                 // softmax.mul_(g / n)
          {" bwd cast bf16", n, kF32 + kB16, kStreaming}};
}

// The same passes marked as eager kernels (a compiled build costs them with
// pytorch-eager's traits).
Passes as_eager(Passes passes) {
  for (FrameworkPass& p : passes) p.eager_kernel = true;
  return passes;
}

}  // namespace

const char* framework_name(Framework f) {
  switch (f) {
    case Framework::megatron: return "megatron";
    case Framework::pytorch_eager: return "pytorch-eager";
    case Framework::torch_compile: return "torch-compile";
  }
  return "?";
}

FrameworkTraits framework_traits(Framework f) {
  switch (f) {
    case Framework::megatron:
      // Not measured (no Transformer Engine here): the host is taken never
      // to hold the GPU back, the model's behaviour before profiles existed.
      return {0.0, 1.0};
    case Framework::pytorch_eager:
      return {kEagerHostUsPerKernel, kEagerElementwiseBandwidth, kForeachOptimizerBandwidth,
              kEagerGenericOpsPerElement};
    case Framework::torch_compile:
      return {kCompileHostUsPerKernel, kCompileElementwiseBandwidth, kForeachOptimizerBandwidth,
              kCompileGenericOpsPerElement, kCompileReductionOpsPerElement, kCompileCyclesPerRow};
  }
  return {};
}

FrameworkProfile::FrameworkProfile(Framework f, const std::optional<FrameworkTraits>& traits)
    : f_(f), traits_(traits ? *traits : framework_traits(f)) {}

sim::Duration FrameworkProfile::host_per_kernel() const {
  return sim::Duration::from_seconds(traits_.host_us_per_kernel * 1e-6);
}

namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

RowReduceGrid eager_row_reduce_grid(int64_t rows, int64_t cols, int sm_count) {
  constexpr int64_t kThreads = 512, kWarp = 32, kVector = 4;
  constexpr int64_t kMinValues = 16, kMaxValues = 256, kThreadsPerSm = 2048;
  if (rows < 1 || cols < 1) return {1, kThreads};
  const auto pow2_below = [](int64_t n) {
    int64_t p = 1;
    while (p * 2 <= n) p *= 2;
    return p;
  };
  const int64_t along = cols > 128 ? cols / kVector : cols;  // vectorized along the row
  const int64_t d0 = along < kThreads ? pow2_below(along) : kThreads;
  const int64_t d1 = rows < kThreads ? pow2_below(rows) : kThreads;
  int64_t width = std::min(d0, kWarp);
  const int64_t height = std::min(d1, kThreads / width);
  width = std::min(d0, kThreads / height);
  const int64_t threads = width * height;
  int64_t per_thread = ceil_div(cols, width);
  if (per_thread < height * kMinValues && per_thread < kMaxValues) {
    return {ceil_div(rows, height), threads};  // each warp row an output
  }
  per_thread = ceil_div(cols, width * height);  // the CTA's warps split a row
  const int64_t target = static_cast<int64_t>(sm_count) * (kThreadsPerSm / threads);
  if (per_thread < kMaxValues || rows > target) return {rows, threads};
  const int64_t split = std::max(std::min(ceil_div(target, rows),
                                          ceil_div(per_thread, kMinValues)),
                                 ceil_div(per_thread, kMaxValues));
  return {rows * split, threads};
}

models::gpu::MemoryOpShape FrameworkProfile::shape(const FrameworkPass& p) const {
  // An eager kernel in a compiled build runs PyTorch's kernels: eager's traits.
  static const FrameworkTraits kEagerTraits = framework_traits(Framework::pytorch_eager);
  const FrameworkTraits& traits =
      p.eager_kernel && f_ == Framework::torch_compile ? kEagerTraits : traits_;
  models::gpu::MemoryOpShape s;
  s.kind = models::gpu::MemoryOpKind::elementwise;
  s.elements = p.elements > 0 ? p.elements : 1;
  s.bytes_per_element = p.bytes_per_element;
  s.dtype = models::gpu::Dtype::fp32;
  // A generic pass: the longer of its SM work and its bytes, which stream no
  // better than a vectorized pass's (scalar loads, one element per thread).
  // Held out on the H100 this fits better than streaming them at the full
  // achieved bandwidth (eager generic kernels -1.8 .. +1.0% against
  // -5.3 .. -1.7%).
  s.flops_per_element = p.access == PassAccess::generic     ? traits.generic_ops_per_element
                        : p.access == PassAccess::reduction ? traits.reduction_ops_per_element
                                                            : 1.0;
  s.bandwidth_efficiency = p.access == PassAccess::streaming ? 1.0
                           : p.access == PassAccess::reduction && f_ == Framework::torch_compile
                               ? kCompileReductionBandwidth
                               : traits.elementwise_bandwidth;
  s.transcendentals_per_element = p.transcendentals;
  s.multipass_row_loads = p.multipass_row_loads;
  s.max_ctas = p.ctas;
  // Eager PyTorch's TensorIterator kernels (vectorized and generic passes):
  // 128 threads of 4 elements a CTA, so a small tensor's work spreads over
  // one SM per CTA, each SM's few warps issuing latency-bound
  // (memory_kernel, kernel_cost_model.h). A pass with its own grid
  // (reduce_kernel over a few rows) keeps its CTAs' threads instead.
  if (p.ctas > 0) {
    s.threads_per_cta = static_cast<int>(p.threads);
  } else if (f_ == Framework::pytorch_eager &&
             (p.access == PassAccess::vectorized || p.access == PassAccess::generic)) {
    s.elements_per_cta = kEagerCtaThreads * kEagerThreadElements;
    s.threads_per_cta = kEagerCtaThreads;
  }
  if (p.access == PassAccess::reduction && p.rows > 0) {
    s.reduction_rows = p.rows;
    s.cycles_per_row = traits.cycles_per_row;
  }
  return s;
}

Passes FrameworkProfile::norm_forward(int64_t rows, int64_t cols) const {
  switch (f_) {
    case Framework::megatron: return {};
    case Framework::pytorch_eager: return eager_norm_forward(rows, cols);
    case Framework::torch_compile:
      // One reduction kernel: fp32 in, bf16 out (the rsqrt per row kept).
      // Streams as a plain pass: rows of the hidden size share a CTA, and
      // the measured kernels run 1.23-1.35x longer on an H100 than an H200
      // (mostly HBM-bound); what they miss is bytes (the residual branch
      // the GEMM just wrote is read from L2), not SM work.
      return {{"", rows * cols, kF32 + kB16, kVectorized, 1.0 / static_cast<double>(cols)}};
  }
  return {};
}

Passes FrameworkProfile::norm_backward(int64_t rows, int64_t cols) const {
  const int64_t n = rows * cols;
  switch (f_) {
    case Framework::megatron: return {};
    case Framework::pytorch_eager: return eager_norm_backward(rows, cols);
    case Framework::torch_compile:
      // The input gradient (reads the bf16 gradient, the fp32 input and the
      // residual gradient, writes fp32: the residual sum fused in) and the
      // weight gradient's reduction over tokens. Inductor picks by size:
      // at 4096 tokens a micro-batch the weight gradient is its own
      // kernel over the gradient and input again (triton_red_fused_mul_sum,
      // then a small sum; TP2xPP2, PP4, PP2xDP2), at 8192 and more (DP4,
      // TP2xDP2, TP4) its partial sums ride in the input gradient's
      // persistent kernel (triton_per_fused_..._pow_sum, 17 a step) and an
      // ATen reduce_kernel<128, 4> adds the partials (TP2xDP2 at 16384
      // tokens: 16.6 us each, about 33 MB read, one fp32 row of partials per
      // 8 tokens); calibration/fit/strategy_ranks_2026-11-27.md. It
      // switches at 8192: separate at 4096-7168 tokens, fused at 8192-16384
      // (calibration/measurements/h100-sxm/compiled_norm_fold_2026-11-27).
      if (rows >= kNormWeightFusedRows) {
        return {{" bwd (weight partials fused)", n, kB16 + kF32 + kF32 + kF32 + kF32 / kRowsPerPartial},
                {" bwd weight sum", n / static_cast<int64_t>(kRowsPerPartial), kF32}};
      }
      return {{" bwd", n, kB16 + kF32 + kF32 + kF32},
              {" bwd weight", n, kB16 + kF32},
              {" bwd weight sum", rows, kRowScalar}};
  }
  return {};
}

Passes FrameworkProfile::residual_forward(int64_t elements, bool into_norm) const {
  switch (f_) {
    case Framework::megatron: return {};
    case Framework::pytorch_eager: return {{"", elements, kF32 + kB16 + kF32, kGeneric}};  // mixed types
    case Framework::torch_compile:
      // Fused into the next norm: that kernel also writes the fp32 sum.
      if (into_norm) return {{" (in norm)", elements, kB16 + kF32}};
      return {{"", elements, kF32 + kB16 + kF32}};
  }
  return {};
}

Passes FrameworkProfile::residual_backward(int64_t elements) const {
  switch (f_) {
    case Framework::megatron:
    case Framework::torch_compile: return {};  // compile: inside the norm's backward
    case Framework::pytorch_eager:
      return {{" cast bf16", elements, kF32 + kB16}, {" add", elements, 3 * kF32}};
  }
  return {};
}

Passes FrameworkProfile::rope_forward(int64_t q, int64_t k) const {
  Passes out;
  switch (f_) {
    case Framework::megatron: break;
    case Framework::pytorch_eager:
      eager_rope(out, " q", q);
      eager_rope(out, " k", k);
      break;
    case Framework::torch_compile: out.push_back({"", q + k, 2 * kB16, kGeneric}); break;  // cats halves
  }
  return out;
}

Passes FrameworkProfile::rope_backward(int64_t q, int64_t k, int64_t v) const {
  Passes out;
  switch (f_) {
    case Framework::megatron: break;
    case Framework::pytorch_eager:
      eager_rope(out, " q bwd", q);
      eager_rope(out, " k bwd", k);
      out.push_back({" qkv grad copy", q + k + v, 2 * kB16, kGeneric});  // into strided views
      break;
    case Framework::torch_compile:
      out.push_back({" bwd + qkv grad copy", q + k + v, 2 * kB16, kGeneric});
      break;
  }
  return out;
}

Passes FrameworkProfile::swiglu_forward(int64_t n) const {
  switch (f_) {
    case Framework::megatron: return {};
    // The gate and up halves are views of one GEMM's output (chunk).
    case Framework::pytorch_eager:
      return {{" silu", n, 2 * kB16, kGeneric, kSigmoid}, {" mul", n, 3 * kB16, kGeneric}};
    case Framework::torch_compile: return {{"", n, 3 * kB16, kVectorized, kSigmoid}};
  }
  return {};
}

Passes FrameworkProfile::swiglu_backward(int64_t n) const {
  switch (f_) {
    case Framework::megatron: return {};
    case Framework::pytorch_eager:
      // g * up, g * silu(gate), SiLU's backward, the chunk's gradient cat.
      // The cat joins two contiguous gradients: PyTorch's vectorised cat
      // (CatArrayBatchedCopy_vectorized in the measured steps, 1.36x longer
      // on an H100 than an H200: bound by HBM), not the generic path.
      return {{" mul up", n, 3 * kB16, kGeneric},
              {" mul silu", n, 3 * kB16},
              {" silu bwd", n, 3 * kB16, kGeneric, kSigmoid},
              {" cat", 2 * n, 2 * kB16, kStreaming}};
    // Cats the two halves; sigmoid recomputed.
    case Framework::torch_compile: return {{"", n, 5 * kB16, kGeneric, kSigmoid}};
  }
  return {};
}

// The passes over whole weights are plain contiguous kernels over tens to
// hundreds of MB: measured at the achieved copy rate (4x H100, PP4 compiled,
// rank 0: fc1's weight cast, 541 MB, 184 us, 2.94 TB/s; the fp32 gradient
// accumulation, PyTorch's vectorised add), so they stream.
Passes FrameworkProfile::weight_cast(int64_t params, bool eager_op) const {
  if (fused()) return {};
  Passes out = {{" weight cast", params, kF32 + kB16, kStreaming}};
  return eager_op ? as_eager(std::move(out)) : out;
}

Passes FrameworkProfile::weight_grad_cast(int64_t params, bool accumulate, bool eager_op) const {
  if (fused()) return {};
  // Eager: bf16 -> fp32 copies take the generic (unrolled, casting) path;
  // inductor emits the cast inside the compiled backward, a plain pointwise
  // kernel. An eager linear of a compiled build (the head under TP) runs
  // PyTorch's: measured on 4 H100s (TP2xPP2 compiled, last stage, the head's
  // 65.5M-parameter gradient: 208 us, the unrolled direct_copy kernel).
  const PassAccess cast = f_ == Framework::pytorch_eager || eager_op ? kGeneric : kStreaming;
  Passes out = {{" grad cast", params, kB16 + kF32, cast}};
  if (accumulate) out.push_back({" grad accumulate", params, 3 * kF32, kStreaming});
  return eager_op ? as_eager(std::move(out)) : out;
}

Passes FrameworkProfile::cross_entropy_forward(int64_t tokens, int64_t vocab, int tp) const {
  const int64_t n = tokens * vocab;
  if (tp > 1 && !fused()) return as_eager(vocab_parallel_ce_forward(tokens, vocab));
  switch (f_) {
    case Framework::megatron: return {};
    case Framework::pytorch_eager: {
      // exp per element, one log per row; streams at HBM rate (1.33-1.55x
      // longer on an H100 than an H200, measured). Past 48 KiB a row
      // (vocabularies above ~12K in fp32) PyTorch runs its three-pass kernel
      // (cunn_SoftMaxForward in the measured steps), which loads each row
      // for the max, the sum and the write: the GPU's multipass_reads.
      FrameworkPass lsm{" log_softmax", n, 2 * kF32, kStreaming, 1.0 + 1.0 / static_cast<double>(vocab)};
      lsm.multipass_row_loads = long_softmax_rows(vocab);
      return {{" logits fp32", n, kB16 + kF32, kGeneric}, lsm, {" nll", tokens, kRowScalar}};
    }
    case Framework::torch_compile:
      // One pass over the bf16 logits for max and sum of exponentials
      // (online: each element's exponential and the running sum's rescale),
      // a row per CTA; then the target's log-probability (a log per row).
      return {{" logsumexp", n, kB16, kReduction, 2.0 + 1.0 / static_cast<double>(vocab), tokens},
              {" nll", tokens, kRowScalar}};
  }
  return {};
}

Passes FrameworkProfile::cross_entropy_backward(int64_t tokens, int64_t vocab, int tp) const {
  const int64_t n = tokens * vocab;
  if (tp > 1 && !fused()) return as_eager(vocab_parallel_ce_backward(tokens, vocab));
  switch (f_) {
    case Framework::megatron: return {};
    case Framework::pytorch_eager:
      return {{" nll bwd zero", n, kF32},
              {" nll bwd scatter", tokens, kRowScalar},
              // exp(log p). Over long rows (cunn_SoftMaxBackward) a first
              // pass loads the gradient for its sum and a second loads it
              // again with the output: 4 B x 4 per element, every load from
              // HBM as measured (H100 fit shape: 729 us, 4.06 x 4 B per
              // element at the achieved 2.92 TB/s); shorter rows keep the
              // row in shared memory (one load of each).
              {" log_softmax bwd", n, (long_softmax_rows(vocab) ? 4 : 3) * kF32, kStreaming, 1},
              {" cast bf16", n, kF32 + kB16}};
    // softmax = exp(logit - logsumexp) per element, written as the
    // gradient; a row per CTA.
    case Framework::torch_compile: return {{" bwd", n, 2 * kB16, kReduction, 1, tokens}};
  }
  return {};
}

// DDP's copies into and out of its buckets: device-to-device memcpys.
Passes FrameworkProfile::ddp_bucket_copy(int64_t params, double grad_bytes) const {
  if (fused()) return {};
  return {{" ddp bucket copy", params, 2 * grad_bytes, kStreaming}};
}

Passes FrameworkProfile::ddp_copy_back(int64_t params, double grad_bytes) const {
  if (fused()) return {};
  return {{" ddp copy back", params, 2 * grad_bytes, kStreaming}};
}

// Plain contiguous kernels over the whole activation (an fp32 -> bf16 copy,
// an fp32 add): measured at the achieved copy rate on 4x H100 (TP4 compiled,
// rank 0: 264 us for the cast's 805 MB, 556 us for the add's 1.61 GB).
Passes FrameworkProfile::tp_piece_forward(int64_t n, int tp) const {
  if (f_ != Framework::torch_compile || tp <= 1) return {};
  return {{" tp piece cast", n, kF32 + kB16, kStreaming}};
}

Passes FrameworkProfile::tp_piece_backward(int64_t n, int tp) const {
  if (f_ != Framework::torch_compile || tp <= 1) return {};
  return {{" tp piece grad add", n, 3 * kF32, kStreaming}};
}

// Measured on 4 H100s (TP2xPP2 compiled, last stage, 4096 x 4096 per
// micro-batch: 52.9 us, an unrolled direct_copy kernel; the forward cast
// beside it 34.2 us, a vectorized bf16 copy at the copy rate).
Passes FrameworkProfile::tp_head_grad_cast(int64_t n, int tp) const {
  if (f_ != Framework::torch_compile || tp <= 1) return {};
  return as_eager({{" head grad cast fp32", n, kB16 + kF32, kGeneric}});
}

Passes FrameworkProfile::embedding_forward(int64_t tokens, int64_t hidden) const {
  if (fused()) return {};
  return {{"", tokens * hidden, 2 * kF32}};
}

Passes FrameworkProfile::embedding_backward(int64_t tokens, int64_t hidden, int64_t vocab) const {
  if (fused()) return {};
  return {{" zero", vocab * hidden, kF32},
          {" sort ids", tokens, 4 * 8.0},  // radix sort of int64 ids: a few passes
          {" index add", tokens * hidden, 3 * kF32, kGeneric}};
}

}  // namespace gcsim::workloads::training
