// Framework profiles (workloads/training/framework_profile.h): the bytes of
// each framework's memory passes, hand-counted from the tensors' types (fp32
// residual stream and parameters, bf16 GEMM inputs under autocast), the
// foreach optimizer's passes, the host-issue times, and what a profile does
// to a generated step (kernel counts per layer, Megatron unchanged).
#include <algorithm>
#include <fstream>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "catch.h"
#include "models/gpu/kernel_cost_model.h"
#include "preset_fixtures.h"
#include "workloads/training/framework_profile.h"
#include "workloads/training/host_issue.h"
#include "workloads/training/kernel_classes.h"
#include "workloads/training/layer_kernels.h"
#include "workloads/training/optimizer_step.h"
#include "workloads/training/training_generator.h"

using namespace gcsim;
using namespace gcsim::workloads::training;

namespace {

double bytes(const std::vector<FrameworkPass>& passes) {
  double b = 0;
  for (const auto& p : passes) b += p.bytes_per_element * static_cast<double>(p.elements);
  return b;
}

// The Llama-style fit shape of calibration/microbench/framework_step.py:
// hidden 2048, 16 heads, FFN 5632, 4 layers, 2 x 2048 tokens, vocabulary 32000.
TrainingConfig fit_shape(Framework f) {
  TrainingConfig c;
  auto& m = c.model;
  m.name = "llama_h2048_L4_s2048_b2";
  m.layers = 4;
  m.hidden = 2048;
  m.heads = 16;
  m.kv_heads = 16;
  m.head_dim = 128;
  m.ffn_hidden = 5632;
  m.vocab = 32000;
  m.seq_len = 2048;
  m.attention = workloads::models::AttentionKind::mha;
  m.mlp = workloads::models::MlpKind::swiglu;
  m.norm = workloads::models::NormKind::rms_norm;
  m.position = workloads::models::PositionKind::rotary;
  m.dropout = 0.0;
  c.batch = {2, 2};
  c.framework = f;
  return c;
}

// Kernels of one program by class.
std::map<KernelClass, int> kernels_by_class(const TrainingWorkload& w) {
  std::map<KernelClass, int> n;
  const auto& g = *w.graph;
  const auto& ops = g.program(0).ops;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kind != workloads::OpKind::compute) continue;
    ++n[kernel_class(g, ops[i], w.categories[g.program_id(0)][i])];
  }
  return n;
}

}  // namespace

TEST_CASE("framework profile: Megatron's lists are empty (its fused kernels stay)",
          "[training][framework]") {
  const FrameworkProfile p(Framework::megatron);
  CHECK(p.fused());
  CHECK(p.norm_forward(4096, 2048).empty());
  CHECK(p.rope_backward(1, 1, 1).empty());
  CHECK(p.weight_cast(100).empty());
  CHECK(p.cross_entropy_forward(4096, 32000).empty());
  CHECK(p.host_per_kernel() == sim::Duration::zero());
}

TEST_CASE("framework profile: eager bytes per element, hand-counted", "[training][framework]") {
  const FrameworkProfile p(Framework::pytorch_eager);
  const double rows = 4096, cols = 2048, n = rows * cols;
  // RMSNorm forward over fp32 x: pow (r4 w4), mean (r4), mul rsqrt (r4 w4),
  // mul weight (r4 w4), cast to bf16 (r4 w2) = 34 B per element, plus
  // var + eps and rsqrt over one fp32 per row (8 B each).
  const auto norm = p.norm_forward(4096, 2048);
  CHECK(norm.size() == 7);
  CHECK(bytes(norm) == Approx(34 * n + 2 * 8 * rows));
  // Residual add: fp32 stream + bf16 branch -> fp32 = 10 B per element.
  CHECK(bytes(p.residual_forward(4096 * 2048, false)) == Approx(10 * n));
  // Rotary on q: -x2 over half (r2 w2), cat, x*cos, rot*sin (r2 w2 each),
  // add (r2 r2 w2): 2 + 4 + 4 + 4 + 6 = 20 B per element, five kernels.
  const auto rope = p.rope_forward(4096 * 2048, 0);
  CHECK(rope.size() == 10);
  CHECK(bytes(rope) == Approx(20 * n));
  // SiLU (r2 w2) and the gate product (r2 r2 w2) over the FFN: 10 B.
  CHECK(bytes(p.swiglu_forward(1000)) == Approx(10 * 1000));
  // autocast: fp32 weight to bf16 each forward, bf16 gradient back to fp32.
  CHECK(bytes(p.weight_cast(1000)) == Approx(6 * 1000));
  CHECK(bytes(p.weight_grad_cast(1000)) == Approx(6 * 1000));
  // logits.float() (r2 w4) and log_softmax (r4 w4): 14 B per logit.
  CHECK(bytes(p.cross_entropy_forward(4096, 32000)) == Approx(14.0 * 4096 * 32000 + 8 * 4096));
}

