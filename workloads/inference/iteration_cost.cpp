#include "workloads/inference/iteration_cost.h"

#include <algorithm>
#include <cmath>

#include "models/gpu/attention_kernel_model.h"
#include "models/gpu/kernel_cost_model.h"

namespace gcsim::workloads::inference {

using gpu::AttentionShape;
using gpu::GemmShape;
using gpu::KernelDesc;
using gpu::MemoryOpKind;
using gpu::MemoryOpShape;
using models::AttentionKind;
using models::MlpKind;

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Activations stay 16-bit when weights are fp8 (vLLM's fp8 checkpoints).
gpu::Dtype activation_dtype(gpu::Dtype d) {
  return d == gpu::Dtype::fp8 || d == gpu::Dtype::int8 ? gpu::Dtype::bf16 : d;
}

}  // namespace

IterationCost::IterationCost(IterationCostConfig config, CommTimer& comm)
    : config_(std::move(config)), comm_(comm) {
  const auto& m = config_.model;
  const int pp = config_.parallel.pp;
  const int per = stage_layers(m, pp);
  for (int s = 0; s < pp; ++s) {
    int dense = 0, moe = 0;
    for (int l = s * per; l < std::min(m.layers, (s + 1) * per); ++l) {
      (m.is_moe_layer(l) ? moe : dense) += 1;
    }
    layers_of_stage_dense_.push_back(dense);
    layers_of_stage_moe_.push_back(moe);
  }
}

sim::Duration IterationCost::kernel_time(const KernelDesc& k) const {
  return gpu::isolated_time(config_.gpu, k, config_.gpu.sm_count);
}

int64_t IterationCost::padded_tokens(const StepShape& shape) const {
  const int64_t t = shape.tokens;
  if (!config_.cuda_graphs || t > config_.max_capture_size) return t;
  if (!config_.pad_mixed_steps && !shape.pure_decode()) return t;
  if (t <= 2) return t;
  if (t <= 4) return 4;
  return ceil_div(t, 8) * 8;
}

std::vector<KernelDesc> IterationCost::layer_kernels(int64_t t, bool moe) const {
  const auto& m = config_.model;
  const auto& g = config_.gpu;
  const int64_t tp = config_.parallel.tp;
  const int64_t h = m.hidden;
  const gpu::Dtype w = config_.dtype;
  const gpu::Dtype act = activation_dtype(w);
  const auto kvb = static_cast<int64_t>(gpu::dtype_bytes(config_.kv_dtype));
  const MemoryOpKind norm = m.norm == models::NormKind::rms_norm ? MemoryOpKind::rms_norm
                                                                 : MemoryOpKind::layer_norm;
  std::vector<KernelDesc> k;
  const auto gemm = [&](int64_t mm, int64_t n, int64_t kk, int64_t batch = 1) {
    k.push_back(gpu::gemm_kernel(g, GemmShape{mm, n, kk, batch, w}));
  };
  const auto rows = [&](MemoryOpKind kind, int64_t r, int64_t c) {
    MemoryOpShape s;
    s.kind = kind;
    s.rows = r;
    s.cols = c;
    s.dtype = act;
    k.push_back(gpu::memory_kernel(g, s));
  };
  const auto elementwise = [&](int64_t elements, int inputs, double flops) {
    MemoryOpShape s;
    s.kind = MemoryOpKind::elementwise;
    s.elements = elements;
    s.inputs = inputs;
    s.flops_per_element = flops;
    s.dtype = act;
    k.push_back(gpu::memory_kernel(g, s));
  };
  const auto copy_bytes = [&](int64_t bytes) {
    MemoryOpShape s;
    s.kind = MemoryOpKind::memcpy;
    s.elements = bytes;
    s.dtype = gpu::Dtype::int8;
    k.push_back(gpu::memory_kernel(g, s));
  };

  rows(norm, t, h);
  const int64_t heads = std::max<int64_t>(1, m.heads / tp);
  if (m.attention == AttentionKind::mla) {
    const auto& a = m.mla;
    const int64_t qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
    if (a.q_lora_rank > 0) {
      gemm(t, a.q_lora_rank, h);  // replicated down-projection
      rows(norm, t, a.q_lora_rank);
      gemm(t, heads * qk, a.q_lora_rank);
    } else {
      gemm(t, heads * qk, h);
    }
    gemm(t, a.kv_lora_rank + a.qk_rope_head_dim, h);  // compressed KV and rotary key
    rows(norm, t, a.kv_lora_rank);
    elementwise(t * (heads + 1) * a.qk_rope_head_dim, 1, 4);
    // Decode runs the absorbed form: queries into the latent space and the
    // attention output back out, per head.
    gemm(t, a.kv_lora_rank, a.qk_nope_head_dim, heads);
    gemm(t, a.v_head_dim, a.kv_lora_rank, heads);
    copy_bytes(t * (a.kv_lora_rank + a.qk_rope_head_dim) * kvb);
    gemm(t, h, heads * a.v_head_dim);
  } else {
    const int64_t kvh = kv_heads_per_gpu(m, config_.parallel.tp);
    gemm(t, heads * m.head_dim + 2 * kvh * m.head_dim, h);
    if (m.position == models::PositionKind::rotary) {
      elementwise(t * (heads + kvh) * m.head_dim, 1, 4);
    }
    copy_bytes(t * 2 * kvh * m.head_dim * kvb);
    gemm(t, h, heads * m.head_dim);
  }
  rows(norm, t, h);
  const int64_t up = m.mlp == MlpKind::swiglu ? 2 : 1;
  const int act_inputs = m.mlp == MlpKind::swiglu ? 2 : 1;
  if (!moe) {
    const int64_t f = m.ffn_hidden / tp;
    gemm(t, up * f, h);
    elementwise(t * f, act_inputs, 4);
    gemm(t, h, f);
    return k;
  }
  const auto& e = m.moe;
  const int64_t ep = config_.parallel.ep;
  gemm(t, e.experts, h);  // router
  elementwise(t * e.experts, 1, 4);
  // Each GPU holds experts/ep experts, each split over tp/ep ranks. With a
  // balanced router the expected number of its experts that receive a token
  // is local * (1 - (1 - 1/experts)^(t * top_k)); they share the t * top_k
  // / ep routed copies evenly.
  const int64_t local = std::max<int64_t>(1, e.experts / ep);
  const double copies = static_cast<double>(t) * e.top_k;
  const double p_hit = 1.0 - std::pow(1.0 - 1.0 / e.experts, copies);
  const int64_t active = std::clamp<int64_t>(
      static_cast<int64_t>(std::ceil(static_cast<double>(local) * p_hit - 1e-9)), 1, local);
  const int64_t per_expert = std::max<int64_t>(
      1, static_cast<int64_t>(std::ceil(copies / static_cast<double>(ep) / active)));
  const int64_t fe = std::max<int64_t>(1, e.expert_ffn_hidden * ep / tp);
  gemm(per_expert, up * fe, h, active);
  elementwise(active * per_expert * fe, act_inputs, 4);
  gemm(per_expert, h, fe, active);
  if (e.shared_experts > 0) {
    const int64_t fs = std::max<int64_t>(1, e.expert_ffn_hidden * e.shared_experts / tp);
    gemm(t, up * fs, h);
    elementwise(t * fs, act_inputs, 4);
    gemm(t, h, fs);
  }
  return k;
}

sim::Duration IterationCost::layer_token_kernels(int64_t tokens, bool moe) {
  auto& cache = moe ? token_moe_ : token_dense_;
  auto it = cache.find(tokens);
  if (it != cache.end()) return it->second;
  sim::Duration d = sim::Duration::zero();
  for (const auto& k : layer_kernels(tokens, moe)) d += kernel_time(k);
  cache.emplace(tokens, d);
  return d;
}

sim::Duration IterationCost::attention_time(const StepShape& shape) {
  const auto& m = config_.model;
  const auto& g = config_.gpu;
  const int64_t tp = config_.parallel.tp;
  const int64_t heads = std::max<int64_t>(1, m.heads / tp);
  const bool mla = m.attention == AttentionKind::mla;
  const int64_t kvh = kv_heads_per_gpu(m, config_.parallel.tp);
  const gpu::Dtype adt = config_.kv_dtype;
  sim::Duration d = sim::Duration::zero();
  for (const auto& [q, kv] : shape.prefills) {
    auto it = prefill_attention_.find({q, kv});
    if (it == prefill_attention_.end()) {
      AttentionShape a;
      a.batch = 1;
      a.heads = heads;
      a.q_len = q;
      a.kv_len = kv;
      a.causal = true;
      a.dtype = adt;
      a.family = gpu::resolve_attention_family(config_.attention_kernel, g, /*decode=*/false);
      sim::Duration t = sim::Duration::zero();
      if (mla) {
        // Prefill decompresses the latent KV of the whole context into
        // per-head keys and values, then runs ordinary attention.
        const auto& ml = m.mla;
        t += kernel_time(gpu::gemm_kernel(
            g, GemmShape{kv, heads * (ml.qk_nope_head_dim + ml.v_head_dim), ml.kv_lora_rank, 1,
                         config_.dtype}));
        a.kv_heads = heads;
        a.head_dim = ml.qk_nope_head_dim + ml.qk_rope_head_dim;
        a.head_dim_v = ml.v_head_dim;
      } else {
        a.kv_heads = kvh;
        a.head_dim = m.head_dim;
      }
      t += kernel_time(gpu::attention_kernel(g, a));
      it = prefill_attention_.emplace(std::make_pair(q, kv), t).first;
    }
    d += it->second;
  }
  if (shape.decodes > 0) {
    const int64_t kv_len = ceil_div(shape.decode_kv_tokens, shape.decodes);
    const auto key = std::make_tuple(shape.decodes, kv_len, shape.decode_q);
    auto it = decode_attention_.find(key);
    if (it == decode_attention_.end()) {
      AttentionShape a;
      a.batch = shape.decodes;
      a.heads = heads;
      a.q_len = shape.decode_q;
      a.kv_len = kv_len;
      a.causal = shape.decode_q > 1;
      a.dtype = adt;
      a.family = gpu::resolve_attention_family(config_.attention_kernel, g, /*decode=*/true);
      if (mla) {
        // Absorbed MLA decode: every head attends over the one latent
        // (kv_lora_rank + rope wide) per token as K, its first kv_lora_rank
        // columns as V: one tensor, read once.
        a.kv_heads = 1;
        a.head_dim = m.mla.kv_lora_rank + m.mla.qk_rope_head_dim;
        a.head_dim_v = m.mla.kv_lora_rank;
        a.kv_shared = true;
      } else {
        a.kv_heads = kvh;
        a.head_dim = m.head_dim;
      }
      if (decode_attention_.size() > 1'000'000) decode_attention_.clear();
      it = decode_attention_.emplace(key, kernel_time(gpu::attention_kernel(g, a))).first;
    }
    d += it->second;
  }
  return d;
}

sim::Duration IterationCost::tp_all_reduce(int stage, int64_t tokens) {
  const int tp = config_.parallel.tp;
  if (tp < 2) return sim::Duration::zero();
  const auto first = config_.ranks.begin() + static_cast<ptrdiff_t>(stage) * tp;
  const std::vector<int> group(first, first + tp);
  const auto bytes = static_cast<int64_t>(static_cast<double>(tokens * config_.model.hidden) *
                                          gpu::dtype_bytes(activation_dtype(config_.dtype)));
  return comm_.collective(CollectiveKind::all_reduce, sim::Bytes(bytes), group);
}

sim::Duration IterationCost::embedding_time(int64_t tokens) {
  auto it = embedding_.find(tokens);
  if (it != embedding_.end()) return it->second;
  const auto& m = config_.model;
  MemoryOpShape s;
  s.kind = MemoryOpKind::memcpy;
  s.elements = static_cast<int64_t>(static_cast<double>(tokens * m.hidden) *
                                    gpu::dtype_bytes(activation_dtype(config_.dtype)));
  s.dtype = gpu::Dtype::int8;
  // Vocabulary-parallel: each rank looks up its slice (an all-reduce then
  // sums the slices; cost() counts it with the communication).
  const sim::Duration d = kernel_time(gpu::memory_kernel(config_.gpu, s));
  embedding_.emplace(tokens, d);
  return d;
}

sim::Duration IterationCost::head_time(int64_t tokens, int64_t sampled) {
  const int64_t key = tokens * (int64_t{1} << 24) + sampled;
  auto it = head_.find(key);
  if (it != head_.end()) return it->second;
  const auto& m = config_.model;
  const auto& g = config_.gpu;
  const int tp = config_.parallel.tp;
  const gpu::Dtype act = activation_dtype(config_.dtype);
  MemoryOpShape norm;
  norm.kind = m.norm == models::NormKind::rms_norm ? MemoryOpKind::rms_norm : MemoryOpKind::layer_norm;
  norm.rows = tokens;
  norm.cols = m.hidden;
  norm.dtype = act;
  sim::Duration d = kernel_time(gpu::memory_kernel(g, norm));
  if (sampled > 0) {
    const int64_t vocab = ceil_div(m.vocab, tp);
    d += kernel_time(gpu::gemm_kernel(g, GemmShape{sampled, vocab, m.hidden, 1, config_.dtype}));
    if (tp > 1) {
      const int last = config_.parallel.pp - 1;
      const auto first = config_.ranks.begin() + static_cast<ptrdiff_t>(last) * tp;
      const std::vector<int> group(first, first + tp);
      const auto bytes = static_cast<int64_t>(static_cast<double>(sampled * vocab * tp) *
                                              gpu::dtype_bytes(act));
      d += comm_.collective(CollectiveKind::all_gather, sim::Bytes(bytes), group);
    }
    MemoryOpShape soft;
    soft.kind = MemoryOpKind::softmax;
    soft.rows = sampled;
    soft.cols = m.vocab;
    soft.dtype = gpu::Dtype::fp32;
    d += kernel_time(gpu::memory_kernel(g, soft));
  }
  head_.emplace(key, d);
  return d;
}

StepCost IterationCost::cost(const StepShape& shape) {
  StepCost c;
  c.compute = sim::Duration::zero();
  c.communication = sim::Duration::zero();
  const int pp = config_.parallel.pp;
  const int tp = config_.parallel.tp;
  const int64_t t = padded_tokens(shape);
  const sim::Duration attention = attention_time(shape);
  const auto act_bytes = gpu::dtype_bytes(activation_dtype(config_.dtype));
  c.total = sim::Duration::zero();
  for (int s = 0; s < pp; ++s) {
    const int dense = layers_of_stage_dense_[static_cast<size_t>(s)];
    const int moe = layers_of_stage_moe_[static_cast<size_t>(s)];
    const sim::Duration ar = tp_all_reduce(s, t);
    sim::Duration compute = sim::Duration::zero();
    if (dense > 0) compute += (layer_token_kernels(t, false) + attention) * dense;
    if (moe > 0) compute += (layer_token_kernels(t, true) + attention) * moe;
    sim::Duration comm = ar * (2 * static_cast<int64_t>(dense + moe));
    if (s == 0) {
      compute += embedding_time(t);
      comm += ar;
    }
    if (s == pp - 1) compute += head_time(t, shape.sampled);
    if (s + 1 < pp) {
      // Hidden states and residual to the next stage, rank i to rank i.
      const int src = config_.ranks[static_cast<size_t>(s * tp)];
      const int dst = config_.ranks[static_cast<size_t>((s + 1) * tp)];
      comm += comm_.p2p(src, dst,
                        sim::Bytes(static_cast<int64_t>(2.0 * static_cast<double>(t * config_.model.hidden) * act_bytes)));
    }
    sim::Duration stage = compute + comm;
    if (s == 0) stage += config_.step_overhead;
    c.stages.push_back(stage);
    c.total += stage;
    c.compute += compute;
    c.communication += comm;
  }
  return c;
}

}  // namespace gcsim::workloads::inference
