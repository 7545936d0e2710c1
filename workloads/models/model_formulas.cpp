#include "workloads/models/model_formulas.h"

namespace gcsim::workloads::models {

namespace {

// Weight and bias of the two pre-norms: LayerNorm has both, RMSNorm a scale.
double norm_params(const ModelSpec& m) {
  const double h = static_cast<double>(m.hidden);
  return m.norm == NormKind::layer_norm ? 2.0 * h : h;
}

double attention_params(const ModelSpec& m) {
  const double h = static_cast<double>(m.hidden);
  if (m.attention == AttentionKind::mla) {
    const MlaSpec& a = m.mla;
    const double heads = m.heads;
    const double qk = static_cast<double>(a.qk_nope_head_dim + a.qk_rope_head_dim);
    double p = 0;
    if (a.q_lora_rank > 0) {
      const double r = static_cast<double>(a.q_lora_rank);
      p += h * r + r + r * heads * qk;  // down-projection, its RMSNorm, up-projection
    } else {
      p += h * heads * qk;
    }
    const double kv = static_cast<double>(a.kv_lora_rank);
    p += h * (kv + static_cast<double>(a.qk_rope_head_dim)) + kv;  // compressed KV + rotary key, norm
    p += kv * heads * static_cast<double>(a.qk_nope_head_dim + a.v_head_dim);  // K and V up
    p += heads * static_cast<double>(a.v_head_dim) * h;                       // output
    return p;
  }
  const double q = static_cast<double>(m.q_width()), kv = static_cast<double>(m.kv_width());
  double p = h * q + 2.0 * h * kv + q * h;
  if (m.linear_bias) p += q + 2.0 * kv + h;
  else if (m.qkv_bias) p += q + 2.0 * kv;
  return p;
}

// One MLP of intermediate size f: GELU has two matrices, SwiGLU three.
double mlp_params(const ModelSpec& m, int64_t ffn) {
  const double h = static_cast<double>(m.hidden), f = static_cast<double>(ffn);
  double p = (m.mlp == MlpKind::swiglu ? 3.0 : 2.0) * h * f;
  if (m.linear_bias) p += (m.mlp == MlpKind::swiglu ? 2.0 * f : f) + h;
  return p;
}

}  // namespace

double up_projection_params(const ModelSpec& m) {
  if (m.attention == AttentionKind::mla) {
    const MlaSpec& a = m.mla;
    // Without query compression Q comes straight from the normed input.
    const double q_in = a.q_lora_rank > 0 ? static_cast<double>(a.q_lora_rank) : static_cast<double>(m.hidden);
    return q_in * static_cast<double>(m.q_width()) +
           static_cast<double>(a.kv_lora_rank) * static_cast<double>(m.heads) *
               static_cast<double>(a.qk_nope_head_dim + a.v_head_dim);
  }
  return static_cast<double>(m.hidden) * static_cast<double>(m.q_width() + 2 * m.kv_width());
}

int64_t ModelSpec::q_width() const {
  if (attention == AttentionKind::mla) {
    return static_cast<int64_t>(heads) * (mla.qk_nope_head_dim + mla.qk_rope_head_dim);
  }
  return static_cast<int64_t>(heads) * head_dim;
}

int64_t ModelSpec::kv_width() const {
  if (attention == AttentionKind::mla) return static_cast<int64_t>(heads) * mla.v_head_dim;
  return static_cast<int64_t>(kv_heads) * head_dim;
}

ParamCounts count_params(const ModelSpec& m) {
  ParamCounts c;
  const double h = static_cast<double>(m.hidden), v = static_cast<double>(m.vocab);
  c.embedding = v * h;
  c.position = m.position == PositionKind::learned ? static_cast<double>(m.seq_len) * h : 0.0;
  c.output_head = m.tied_embeddings ? 0.0 : v * h;
  c.final_norm = m.norm == NormKind::layer_norm ? 2.0 * h : h;

  LayerParams base;
  base.attention = attention_params(m);
  base.norms = 2.0 * norm_params(m);
  c.dense_layer = base;
  c.dense_layer.dense_mlp = mlp_params(m, m.ffn_hidden);
  if (m.is_moe()) {
    c.moe_layer = base;
    c.moe_layer.router = h * m.moe.experts;
    c.moe_layer.per_expert = mlp_params(m, m.moe.expert_ffn_hidden);
    c.moe_layer.routed_experts = c.moe_layer.per_expert * m.moe.experts;
    c.moe_layer.shared_experts = c.moe_layer.per_expert * m.moe.shared_experts;
  }
  const double outer = c.embedding + c.position + c.output_head + c.final_norm;
  c.total = outer + m.dense_mlp_layers() * c.dense_layer.total() +
            m.moe_layers() * c.moe_layer.total();
  const double moe_active = c.moe_layer.total() - c.moe_layer.routed_experts +
                            c.moe_layer.per_expert * m.moe.top_k;
  c.active = outer + m.dense_mlp_layers() * c.dense_layer.total() + m.moe_layers() * moe_active;
  return c;
}

double narayanan_params(double l, double h, double v, double s) {
  return 12.0 * l * h * h * (1.0 + 13.0 / (12.0 * h) + (v + s) / (12.0 * l * h));
}

TokenFlops forward_flops_per_token(const ModelSpec& m) {
  TokenFlops f;
  const double h = static_cast<double>(m.hidden), s = static_cast<double>(m.seq_len);
  // Matrix weights only (norms and biases are not multiply-adds).
  auto matmul_weights = [&](const LayerParams& p, bool moe) {
    double attn = attention_params(m);
    if (m.attention == AttentionKind::mla) {
      attn -= static_cast<double>(m.mla.kv_lora_rank) + static_cast<double>(m.mla.q_lora_rank);
    } else if (m.linear_bias) {
      attn -= static_cast<double>(m.q_width() + 2 * m.kv_width()) + h;
    } else if (m.qkv_bias) {
      attn -= static_cast<double>(m.q_width() + 2 * m.kv_width());
    }
    auto mlp_weights = [&](int64_t ffn) {
      return (m.mlp == MlpKind::swiglu ? 3.0 : 2.0) * h * static_cast<double>(ffn);
    };
    if (!moe) return attn + mlp_weights(m.ffn_hidden);
    return attn + p.router +
           mlp_weights(m.moe.expert_ffn_hidden) * (m.moe.top_k + m.moe.shared_experts);
  };
  const ParamCounts c = count_params(m);
  f.layers = 2.0 * (m.dense_mlp_layers() * matmul_weights(c.dense_layer, false) +
                    m.moe_layers() * matmul_weights(c.moe_layer, true));
  // QK^T over qk width and PV over v width, each 2 flops per multiply-add,
  // against all s keys.
  const double qk = static_cast<double>(m.q_width());
  const double pv = m.attention == AttentionKind::mla
                        ? static_cast<double>(m.heads) * static_cast<double>(m.mla.v_head_dim)
                        : static_cast<double>(m.heads) * static_cast<double>(m.head_dim);
  f.attention = m.layers * 2.0 * s * (qk + pv);
  f.logits = 2.0 * h * static_cast<double>(m.vocab);
  return f;
}

double model_flops(const ModelSpec& m, double tokens) {
  return 3.0 * forward_flops_per_token(m).forward() * tokens;
}

double narayanan_flops(double b, double s, double l, double h, double v, bool full_recompute) {
  if (full_recompute) {
    return 96.0 * b * s * l * h * h * (1.0 + s / (6.0 * h) + v / (16.0 * l * h));
  }
  return 72.0 * b * s * l * h * h * (1.0 + s / (6.0 * h) + v / (12.0 * l * h));
}

}  // namespace gcsim::workloads::models
