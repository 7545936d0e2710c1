#include "workloads/inference/kv_capacity.h"

#include <algorithm>
#include <cmath>

#include "workloads/models/model_formulas.h"

namespace gcsim::workloads::inference {

using models::AttentionKind;
using models::ModelSpec;

int64_t kv_bytes_per_token(const ModelSpec& m, gpu::Dtype kv) {
  const auto b = static_cast<int64_t>(gpu::dtype_bytes(kv));
  if (m.attention == AttentionKind::mla) {
    return m.layers * (m.mla.kv_lora_rank + m.mla.qk_rope_head_dim) * b;
  }
  return 2 * static_cast<int64_t>(m.layers) * m.kv_heads * m.head_dim * b;
}

int64_t kv_heads_per_gpu(const ModelSpec& m, int tp) {
  if (m.attention == AttentionKind::mla) return 1;
  return std::max<int64_t>(1, m.kv_heads / tp);
}

int stage_layers(const ModelSpec& m, int pp) { return (m.layers + pp - 1) / pp; }

int64_t kv_bytes_per_token_per_gpu(const ModelSpec& m, gpu::Dtype kv, ParallelShape p) {
  const auto b = static_cast<int64_t>(gpu::dtype_bytes(kv));
  const int64_t layers = stage_layers(m, p.pp);
  if (m.attention == AttentionKind::mla) {
    return layers * (m.mla.kv_lora_rank + m.mla.qk_rope_head_dim) * b;
  }
  return 2 * layers * kv_heads_per_gpu(m, p.tp) * m.head_dim * b;
}

namespace {

// Parameters of one layer held by one GPU of a TP group.
double layer_params_per_gpu(const models::LayerParams& l, int tp) {
  const double replicated = l.norms + l.router;
  return (l.total() - replicated) / tp + replicated;
}

}  // namespace

sim::Bytes weight_bytes_per_gpu(const ModelSpec& m, gpu::Dtype weights, ParallelShape p) {
  const models::ParamCounts c = models::count_params(m);
  const double dense = layer_params_per_gpu(c.dense_layer, p.tp);
  const double moe = layer_params_per_gpu(c.moe_layer, p.tp);
  // Stage s holds layers [s*per, min((s+1)*per, layers)); the first
  // moe.dense_layers of them are dense.
  const int per = stage_layers(m, p.pp);
  double worst = 0;
  for (int s = 0; s < p.pp; ++s) {
    const int first = s * per;
    const int last = std::min(m.layers, first + per);
    double params = 0;
    for (int l = first; l < last; ++l) params += m.is_moe_layer(l) ? moe : dense;
    if (s == 0) params += (c.embedding + c.position) / p.tp;
    if (s == p.pp - 1) params += c.output_head / p.tp + c.final_norm;
    worst = std::max(worst, params);
  }
  return sim::Bytes(static_cast<int64_t>(std::ceil(worst * gpu::dtype_bytes(weights))));
}

sim::Bytes peak_activation_bytes(const ModelSpec& m, gpu::Dtype act, ParallelShape p,
                                 int64_t max_num_batched_tokens, int64_t max_num_seqs) {
  const double t = static_cast<double>(max_num_batched_tokens);
  const double h = static_cast<double>(m.hidden);
  const double tp = p.tp;
  double mlp = 0;
  if (m.dense_mlp_layers() > 0) {
    // SwiGLU keeps gate and up (2f) and their product (f); GELU f and f.
    const double f = static_cast<double>(m.ffn_hidden);
    const double width = m.mlp == models::MlpKind::swiglu ? 3 * f : 2 * f;
    mlp = t * (2 * h + width / tp);
  }
  if (m.is_moe()) {
    const double fe = static_cast<double>(m.moe.expert_ffn_hidden);
    const double copies = m.moe.top_k + m.moe.shared_experts;
    mlp = std::max(mlp, t * (2 * h + copies * 3 * fe / tp + m.moe.experts));
  }
  const double q = static_cast<double>(m.q_width());
  const double kv = static_cast<double>(m.kv_width());
  const double attention = t * (2 * h + (2 * q + 2 * kv) / tp);
  const double layer_peak = std::max(mlp, attention) * gpu::dtype_bytes(act);
  const double logits = static_cast<double>(max_num_seqs) * static_cast<double>(m.vocab) * 4.0;
  return sim::Bytes(static_cast<int64_t>(std::ceil(layer_peak + logits)));
}

MemoryPlan plan_memory(const ModelSpec& m, const MemoryInputs& in) {
  MemoryPlan plan;
  plan.capacity = in.capacity;
  plan.budget = sim::Bytes(static_cast<int64_t>(
      std::floor(in.capacity.as_double() * in.gpu_memory_utilization)));
  plan.weights = weight_bytes_per_gpu(m, in.weights, in.parallel);
  plan.activations = peak_activation_bytes(m, in.weights, in.parallel, in.max_num_batched_tokens,
                                           in.max_num_seqs);
  plan.non_torch = in.non_torch;
  plan.kv_cache = plan.budget - plan.weights - plan.activations - plan.non_torch;
  plan.bytes_per_token = kv_bytes_per_token_per_gpu(m, in.kv, in.parallel);
  plan.block_bytes = in.block_size * plan.bytes_per_token;
  plan.num_blocks =
      plan.kv_cache.count() > 0 ? plan.kv_cache.count() / plan.block_bytes : 0;
  return plan;
}

}  // namespace gcsim::workloads::inference
