#include "workloads/training/memory_model.h"

#include <algorithm>
#include <numeric>

#include "workloads/models/model_formulas.h"
#include "workloads/training/grad_buckets.h"

namespace gcsim::workloads::training {

using models::AttentionKind;
using models::MlpKind;

ModelStateBytes zero_model_states(double params, int data_ranks, int stage,
                                  const OptimizerConfig& o) {
  const double nd = std::max(1, data_ranks);
  ModelStateBytes m;
  m.weights = params * o.weight_bytes / (stage >= 3 ? nd : 1.0);
  m.gradients = params * o.grad_bytes / (stage >= 2 ? nd : 1.0);
  m.optimizer = params * o.state_bytes / (stage >= 1 ? nd : 1.0);
  return m;
}

double korthikanti_layer_bytes(double s, double b, double h, double a, double t, bool sp,
                               Recompute recompute) {
  const double sbh = s * b * h;
  if (recompute == Recompute::full) return 2.0 * sbh / (sp ? t : 1.0);
  const double scores = recompute == Recompute::selective ? 0.0 : 5.0 * a * s / h;
  if (sp) return sbh / t * (34.0 + scores);
  return sbh * (10.0 + 24.0 / t + scores / t);
}

namespace {

constexpr double kAct = 2.0;   // bytes of a 16-bit activation
constexpr double kMask = 1.0;  // bytes of a dropout mask element (PyTorch bool)

struct Shard {
  double tokens;    // b x s / cp on this GPU (before SP)
  double seq_q;     // local query length
  double seq_kv;    // keys each query attends to in total
  double t;         // tensor-parallel size
  bool sp;
  double rep(double x) const { return sp ? x / t : x; }  // replicated unless SP
  double shard(double x) const { return x / t; }
};

Shard shard_of(const TrainingConfig& c) {
  const auto& p = c.parallel;
  Shard s;
  s.seq_q = static_cast<double>(c.model.seq_len) / p.cp;
  s.seq_kv = static_cast<double>(c.model.seq_len);
  s.tokens = static_cast<double>(c.batch.micro) * s.seq_q;
  s.t = p.tp;
  s.sp = p.sequence_parallel;
  return s;
}

}  // namespace

namespace {

// What plain PyTorch's autograd keeps per token of a dense layer under
// autocast over fp32 parameters (Hugging Face Llama's code, no SP, fused
// attention), counted from the saved tensors: per norm the fp32 input, the
// fp32 normalized value and the bf16 cast the GEMM saves (eager) or the fp32
// input and the bf16 output (torch.compile recomputes the rest); the QKV
// output (V is a view of it), the rotated Q and K, the attention output and
// (eager) its contiguous copy, the log-sum-exp; the gate+up output, SiLU's
// output (eager) and the product. Checked against torch.cuda.
// max_memory_allocated on 4 H100s (calibration/measurements/h100-x4/
// strategy_step_2026-11-26).
double framework_layer_bytes(const TrainingConfig& c, const Shard& x) {
  const models::ModelSpec& m = c.model;
  const bool eager = c.framework == Framework::pytorch_eager;
  const double h = static_cast<double>(m.hidden), f = static_cast<double>(m.ffn_hidden);
  const double q = static_cast<double>(m.q_width()), kv = static_cast<double>(m.kv_width());
  const double fc1 = m.mlp == MlpKind::swiglu ? 2.0 : 1.0;
  const double norm = eager ? 4.0 + 4.0 + kAct : 4.0 + kAct;
  double per_token = x.rep(2.0 * norm * h);
  per_token += x.shard(kAct * (q + 2.0 * kv) + kAct * (q + kv) + kAct * q * (eager ? 2.0 : 1.0) +
                       4.0 * static_cast<double>(m.heads));
  per_token += x.shard(kAct * f * (fc1 + (eager ? 2.0 : 1.0)));
  return per_token * x.tokens;
}

bool plain_pytorch(const TrainingConfig& c) { return c.framework != Framework::megatron; }

}  // namespace

double layer_activation_bytes(const TrainingConfig& c, int layer, double expert_load) {
  const models::ModelSpec& m = c.model;
  const Shard x = shard_of(c);
  if (plain_pytorch(c) && c.recompute == Recompute::none && !m.is_moe_layer(layer) &&
      m.attention != AttentionKind::mla && c.attention_impl != AttentionImpl::unfused) {
    return framework_layer_bytes(c, x);
  }
  const double T = x.tokens, h = static_cast<double>(m.hidden);
  const bool drop = m.dropout > 0.0;
  if (c.recompute == Recompute::full) return x.rep(kAct * T * h);
  // An activation kept for a Linear layer's backward: FP8 training keeps the
  // quantized copy the GEMM read (TransformerEngine; DeepSeek-V3 §3.3), 1 B.
  const double lin = c.precision == Precision::fp8 ? 1.0 : kAct;
  // DeepSeek-V3's recompute (§3.2.3): a norm keeps its input only (its
  // output, a projection's input, is recomputed), and the up-projections'
  // outputs (Q, K, V) are recomputed from the latents they read.
  const bool light = c.recompute == Recompute::norms_up_proj;
  const double norm_out = light ? 0.0 : lin;

  double bytes = 0;
  // Attention block: the norm's input and output (the projections' input).
  bytes += x.rep((kAct + norm_out) * T * h);
  const double heads = m.heads;
  double v_width = static_cast<double>(m.kv_width());
  double k_width = static_cast<double>(m.kv_width());
  double out_width = static_cast<double>(m.q_width());
  if (m.attention == AttentionKind::mla) {
    const auto& a = m.mla;
    // Compressed query and key/value with their norms' inputs and outputs
    // (the down-projections are replicated over TP).
    bytes += x.rep((kAct + norm_out) * T * static_cast<double>(a.q_lora_rank));
    bytes += x.rep(kAct * T * static_cast<double>(a.kv_lora_rank + a.qk_rope_head_dim));
    bytes += x.rep(norm_out * T * static_cast<double>(a.kv_lora_rank));
    k_width = static_cast<double>(m.q_width());
    out_width = heads * static_cast<double>(a.v_head_dim);
  }
  // Q and K for the scores, V for the weighted sum, each split over TP
  // (recomputed from the latents, or the norm's output, under `light`).
  if (!light) bytes += x.shard(kAct * T * (static_cast<double>(m.q_width()) + k_width + v_width));
  const double scores = heads * x.seq_q * x.seq_kv * c.batch.micro;  // score elements
  if (c.attention_impl == AttentionImpl::unfused) {
    if (c.recompute != Recompute::selective) {
      bytes += x.shard(kAct * scores);                  // softmax output
      if (drop) bytes += x.shard((kMask + kAct) * scores);  // dropout mask and output
    }
  } else {
    bytes += x.shard(4.0 * heads * T);  // fp32 log-sum-exp per query row
  }
  bytes += x.shard(lin * T * out_width);  // output projection input
  if (drop) bytes += x.rep(kMask * T * h);

  // MLP block: norm input and output.
  bytes += x.rep((kAct + norm_out) * T * h);
  const double fc1_outputs = m.mlp == MlpKind::swiglu ? 2.0 : 1.0;  // gate and up
  if (m.is_moe_layer(layer)) {
    const auto& e = m.moe;
    const double routed = T * e.top_k * expert_load;  // token copies this GPU's experts get
    const double f = static_cast<double>(e.expert_ffn_hidden);
    // An expert's hidden: the gate and up outputs and the SwiGLU output (the
    // FC2 input); DeepSeek-V3 (§3.3) keeps the first two in FP8 and
    // recomputes the third.
    const double hidden = c.recomputes_fp8_swiglu() ? 1.0 * fc1_outputs : kAct * fc1_outputs + lin;
    // The combine's backward needs each routed copy's expert output (for
    // its gate weight's gradient) only where the weights scale the outputs
    // at the source, as plain PyTorch's `sum(probs * y)` does. Megatron-Core
    // multiplies them into the expert's activation (activation_func_with_probs;
    // DeepEP's dispatch carries them to the expert), so that gradient is the
    // SwiGLU output, kept for FC2, against FC2's input gradient, and the
    // combine keeps nothing.
    const double outputs = plain_pytorch(c) ? kAct : 0.0;
    bytes += x.rep(4.0 * T * e.experts);                      // fp32 router probabilities
    bytes += x.rep((lin + outputs) * routed * h);             // dispatched inputs, outputs
    bytes += x.shard(routed * f * hidden);                    // expert hidden
    bytes += x.shard(T * e.shared_experts * f * hidden);
  } else {
    const double f = static_cast<double>(m.ffn_hidden);
    bytes += x.shard(T * f * (kAct * fc1_outputs + lin));  // FC1 output, FC2 input
  }
  if (drop) bytes += x.rep(kMask * T * h);
  return bytes;
}

std::vector<StageLayers> model_stage_layers(const TrainingConfig& c, const PipelinePlan& plan) {
  std::vector<int> counts;
  // Interleaved: model stage k is chunk k / pp of rank k % pp; an uneven
  // split takes the missing layers from the first and last chunks, which
  // hold the embedding and the head.
  counts = split_layers(c.model.layers, plan.model_stages);
  std::vector<StageLayers> out;
  int first = 0;
  for (int n : counts) {
    out.push_back({first, n});
    first += n;
  }
  return out;
}

RankParams rank_params(const TrainingConfig& c, const PipelinePlan& plan, int r) {
  const models::ModelSpec& m = c.model;
  const auto counts = models::count_params(m);
  const double t = c.parallel.tp, ep = c.parallel.ep;
  const auto stages = model_stage_layers(c, plan);
  RankParams p;
  for (int k : plan.stages_of(r)) {
    const StageLayers& s = stages[static_cast<size_t>(k)];
    for (int l = s.first; l < s.first + s.count; ++l) {
      const models::LayerParams& lp = m.is_moe_layer(l) ? counts.moe_layer : counts.dense_layer;
      p.dense += lp.attention / t + lp.norms + lp.dense_mlp / t + lp.router +
                 lp.shared_experts / t;
      p.expert += lp.routed_experts / ep / t;
    }
    if (k == 0) p.dense += counts.embedding / t + counts.position;
    if (k == plan.model_stages - 1) {
      // A tied head still needs its own copy on another stage (Megatron
      // keeps it and all-reduces the two gradients).
      const bool copy = m.tied_embeddings && plan.model_stages > 1;
      p.dense += (m.tied_embeddings ? (copy ? counts.embedding : 0.0) : counts.output_head) / t +
                 counts.final_norm;
    }
  }
  return p;
}

std::vector<double> stage_activation_bytes(const TrainingConfig& c, const PipelinePlan& plan,
                                           double expert_load) {
  const auto stages = model_stage_layers(c, plan);
  const Shard x = shard_of(c);
  const double T = x.tokens, h = static_cast<double>(c.model.hidden);
  std::vector<double> bytes;
  for (size_t k = 0; k < stages.size(); ++k) {
    double b = 0;
    for (int l = stages[k].first; l < stages[k].first + stages[k].count; ++l) {
      b += layer_activation_bytes(c, l, expert_load);
    }
    if (k == 0 && c.model.dropout > 0.0) b += x.rep(kMask * T * h);  // embedding dropout mask
    if (k + 1 == stages.size()) {
      // Final norm input, head input, and the fp32 logits kept for the
      // cross-entropy backward (vocabulary split over TP).
      // Plain PyTorch keeps the fp32 input and normalized value as well.
      const double norm = plain_pytorch(c) ? (c.framework == Framework::pytorch_eager ? 8.0 : 4.0) : 0.0;
      b += x.rep((kAct + norm) * T * h) + kAct * T * h +
           4.0 * T * static_cast<double>(c.model.vocab) / x.t;
    }
    bytes.push_back(b);
  }
  return bytes;
}

double loss_workspace_bytes(const TrainingConfig& c) {
  if (!plain_pytorch(c)) return 0.0;
  const Shard x = shard_of(c);
  const double logits = x.tokens * static_cast<double>(c.model.vocab) / x.t;
  if (c.parallel.tp > 1) return 4.0 * logits;                      // z beside the fp32 logits
  if (c.framework == Framework::pytorch_eager) return 8.0 * logits;  // log_softmax's backward
  return 0.0;
}

bool loss_workspace_in_forward(const TrainingConfig& c) { return c.parallel.tp > 1; }

namespace {

// memory_for_rank with the stages' activation bytes already counted.
MemoryBreakdown rank_memory(const TrainingConfig& c, const PipelinePlan& plan, int r,
                            const std::vector<double>& per_stage) {
  MemoryBreakdown mem;
  const auto& p = c.parallel;
  mem.params = rank_params(c, plan, r);
  const int stage = c.optimizer.zero_stage;
  const ModelStateBytes dense = zero_model_states(mem.params.dense, p.dp, stage, c.optimizer);
  const ModelStateBytes expert =
      zero_model_states(mem.params.expert, p.dp / p.ep, stage, c.optimizer);
  mem.weights = dense.weights + expert.weights;
  mem.gradients = dense.gradients + expert.gradients;
  mem.optimizer_states = dense.optimizer + expert.optimizer;

  mem.activations = peak_activations(plan, r, per_stage);
  double mine = 0;
  const auto stages = plan.stages_of(r);
  for (int k : stages) mine += per_stage[static_cast<size_t>(k)];
  mem.activations_per_micro_batch = mine / static_cast<double>(stages.size());
  mem.in_flight = mem.activations_per_micro_batch > 0
                      ? mem.activations / mem.activations_per_micro_batch
                      : 0.0;
  // The loss's working tensors, once, beside the peak's activations: the
  // last stage's peak is its micro-batch's loss (1F1B holds one micro-batch
  // there), and no schedule runs two losses at once on one GPU.
  const auto mine_stages = plan.stages_of(r);
  if (std::find(mine_stages.begin(), mine_stages.end(), plan.model_stages - 1) != mine_stages.end()) {
    mem.activations += loss_workspace_bytes(c);
  }

  const Shard x = shard_of(c);
  if (p.dp > 1 && stage >= 3) {
    // The layer being computed and the one prefetched, gathered whole.
    const auto counts = models::count_params(c.model);
    const double layer = std::max(counts.dense_layer.total(), counts.moe_layer.total()) / p.tp;
    mem.communication_buffers += 2.0 * layer * c.optimizer.weight_bytes;
  }
  if (p.dp > 1 && stage >= 2) mem.communication_buffers += 2.0 * grad_bucket_bytes(c);
  if (p.pp > 1) {
    // Activation and gradient receive buffers, double-buffered.
    mem.communication_buffers += 4.0 * kAct * x.tokens * static_cast<double>(c.model.hidden) / x.t;
  }
  if (plain_pytorch(c) && stage == 0) {
    // torch.amp over fp32 parameters: the fp32 weights are the optimizer's
    // master copy; autocast casts each matrix to bf16 once per forward and
    // the backward keeps that copy, one per micro-batch in flight. With
    // zero_grad(set_to_none) and no pipeline the .grad tensors do not exist
    // at the peak (the backward's start); a pipeline's first backward
    // creates them while later micro-batches are in flight. DDP's buckets
    // hold a second copy of the gradients.
    const auto counts = models::count_params(c.model);
    const bool first = plan.stages_of(r).front() == 0;
    const double matrices =
        mem.params.dense + mem.params.expert - (first ? counts.embedding / p.tp : 0.0);
    mem.weights = c.optimizer.weight_bytes * std::max(0.0, matrices) * std::max(1.0, mem.in_flight);
    if (p.pp == 1) mem.gradients = 0;
    if (p.dp > 1) {
      mem.communication_buffers += c.optimizer.grad_bytes * (mem.params.dense + mem.params.expert);
    }
  }
  mem.reserved = static_cast<double>(c.memory_reserved);
  return mem;
}

}  // namespace

MemoryBreakdown memory_for_rank(const TrainingConfig& c, const PipelinePlan& plan, int r,
                                double expert_load) {
  return rank_memory(c, plan, r, stage_activation_bytes(c, plan, expert_load));
}

RankMemory memory_per_rank(const TrainingConfig& c, const PipelinePlan& plan, double expert_load) {
  RankMemory m;
  const std::vector<double> per_stage = stage_activation_bytes(c, plan, expert_load);
  for (int r = 0; r < c.parallel.pp; ++r) {
    m.per_rank.push_back(rank_memory(c, plan, r, per_stage));
    if (m.per_rank.back().total() > m.fullest_bytes()) m.fullest = r;
  }
  return m;
}

}  // namespace gcsim::workloads::training