TEST_CASE("framework profile: torch.compile fuses each chain into one pass",
          "[training][framework]") {
  const FrameworkProfile eager(Framework::pytorch_eager), compiled(Framework::torch_compile);
  const double n = 4096.0 * 2048;
  // RMSNorm: fp32 in, bf16 out = 6 B per element in one kernel (eager: 34).
  CHECK(compiled.norm_forward(4096, 2048).size() == 1);
  CHECK(bytes(compiled.norm_forward(4096, 2048)) == Approx(6 * n));
  // Residual into the next norm: that kernel also reads the bf16 branch and
  // writes the fp32 sum: 6 B more.
  CHECK(bytes(compiled.residual_forward(4096 * 2048, true)) == Approx(6 * n));
  CHECK(compiled.residual_backward(4096 * 2048).empty());
  // Rotary: read q and k once, write them once.
  CHECK(bytes(compiled.rope_forward(1000, 1000)) == Approx(4 * 2000));
  for (auto site : {&FrameworkProfile::swiglu_forward, &FrameworkProfile::swiglu_backward}) {
    CHECK((compiled.*site)(1000).size() == 1);
    CHECK(bytes((compiled.*site)(1000)) < bytes((eager.*site)(1000)));
  }
  CHECK(compiled.host_per_kernel() < eager.host_per_kernel());
}

TEST_CASE("framework profile: fitted values stay physical", "[training][framework]") {
  for (Framework f : {Framework::megatron, Framework::pytorch_eager, Framework::torch_compile}) {
    const FrameworkTraits t = framework_traits(f);
    INFO(framework_name(f));
    // A fraction of the achieved streaming bandwidth: above 0, at most 1.
    CHECK(t.elementwise_bandwidth > 0.2);
    CHECK(t.elementwise_bandwidth <= 1.0);
    CHECK(t.optimizer_bandwidth > 0.2);
    CHECK(t.optimizer_bandwidth <= 1.0);
    // Host time per launched kernel: a CUDA launch alone is ~2-4 µs; Python
    // dispatch with autograd recording, the kernel-free view ops between
    // launches and the optimizer's Python per step spread over the kernels
    // make tens of µs, never a millisecond: 0 (Megatron: not modelled) to 100.
    CHECK(t.host_us_per_kernel >= 0.0);
    CHECK(t.host_us_per_kernel <= 100.0);
    // SM work per element of a generic pass, in fp32 lane operations: at
    // least the one operation of a vectorized pass; PyTorch's non-vectorised
    // path computes each operand's offset per dimension (an integer divide
    // by a constant is a multiply-high, a shift and a multiply-subtract:
    // ~4 instructions x 3-4 dimensions x 2-3 operands), issues scalar loads
    // and stores (a load-store unit serves 32 lanes a clock against 128 fp32
    // lanes: 4 lane slots each) and converts types: tens to a few hundred
    // lane operations, never thousands.
    CHECK(t.generic_ops_per_element >= 1.0);
    CHECK(t.generic_ops_per_element <= 400.0);
    // Only torch-compile has reduction passes (inductor's fused reductions);
    // the others keep the defaults (1 operation, no row cycles).
    if (f != Framework::torch_compile) {
      CHECK(t.reduction_ops_per_element == 1.0);
      CHECK(t.cycles_per_row == 0.0);
      continue;
    }
    // Lane operations per element of a fused reduction: at least the bf16
    // to fp32 conversion, the running max and sum and the loop's index and
    // mask arithmetic (~4 instructions, 8 in these units); at most the
    // generic path's bound above (calibration/fit/reduction_fit.py).
    CHECK(t.reduction_ops_per_element >= 8.0);
    CHECK(t.reduction_ops_per_element <= 400.0);
    // SM cycles per CTA-long row: 0 when other rows hide a row's end; at
    // most a block-level combine (5 shuffle steps, 2 barriers: ~300 cycles)
    // and an HBM round trip for the next row's first loads (1-1.5 us, 2000-
    // 3000 cycles at 1.98 GHz) not hidden at all.
    CHECK(t.cycles_per_row >= 0.0);
    CHECK(t.cycles_per_row <= 4000.0);
  }
}

