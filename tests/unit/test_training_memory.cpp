// Memory per GPU: ZeRO's model-state figures (Rajbhandari et al. 2020,
// section 5: 7.5B parameters on 64 GPUs), Korthikanti et al. 2022's
// activation formulas (Table 2) against the tensor-by-tensor count, and the
// whole breakdown for a hand-computed case.
#include <memory>

#include "catch.h"
#include "sim/scenario/model_spec_loader.h"
#include "workloads/models/model_formulas.h"
#include "workloads/training/memory_model.h"

using namespace gcsim;
using namespace gcsim::workloads::training;

namespace {

workloads::models::ModelSpec preset(const std::string& name) {
  auto source = std::make_shared<sim::config::ConfigSource>();
  sim::config::ConfigReader nowhere(YAML::Node(), "", source, nullptr);
  return cli::load_model_preset(name, nowhere, "model");
}

}  // namespace

TEST_CASE("ZeRO model states: 7.5B on 64 GPUs is 120 / 31.4 / 16.6 / 1.9 GB",
          "[training][memory]") {
  // Rajbhandari et al. 2020, Figure 1: Psi = 7.5B, Nd = 64, K = 12:
  // baseline 16 Psi = 120 GB; P_os 4 Psi + 12 Psi/Nd = 31.4 GB;
  // P_os+g 2 Psi + 14 Psi/Nd = 16.6 GB; P_os+g+p 16 Psi/Nd = 1.9 GB.
  const OptimizerConfig mixed{0, 2.0, 2.0, 12.0};
  CHECK(zero_model_states(7.5e9, 64, 0, mixed).total() == Approx(120e9));
  CHECK(zero_model_states(7.5e9, 64, 1, mixed).total() == Approx(31.40625e9));
  CHECK(zero_model_states(7.5e9, 64, 2, mixed).total() == Approx(16.640625e9));
  CHECK(zero_model_states(7.5e9, 64, 3, mixed).total() == Approx(1.875e9));
  // Rounded as the paper prints them.
  CHECK(std::round(zero_model_states(7.5e9, 64, 1, mixed).total() / 1e8) / 10 == 31.4);
  CHECK(std::round(zero_model_states(7.5e9, 64, 2, mixed).total() / 1e8) / 10 == 16.6);
  CHECK(std::round(zero_model_states(7.5e9, 64, 3, mixed).total() / 1e8) / 10 == 1.9);
}

TEST_CASE("activations per layer: the tensor count equals Korthikanti's formulas",
          "[training][memory]") {
  TrainingConfig c;
  c.model = preset("gpt3-175b");  // dropout 0.1, GELU 4h, MHA
  c.attention_impl = AttentionImpl::unfused;
  c.batch.micro = 1;
  const double s = 2048, b = 1, h = 12288, a = 96;
  for (int t : {1, 2, 8}) {
    for (bool sp : {false, true}) {
      for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
        INFO("t " << t << " sp " << sp << " recompute " << recompute_name(r));
        c.parallel.tp = t;
        c.parallel.sequence_parallel = sp;
        c.recompute = r;
        CHECK(layer_activation_bytes(c, 0) == Approx(korthikanti_layer_bytes(s, b, h, a, t, sp, r)));
      }
    }
  }
  // By hand, t = 8 with SP and selective recompute: 34 s b h / t =
  // 34 x 2048 x 12288 / 8 = 106,954,752 bytes per layer.
  c.parallel.tp = 8;
  c.parallel.sequence_parallel = true;
  c.recompute = Recompute::selective;
  CHECK(layer_activation_bytes(c, 0) == 106'954'752.0);
  // Without any of the three, 34sbh + 5as^2b = 2.39 GB per layer.
  CHECK(korthikanti_layer_bytes(s, b, h, a, 1, false, Recompute::none) ==
        Approx(34 * s * b * h + 5 * a * s * s * b));
}

TEST_CASE("flash attention keeps no score matrix", "[training][memory]") {
  TrainingConfig c;
  c.model = preset("llama3-8b");  // no dropout, SwiGLU 14336, GQA 32/8
  c.attention_impl = AttentionImpl::flash;
  c.batch.micro = 1;
  // s = 8192, h = 4096: norm in/out 2 x 2sh; Q 2s x 4096, K and V 2s x 1024
  // each; LSE 4 x 32 x s; out-proj input 2sh; MLP norm in/out 2 x 2sh;
  // SwiGLU gate+up 4 s f, down input 2 s f (f = 14336).
  const double s = 8192, h = 4096, f = 14336;
  const double expected = 4 * s * h + 2 * s * (4096 + 1024 + 1024) + 4 * 32 * s + 2 * s * h +
                          4 * s * h + 6 * s * f;
  CHECK(layer_activation_bytes(c, 0) == Approx(expected));
}

