#include "workloads/models/model_spec.h"

#include <cmath>

namespace gcsim::workloads::models {

const char* attention_name(AttentionKind k) {
  switch (k) {
    case AttentionKind::mha: return "mha";
    case AttentionKind::gqa: return "gqa";
    case AttentionKind::mla: return "mla";
  }
  return "?";
}

const char* mlp_name(MlpKind k) { return k == MlpKind::gelu ? "gelu" : "swiglu"; }

ModelProblem check_model(const ModelSpec& m) {
  const auto s = [](int64_t v) { return std::to_string(v); };
  if (m.layers < 1) return {"layers", "must be at least 1"};
  if (m.hidden < 1) return {"hidden", "must be at least 1"};
  if (m.heads < 1) return {"heads", "must be at least 1"};
  if (m.vocab < 1) return {"vocab", "must be at least 1"};
  if (m.seq_len < 1) return {"seq_len", "must be at least 1"};
  if (m.head_dim < 1) return {"head_dim", "must be at least 1"};
  if (m.attention != AttentionKind::mla) {
    if (m.kv_heads < 1 || m.kv_heads > m.heads) {
      return {"kv_heads", "must lie in [1, heads = " + s(m.heads) + "], got " + s(m.kv_heads)};
    }
    if (m.heads % m.kv_heads != 0) {
      return {"kv_heads", "kv_heads (" + s(m.kv_heads) + ") must divide heads (" + s(m.heads) +
                              "): each key/value head serves a whole group of query heads"};
    }
    if (m.attention == AttentionKind::mha && m.kv_heads != m.heads) {
      return {"kv_heads", "kv_heads (" + s(m.kv_heads) + ") differs from heads (" + s(m.heads) +
                              ") but attention is mha: use attention: gqa"};
    }
  } else {
    const MlaSpec& a = m.mla;
    if (a.kv_lora_rank < 1 || a.qk_nope_head_dim < 1 || a.qk_rope_head_dim < 1 ||
        a.v_head_dim < 1 || a.q_lora_rank < 0) {
      return {"mla", "kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim and v_head_dim must be "
                     "positive (q_lora_rank 0 = no query compression)"};
    }
  }
  if (m.dropout < 0.0 || m.dropout >= 1.0) return {"dropout", "must lie in [0, 1)"};
  if (m.is_moe()) {
    const MoeSpec& e = m.moe;
    if (e.top_k < 1 || e.top_k > e.experts) {
      return {"moe.top_k", "must lie in [1, experts = " + s(e.experts) + "], got " + s(e.top_k)};
    }
    if (e.expert_ffn_hidden < 1) return {"moe.expert_ffn_hidden", "must be at least 1"};
    if (e.shared_experts < 0) return {"moe.shared_experts", "must not be negative"};
    if (e.dense_layers < 0 || e.dense_layers >= m.layers) {
      return {"moe.dense_layers", "must lie in [0, layers - 1 = " + s(m.layers - 1) + "], got " +
                                      s(e.dense_layers)};
    }
    if (e.max_route_nodes < 0) return {"moe.max_route_nodes", "must not be negative"};
    if (!(e.skew >= 0.0) || !std::isfinite(e.skew)) return {"moe.skew", "must be >= 0"};
    if (!(e.balance >= 0.0 && e.balance <= 1.0)) {
      return {"moe.balance", "must lie in [0, 1] (the fraction of the skew balancing removes)"};
    }
    // The op's bound (moe_op_loader.cpp): a factor above 1000 keeps every copy.
    if (!(e.capacity_factor >= 0.0 && e.capacity_factor <= 1000.0)) {
      return {"moe.capacity_factor", "must lie in [0, 1000] (0: dropless)"};
    }
    if (e.pad_to_capacity && e.capacity_factor == 0.0) {
      return {"moe.pad_to_capacity", "needs moe.capacity_factor > 0 (a dropless layer has no capacity to fill)"};
    }
  }
  if (m.dense_mlp_layers() > 0 && m.ffn_hidden < 1) {
    return {"ffn_hidden", "must be at least 1 (the model has dense MLP layers)"};
  }
  return {};
}

}  // namespace gcsim::workloads::models