TEST_CASE("framework profile: which passes carry transcendentals and row reductions",
          "[training][framework][reduction]") {
  const FrameworkProfile compiled(Framework::torch_compile);
  const FrameworkProfile eager(Framework::pytorch_eager);
  const int64_t tokens = 4096, vocab = 32000;
  // inductor's online log-softmax: each element's exponential and the
  // running sum's rescale, one log per row; a row per CTA.
  const auto fwd = compiled.cross_entropy_forward(tokens, vocab);
  REQUIRE(fwd[0].access == PassAccess::reduction);
  CHECK(fwd[0].transcendentals == Approx(2.0 + 1.0 / 32000.0));
  CHECK(fwd[0].rows == tokens);
  // Its backward: softmax = exp(logit - logsumexp) per element.
  const auto bwd = compiled.cross_entropy_backward(tokens, vocab);
  REQUIRE(bwd[0].access == PassAccess::reduction);
  CHECK(bwd[0].transcendentals == 1.0);
  CHECK(bwd[0].rows == tokens);
  // RMSNorm: one rsqrt per row; rows of the hidden size share a CTA and
  // the kernels stream (measured mostly HBM-bound): vectorized, no rows.
  const auto norm = compiled.norm_forward(tokens, 2048);
  CHECK(norm[0].access == PassAccess::vectorized);
  CHECK(norm[0].transcendentals == Approx(1.0 / 2048.0));
  CHECK(norm[0].rows == 0);
  // SiLU: sigmoid is an exponential and a reciprocal, forward and backward.
  CHECK(compiled.swiglu_forward(1000)[0].transcendentals == 2.0);
  CHECK(compiled.swiglu_backward(1000)[0].transcendentals == 2.0);
  CHECK(eager.swiglu_forward(1000)[0].transcendentals == 2.0);
  // Rotary multiplies by precomputed cos/sin tables: none.
  for (const FrameworkPass& p : compiled.rope_forward(1000, 1000)) CHECK(p.transcendentals == 0.0);
  for (const FrameworkPass& p : eager.rope_forward(1000, 1000)) CHECK(p.transcendentals == 0.0);
  // Eager's loss and norms stream at HBM rate (cunn_SoftMax* 1.33-1.55x
  // longer on an H100 than an H200): no reduction kind, so no row cycles.
  for (const FrameworkPass& p : eager.cross_entropy_forward(tokens, vocab)) {
    CHECK(p.access != PassAccess::reduction);
  }
  // The shape the cost model sees: the framework's fitted lane operations
  // and row cycles, the pass's transcendentals.
  const auto s = compiled.shape(fwd[0]);
  CHECK(s.flops_per_element == compiled.traits().reduction_ops_per_element);
  CHECK(s.transcendentals_per_element == fwd[0].transcendentals);
  CHECK(s.reduction_rows == tokens);
  CHECK(s.cycles_per_row == compiled.traits().cycles_per_row);
  CHECK(compiled.shape(norm[0]).reduction_rows == 0);
  // Their bytes at their own fitted fraction of the achieved bandwidth
  // (the loss backward alone, reduction_fit.py): inside [0.6, 1] and above
  // the step-fitted vectorized fraction the norms keep.
  CHECK(s.bandwidth_efficiency >= 0.6);
  CHECK(s.bandwidth_efficiency <= 1.0);
  CHECK(s.bandwidth_efficiency > compiled.traits().elementwise_bandwidth);
  CHECK(compiled.shape(norm[0]).bandwidth_efficiency == compiled.traits().elementwise_bandwidth);
}