TEST_CASE("memory breakdown of a hand-computed 1F1B stage", "[training][memory]") {
  // Llama 3 8B, TP 2, PP 4, DP 2, ZeRO 1, 1F1B, 16 micro-batches of 1,
  // full recompute. Rank 0 (first stage) holds layers 0-7 and the embedding.
  TrainingConfig c;
  c.model = preset("llama3-8b");
  c.parallel.tp = 2;
  c.parallel.pp = 4;
  c.parallel.dp = 2;
  c.batch = {32, 1};
  c.recompute = Recompute::full;
  c.optimizer.zero_stage = 1;
  const auto plan = build_pipeline(Schedule::one_f_one_b, 4, 1, 16);
  const auto counts = workloads::models::count_params(c.model);
  const double layer = counts.dense_layer.attention / 2 + counts.dense_layer.norms +
                       counts.dense_layer.dense_mlp / 2;
  const double params = 8 * layer + counts.embedding / 2;
  const MemoryBreakdown mem = memory_for_rank(c, plan, 0);
  CHECK(mem.params.dense == Approx(params));
  CHECK(mem.weights == Approx(2 * params));
  CHECK(mem.gradients == Approx(2 * params));
  CHECK(mem.optimizer_states == Approx(12 * params / 2));
  // Full recompute keeps each layer's input, 2 s h bytes (no SP), for the 4
  // micro-batches 1F1B's first stage holds.
  CHECK(mem.in_flight == Approx(4.0));
  CHECK(mem.activations == Approx(4 * 8 * 2.0 * 8192 * 4096));
  // Receive buffers for activations and gradients, double-buffered: 4 x 2sh/t.
  CHECK(mem.communication_buffers == Approx(4 * 2.0 * 8192 * 4096 / 2));
}

TEST_CASE("DualPipe holds two stages' parameters", "[training][memory]") {
  TrainingConfig c;
  c.model = preset("llama3-8b");
  c.parallel.pp = 8;
  c.parallel.dp = 1;
  c.batch = {16, 1};
  const auto one = build_pipeline(Schedule::one_f_one_b, 8, 1, 16);
  const auto dual = build_pipeline(Schedule::dualpipe, 8, 1, 16);
  // Rank 3 (a middle rank, no embedding or head): stages 3 and 4.
  CHECK(rank_params(c, dual, 3).total() == Approx(2 * rank_params(c, one, 3).total()));
}

TEST_CASE("FP8 training keeps the Linear layers' inputs in one byte", "[training][memory]") {
  // TransformerEngine and DeepSeek-V3 (section 3.3) save the FP8 copy each
  // GEMM read for its weight gradient; the norms' inputs (the residual
  // stream), attention's Q, K, V and the activation function's input stay
  // 16-bit. GPT-3 175B layer at TP 8, no SP, flash attention, b = 1:
  // the four Linear inputs shrink from 2 to 1 byte each,
  //   attention norm output  T h       = 2048 x 12288
  //   output-proj input      T h / t
  //   MLP norm output        T h
  //   FC2 input              T 4h / t
  // = 2048 x 12288 x (1 + 1/8 + 1 + 4/8) = 66,060,288 bytes less.
  TrainingConfig c;
  c.model = preset("gpt3-175b");
  c.parallel.tp = 8;
  c.batch.micro = 1;
  c.precision = Precision::bf16;
  const double bf16 = layer_activation_bytes(c, 0);
  c.precision = Precision::fp8;
  const double fp8 = layer_activation_bytes(c, 0);
  CHECK(bf16 - fp8 == Approx(66'060'288.0));
  // Full recompute keeps only the layer input (the residual stream): no change.
  c.recompute = Recompute::full;
  const double fp8_full = layer_activation_bytes(c, 0);
  c.precision = Precision::bf16;
  CHECK(layer_activation_bytes(c, 0) == fp8_full);
}

TEST_CASE("DeepSeek-V3's recompute keeps no norm outputs, no Q/K/V and FP8 SwiGLU inputs",
          "[training][memory]") {
  // DeepSeek-V3 section 3.2.3: RMSNorm outputs and MLA's up-projections
  // recomputed in the backward; section 3.3: a MoE SwiGLU's inputs cached in
  // FP8 and its output recomputed. One sequence of 4096 tokens, no TP, FP8
  // (the Linear inputs already one byte), expert load 1. What is no longer
  // kept, in bytes per token:
  //   the two norms' outputs           2 x 7168 x 1 B
  //   the q and kv latents' norm outputs   1536 + 512  (1 B each)
  //   Q, K (128 heads x 192) and V (128 x 128), bf16   2 x (24576 + 24576 + 16384)
  //   MoE layer: gate/up at 1 B instead of 2 and no SwiGLU output (1 B):
  //     3 B x 2048 per routed copy (8 a token) and per shared expert (1)
  // dense layer: 4096 x (14336 + 2048 + 131072)           = 603,979,776
  // MoE layer:   + 4096 x 3 x 2048 x (8 + 1)               = 830,472,192
  TrainingConfig c;
  c.model = preset("deepseek-v3");
  c.batch.micro = 1;
  c.precision = Precision::fp8;
  const double dense = layer_activation_bytes(c, 0), moe = layer_activation_bytes(c, 5);
  c.recompute = Recompute::norms_up_proj;
  CHECK(dense - layer_activation_bytes(c, 0) == Approx(603'979'776.0));
  CHECK(moe - layer_activation_bytes(c, 5) == Approx(830'472'192.0));
  // In BF16 the SwiGLU keeps its 16-bit inputs and output (the FP8 cache is
  // an FP8 recipe); the norms' outputs are then 2 B.
  c.precision = Precision::bf16;
  const double bf16_light = layer_activation_bytes(c, 5);
  c.recompute = Recompute::none;
  CHECK(layer_activation_bytes(c, 5) - bf16_light == Approx(4096.0 * (2 * 7168 * 2 + 2 * 2048 + 131072)));
}