TEST_CASE("framework profile: generic passes are bound by the SMs, vectorized ones by HBM",
          "[training][framework]") {
  // The fit note's measurement: eager PyTorch's non-vectorised kernels take
  // the same time on an H100 and an H200 (1.02-1.08x: 132 SMs at the same
  // clock on both), its vectorized kernels 1.35-1.38x longer on the H100
  // (3.35 against 4.8 TB/s). The fitted profile on the calibrated presets
  // reproduces both.
  auto on = [](const std::string& gpu, const FrameworkPass& pass) {
    models::gpu::GpuSpec spec = test::gpu_preset(gpu);
    auto nowhere = test::nowhere_reader();
    cli::apply_calibration_profile(gpu, spec, nowhere);
    const FrameworkProfile eager(Framework::pytorch_eager);
    const auto k = models::gpu::memory_kernel(spec, eager.shape(pass));
    return models::gpu::isolated_time(spec, k, spec.sm_count).seconds();
  };
  const FrameworkProfile eager(Framework::pytorch_eager);
  const auto norm = eager.norm_forward(4096, 2048);  // the fit shape's rows, hidden 2048
  const auto rope = eager.rope_forward(4096 * 2048, 0);
  const FrameworkPass& pow = norm[0];
  const FrameworkPass& mul_rsqrt = norm[4];
  const FrameworkPass& mul_cos = rope[2];
  REQUIRE(pow.access == PassAccess::vectorized);
  REQUIRE(mul_rsqrt.access == PassAccess::generic);
  REQUIRE(mul_cos.access == PassAccess::generic);
  // bf16 (4 B per element): bound by the SMs on both GPUs, the same time.
  CHECK(on("h100-sxm", mul_cos) / on("h200-sxm", mul_cos) == Approx(1.0).margin(0.03));
  // fp32 (8 B): on the H100 its bytes at the vectorized passes' fraction
  // take a little longer than its SM work: 1.13x, inside the measured
  // generic kernels' 1.00-1.15x (elementwise_kernel<128,2> 1.13x).
  const double generic_fp32 = on("h100-sxm", mul_rsqrt) / on("h200-sxm", mul_rsqrt);
  CHECK(generic_fp32 >= 1.0);
  CHECK(generic_fp32 <= 1.15);
  // Achieved bandwidth 4.8 x 0.8542 against 3.35 x 0.8725 TB/s (the
  // calibration profiles): 1.40; the launch and wave overheads take a little off.
  const double vectorized = on("h100-sxm", pow) / on("h200-sxm", pow);
  CHECK(vectorized > 1.30);
  CHECK(vectorized < 1.41);
}

TEST_CASE("framework profile: the compiled loss is bound by the SMs, its plain passes by HBM",
          "[training][framework][reduction]") {
  // Measured (calibration/fit/framework_profiles_2026-11-26.md): inductor's
  // log-softmax forward takes the same time on an H100 and an H200
  // (0.95-1.02x at 4096 rows of 32000 and 128256), its plain pointwise
  // kernels 1.30-1.45x longer on the H100. The fitted reduction kind on the
  // calibrated presets reproduces both.
  auto on = [](const std::string& gpu, const FrameworkPass& pass) {
    models::gpu::GpuSpec spec = test::gpu_preset(gpu);
    auto nowhere = test::nowhere_reader();
    cli::apply_calibration_profile(gpu, spec, nowhere);
    const FrameworkProfile compiled(Framework::torch_compile);
    const auto k = models::gpu::memory_kernel(spec, compiled.shape(pass));
    return models::gpu::isolated_time(spec, k, spec.sm_count).seconds();
  };
  const FrameworkProfile compiled(Framework::torch_compile);
  for (int64_t vocab : {32000, 128256}) {
    const FrameworkPass loss = compiled.cross_entropy_forward(4096, vocab)[0];
    INFO(vocab);
    CHECK(on("h100-sxm", loss) / on("h200-sxm", loss) == Approx(1.0).margin(0.02));
  }
  const FrameworkPass swiglu = compiled.swiglu_forward(4096 * 5632)[0];
  const double plain = on("h100-sxm", swiglu) / on("h200-sxm", swiglu);
  CHECK(plain > 1.30);
  CHECK(plain < 1.41);
}

TEST_CASE("framework profile: PyTorch's foreach AdamW and clip, 92 B per parameter",
          "[training][framework][optimizer]") {
  OptimizerConfig o;  // clip 1.0
  const auto passes = optimizer_passes(o, Precision::bf16, Framework::pytorch_eager);
  double total = 0;
  for (const auto& p : passes) total += p.bytes();
  // norm 4, clip scale 8, weight decay 8, m lerp 12, v scale 8, v addcmul 12,
  // sqrt 8, bias correction 8, eps 8, addcdiv 16.
  CHECK(passes.size() == 10);
  CHECK(total == 92);
  o.grad_clip = 0;
  CHECK(optimizer_passes(o, Precision::bf16, Framework::torch_compile).size() == 8);
  // Megatron keeps its fused passes (46 B in bf16).
  double megatron = 0;
  for (const auto& p : optimizer_passes(OptimizerConfig{}, Precision::bf16)) megatron += p.bytes();
  CHECK(megatron == 46);
}

TEST_CASE("host issue: launches in program order, memory ops free", "[training][framework]") {
  workloads::RankProgram p;
  p.ops.resize(4);
  p.ops[0].kind = workloads::OpKind::compute;
  p.ops[1].kind = workloads::OpKind::memory;
  p.ops[2].kind = workloads::OpKind::collective;
  p.ops[3].kind = workloads::OpKind::compute;
  const auto t = host_issue_times(p, sim::us(int64_t{10}));
  REQUIRE(t.size() == 4);
  CHECK(t[0] == sim::us(int64_t{10}).ps());
  CHECK(t[1] == sim::us(int64_t{10}).ps());  // an allocation costs the host nothing here
  CHECK(t[2] == sim::us(int64_t{20}).ps());
  CHECK(t[3] == sim::us(int64_t{30}).ps());
  CHECK(host_issue_times(p, sim::Duration::zero()).empty());
}

TEST_CASE("framework profile: kernels of the generated Llama step per class",
          "[training][framework]") {
  GeneratorOptions o;
  const auto megatron = kernels_by_class(generate_training(fit_shape(Framework::megatron), o));
  const auto eager = kernels_by_class(generate_training(fit_shape(Framework::pytorch_eager), o));
  const auto compiled = kernels_by_class(generate_training(fit_shape(Framework::torch_compile), o));
  // GEMMs and attention are the same kernels under every profile: per layer
  // 4 forward + 8 backward GEMMs, 2 attention; plus the head's 3.
  for (const auto* m : {&megatron, &eager, &compiled}) {
    CHECK(m->at(KernelClass::gemm) == 4 * 12 + 3);
    CHECK(m->at(KernelClass::attention) == 4 * 2);
  }
  // Megatron: one fused kernel per site. Eager: per layer forward 4 weight
  // casts, 2 x 7 norm passes, 10 rotary, 2 SwiGLU, 2 residual adds; backward
  // 4 grad casts, 2 x 10 norm passes, 11 rotary + QKV copy, 4 SwiGLU, 2 x 2
  // residual. torch.compile: far fewer.
  const int eager_norm_per_layer = 2 * 7 + 2 * 10;
  CHECK(eager.at(KernelClass::norm) == 4 * eager_norm_per_layer + 7 + 10);  // + final norm
  CHECK(eager.at(KernelClass::elementwise) > 3 * megatron.at(KernelClass::elementwise));
  CHECK(compiled.at(KernelClass::elementwise) < eager.at(KernelClass::elementwise) / 2);
  // The same optimizer passes for eager and compiled builds.
  CHECK(eager.at(KernelClass::optimizer) == 10);
  CHECK(compiled.at(KernelClass::optimizer) == 10);
  // Eager's host issues each kernel; Megatron's never holds the GPU back.
  const auto issue = [&](Framework f) {
    const auto w = generate_training(fit_shape(f), o);
    return w.host_issue_ps[w.graph->program_id(0)];
  };
  CHECK(issue(Framework::megatron).empty());
  CHECK_FALSE(issue(Framework::pytorch_eager).empty());
}