TEST_CASE("A MoE layer keeps its expert outputs only where the gate weights scale them at the source",
          "[training][memory]") {
  // Plain PyTorch combines as sum(probs * y): autograd keeps every routed
  // copy's expert output y for the probabilities' gradient. Megatron-Core
  // multiplies the probabilities into the expert's SwiGLU output
  // (experts.py, activation_func_with_probs) and DeepEP's dispatch carries
  // them there (Megatron's fused_a2a.py: the combine saves only its
  // handle), so nothing is kept for the combine. DeepSeek-V3, one sequence
  // of 4096 tokens, top-8 routing, expert load 1, hidden 7168, bf16 outputs:
  //   4096 x 8 x 7168 x 2 B = 469,762,048 bytes.
  TrainingConfig c;
  c.model = preset("deepseek-v3");
  c.batch.micro = 1;
  c.precision = Precision::fp8;
  const double megatron = layer_activation_bytes(c, 5);
  c.framework = Framework::pytorch_eager;
  CHECK(layer_activation_bytes(c, 5) - megatron == Approx(469'762'048.0));
  // A dense layer has no combine: the profile changes nothing here (this
  // preset uses MLA, which takes the analytical path in both profiles).
  const double eager_dense = layer_activation_bytes(c, 0);
  c.framework = Framework::megatron;
  CHECK(layer_activation_bytes(c, 0) == eager_dense);
}

TEST_CASE("the loss's working tensors at their peak, by hand", "[training][memory]") {
  // Llama 3's vocabulary, micro-batches of 2 sequences of 4096 tokens
  // (8192 logits rows). Plain PyTorch without TP: F.cross_entropy over the
  // fp32 logits keeps log_softmax's output (4 B a logit, already in the last
  // stage's activations); its backward adds the incoming gradient and the
  // gradient it makes, 8 B more: 8 x 8192 x 128256 = 8,405,385,216 bytes.
  // With TP 4 (8 sequences, 32768 rows), Megatron's vocabulary-parallel
  // loss holds the fp32 logits and their shifted copy in its forward, 4 B
  // more a logit of the rank's 32064 columns: 4 x 32768 x 32064 =
  // 4,202,692,608 bytes. Measured: calibration/measurements/h100-x4/
  // strategy_step_gqa_2026-11-27 (DP4 eager 47.3 GiB, gcsim 39.8 without).
  TrainingConfig c;
  c.model = preset("llama3-8b");
  REQUIRE(c.model.vocab == 128256);
  c.model.seq_len = 4096;
  c.batch = {8, 2};
  c.parallel.dp = 4;
  c.framework = Framework::pytorch_eager;
  CHECK(loss_workspace_bytes(c) == Approx(8'405'385'216.0));
  CHECK_FALSE(loss_workspace_in_forward(c));
  // Only the rank of the last stage holds it, once: the peak's activations
  // grow by exactly that much.
  const auto plan = build_pipeline(Schedule::one_f_one_b, 1, 1, 1);
  const double with = memory_for_rank(c, plan, 0).activations;
  c.framework = Framework::torch_compile;  // the compiled loss keeps no more
  CHECK(loss_workspace_bytes(c) == 0.0);
  c.framework = Framework::pytorch_eager;
  CHECK(with - stage_activation_bytes(c, plan).back() == Approx(8'405'385'216.0));
  c.parallel = {};
  c.parallel.tp = 4;
  c.batch = {8, 8};
  CHECK(loss_workspace_bytes(c) == Approx(4'202'692'608.0));
  CHECK(loss_workspace_in_forward(c));
  c.framework = Framework::torch_compile;  // the TP loss stays eager in both builds
  CHECK(loss_workspace_bytes(c) == Approx(4'202'692'608.0));
  c.framework = Framework::megatron;  // not measured: none
  CHECK(loss_workspace_bytes(c) == 0.0);
  // A pipeline's first stage holds no loss.
  c.framework = Framework::pytorch_eager;
  c.parallel = {};
  c.parallel.pp = 2;
  c.batch = {8, 1};
  const auto pp = build_pipeline(Schedule::one_f_one_b, 2, 1, 8);
  const auto stages = stage_activation_bytes(c, pp);
  const MemoryBreakdown first = memory_for_rank(c, pp, 0);
  CHECK(first.activations == Approx(first.in_flight * stages[0]));
  CHECK(memory_for_rank(c, pp, 1).activations ==
        Approx(stages[1] + 8.0 * 4096 * 128256));
}