TEST_CASE("framework profile: what a pipeline stage sends", "[training][framework]") {
  // 2 x 2048 tokens of hidden 2048 at TP 2. Megatron sends bf16 and each
  // TP rank 1/2 of it (the next stage all-gathers): 2 x 2048 x 2048 x 2 B / 2
  // = 8 MiB. Plain PyTorch sends the fp32 residual stream whole from every
  // TP rank: 2 x 2048 x 2048 x 4 B = 32 MiB.
  TrainingConfig megatron = fit_shape(Framework::megatron);
  TrainingConfig eager = fit_shape(Framework::pytorch_eager);
  TrainingConfig compiled = fit_shape(Framework::torch_compile);
  for (TrainingConfig* c : {&megatron, &eager, &compiled}) c->parallel.tp = 2;
  CHECK(LayerKernels(megatron).pipeline_message_bytes() == 8 * 1048576);
  CHECK(LayerKernels(eager).pipeline_message_bytes() == 32 * 1048576);
  CHECK(LayerKernels(compiled).pipeline_message_bytes() == 32 * 1048576);
}

TEST_CASE("framework profile: DDP, accumulation and compiled TP pieces, hand-counted",
          "[training][framework]") {
  const FrameworkProfile megatron(Framework::megatron);
  const FrameworkProfile eager(Framework::pytorch_eager);
  const FrameworkProfile compiled(Framework::torch_compile);
  // DDP: 1e6 fp32 gradients scaled into the bucket (4 B read + 4 written)
  // and copied back (the same): 8 MB each; Megatron's buckets are its
  // gradient buffer.
  CHECK(bytes(eager.ddp_bucket_copy(1000000, 4.0)) == 8e6);
  CHECK(bytes(compiled.ddp_copy_back(1000000, 4.0)) == 8e6);
  CHECK(megatron.ddp_bucket_copy(1000000, 4.0).empty());
  // A later micro-batch: the cast (2 + 4 B) and AccumulateGrad's add
  // (4 + 4 read, 4 written): 18 B per parameter against 6.
  CHECK(bytes(eager.weight_grad_cast(1000, true)) == 18000);
  CHECK(bytes(eager.weight_grad_cast(1000, false)) == 6000);
  // torch.compile under TP: per norm a cast (4 + 2 B) forward and an fp32
  // add (12 B) backward; nothing at TP 1 or for the other profiles.
  CHECK(bytes(compiled.tp_piece_forward(1000, 2)) == 6000);
  CHECK(bytes(compiled.tp_piece_backward(1000, 2)) == 12000);
  CHECK(compiled.tp_piece_forward(1000, 1).empty());
  CHECK(eager.tp_piece_backward(1000, 4).empty());
}

TEST_CASE("framework profile: per op against eager PyTorch's kernels on an H100",
          "[training][framework]") {
  // calibration/measurements/h100-sxm/elementwise_access_2026-11-26: the
  // elementwise ops of the eager step one by one (hidden 2048; 4096 and
  // 16384 rows here, where launch gaps are a few percent), held out.
  std::ifstream in(std::string(GCSIM_SOURCE_DIR) +
                   "/calibration/measurements/h100-sxm/elementwise_access_2026-11-26/"
                   "elementwise_access.json");
  REQUIRE(in.good());
  const nlohmann::json run = nlohmann::json::parse(in);
  models::gpu::GpuSpec h100 = test::gpu_preset("h100-sxm");
  auto nowhere = test::nowhere_reader();
  cli::apply_calibration_profile("h100-sxm", h100, nowhere);
  const FrameworkProfile eager(Framework::pytorch_eager);
  FrameworkTraits streaming = framework_traits(Framework::pytorch_eager);
  streaming.elementwise_bandwidth = 1.0;
  const FrameworkProfile pure(Framework::pytorch_eager, streaming);

  // The path PyTorch took (kernel name) is the one the eager profile gives
  // the matching pass.
  const auto n = int64_t{4096} * 2048;
  const std::map<std::string, PassAccess> profile_access = {
      {"pow fp32", eager.norm_forward(4096, 2048)[0].access},
      {"mul rsqrt (row broadcast) fp32", eager.norm_forward(4096, 2048)[4].access},
      {"mul weight (column broadcast) fp32", eager.norm_forward(4096, 2048)[5].access},
      {"cast fp32->bf16", eager.norm_forward(4096, 2048)[6].access},
      {"cast bf16->fp32", eager.weight_grad_cast(n)[0].access},
      {"add fp32 + bf16", eager.residual_forward(n, false)[0].access},
      {"add fp32", eager.residual_backward(n)[1].access},
      {"silu(chunk view) bf16", eager.swiglu_forward(n)[0].access},
      {"chunk view * chunk view bf16", eager.swiglu_forward(n)[1].access},
      {"neg(half view of q) bf16", eager.rope_forward(n, 0)[0].access},
      {"rotate-half cat bf16", eager.rope_forward(n, 0)[1].access},
      {"q * cos (broadcast over heads) bf16", eager.rope_forward(n, 0)[2].access}};
  int checked_paths = 0;
  std::vector<double> generic_errors;
  for (const auto& r : run.at("results")) {
    const std::string op = r.at("op");
    const bool generic = r.at("access") == "generic";
    INFO(op << " at " << r.at("rows").get<int>() << " rows");
    if (r.contains("kernels")) {
      const std::string kernel = r.at("kernels").at(0);
      CHECK((kernel.find("vectorized_elementwise_kernel") == std::string::npos) == generic);
      auto it = profile_access.find(op);
      if (it != profile_access.end()) {
        CHECK((it->second == PassAccess::generic) == generic);
        ++checked_paths;
      }
    }
    if (r.at("rows").get<int>() < 4096) continue;
    const FrameworkPass pass{op, r.at("elements").get<int64_t>(), r.at("bytes_per_element").get<double>(),
                             generic ? PassAccess::generic : PassAccess::vectorized};
    const FrameworkProfile& p = generic ? eager : pure;
    const double t = models::gpu::isolated_time(h100, models::gpu::memory_kernel(h100, p.shape(pass)),
                                                h100.sm_count).seconds();
    const double e = t / (r.at("time_us").get<double>() * 1e-6) - 1.0;
    if (generic) {
      // Checked below about their median: the cat does more work per element
      // than one count says, the bf16 broadcasts less.
      generic_errors.push_back(e);
    } else {
      // Plain streaming kernels reach the achieved bandwidth (the calibration
      // profile's 0.8725 of 3.35 TB/s): +1 .. +4% at 16384 rows, up to +12% at
      // 4096 (18 µs bf16 kernels, where gcsim's 2.4 µs launch latency, hidden
      // between back-to-back kernels, weighs). The eager profile's fitted
      // vectorized fraction (0.785) is the step's vectorized class as a whole
      // (its reductions, fills and the kernels the lists leave out), not
      // these kernels'.
      CHECK(std::abs(e) <= 0.13);
    }
  }
  CHECK(checked_paths == static_cast<int>(profile_access.size()));
  REQUIRE(generic_errors.size() == 18);
  std::vector<double> sorted = generic_errors;
  std::sort(sorted.begin(), sorted.end());
  const double median = 0.5 * (sorted[8] + sorted[9]);
  INFO("median " << median << ", lowest " << sorted.front() << ", highest " << sorted.back());
  // The count is fitted to the H200 step's generic kernels (6.75 ms), 186 a
  // step where the eager lists give 165 generic passes: it carries the 21
  // left out (about +13% on each pass), and isolated, back to back, these
  // kernels run faster than inside the step (the count matches the H100
  // step's generic kernels within 4%). Median +16% (it was +14% while the
  // SwiGLU gradient cat, charged as a generic pass at 3.3x its time, held
  // the count down: 161 -> 178 operations).
  CHECK(median > 0.05);
  CHECK(median < 0.30);
  // About that median, per op: the rotate-half cat 28% below (more work per
  // element), the bf16 broadcasts up to 21% above. The 30% band the per-op
  // errors had about zero before (-20 .. +26%), now about the median: one
  // count per element over kernels whose work per element differs.
  for (double e : generic_errors) CHECK(std::abs(e - median) <= 0.30);
}

