// A decoder-only transformer as the training generator and the formulas see
// it: GPT (MHA, GELU, LayerNorm, learned positions), Llama (GQA, SwiGLU,
// RMSNorm, rotary), mixture-of-experts layers (routed and shared experts,
// top-k, first dense layers) and DeepSeek-V3's multi-head latent attention.
// Presets live in configs/models/ with their sources; sim/cli reads them.
#pragma once

#include <cstdint>
#include <string>

// Code in gcsim::workloads::* that names the hardware models as
// `models::gpu::...` finds this namespace first; these aliases send such
// names on to gcsim::models.
namespace gcsim::models {
namespace gpu {}
namespace network {}
namespace cluster {}
namespace collectives {}
namespace storage {}
}  // namespace gcsim::models

namespace gcsim::workloads::models {

namespace gpu = ::gcsim::models::gpu;
namespace network = ::gcsim::models::network;
namespace cluster = ::gcsim::models::cluster;
namespace collectives = ::gcsim::models::collectives;
namespace storage = ::gcsim::models::storage;

enum class AttentionKind { mha, gqa, mla };
enum class MlpKind { gelu, swiglu };
enum class NormKind { layer_norm, rms_norm };
enum class PositionKind { learned, rotary };

// Multi-head latent attention (DeepSeek-V2/V3): queries and keys/values go
// through low-rank projections; only the compressed KV and a shared rotary
// key are cached.
struct MlaSpec {
  int64_t q_lora_rank = 0;        // 0: queries projected directly from the hidden state
  int64_t kv_lora_rank = 512;
  int64_t qk_nope_head_dim = 128; // per-head query/key width without rotary
  int64_t qk_rope_head_dim = 64;  // rotary part, shared by all heads for keys
  int64_t v_head_dim = 128;
};

struct MoeSpec {
  int experts = 0;                // routed experts per MoE layer; 0 = dense model
  int top_k = 1;                  // routed experts per token
  int64_t expert_ffn_hidden = 0;  // intermediate size of one expert (SwiGLU or GELU)
  int shared_experts = 0;         // always-on experts, each expert_ffn_hidden wide
  int dense_layers = 0;           // the first layers use a dense MLP (ffn_hidden)
  // Node-limited routing (DeepSeek-V3: M = 4): a token is sent to experts on
  // at most this many nodes, so it crosses the scale-out network at most
  // this many times. 0 = no limit.
  int max_route_nodes = 0;
  // Routing imbalance: expert e receives tokens in proportion to
  // 1 / (e + 1)^skew (Zipf). 0 = perfectly balanced.
  double skew = 0.0;
  // DeepSeek-V3's auxiliary-loss-free balancing: the fraction of the skew
  // its bias terms remove, 0..1 (shares (1 - balance) x Zipf + balance / E).
  double balance = 0.0;
  // The popular experts on a seeded permutation per layer instead of the
  // lowest indices (EP rank 0 hot in every layer).
  bool permuted_placement = false;
  // Draw each (MoE layer, micro-batch)'s routing under the run's seed
  // instead of its expected counts (the graph `moe` op's `sample`).
  bool sample = false;
  // GShard/Switch capacity per expert and source rank,
  // ceil(capacity_factor x tokens x top_k / experts) copies, the rest
  // dropped (the op's `capacity_factor`); 0 = dropless.
  double capacity_factor = 0.0;
  // Every expert filled to its capacity from each source (the op's
  // `pad_to_capacity`: fixed-size dispatch buffers, as GShard and Megatron's
  // pad-to-capacity run them): the padding is sent and computed. Needs a
  // capacity_factor.
  bool pad_to_capacity = false;
};

struct ModelSpec {
  std::string name;    // preset name or "custom"
  std::string source;  // where the architecture figures come from
  int layers = 0;
  int64_t hidden = 0;
  int heads = 0;
  int kv_heads = 0;      // = heads for MHA
  int64_t head_dim = 0;  // per-head width (hidden / heads unless stated)
  int64_t ffn_hidden = 0;  // dense MLP intermediate size
  int64_t vocab = 0;
  int64_t seq_len = 0;     // training sequence length (tokens)
  AttentionKind attention = AttentionKind::mha;
  MlpKind mlp = MlpKind::gelu;
  NormKind norm = NormKind::layer_norm;
  PositionKind position = PositionKind::learned;
  bool tied_embeddings = false;  // output head shares the input embedding
  bool linear_bias = false;      // biases on every linear layer and LayerNorm (GPT)
  bool qkv_bias = false;         // biases on Q, K, V only (Qwen2)
  double dropout = 0.0;          // > 0: dropout after attention scores and both blocks
  MlaSpec mla;
  MoeSpec moe;

  bool is_moe() const { return moe.experts > 0; }
  bool is_moe_layer(int layer) const { return is_moe() && layer >= moe.dense_layers; }
  int moe_layers() const { return is_moe() ? layers - moe.dense_layers : 0; }
  int dense_mlp_layers() const { return layers - moe_layers(); }
  // Widths of the attention projections.
  int64_t q_width() const;   // query output: heads x (head_dim or MLA qk dims)
  int64_t kv_width() const;  // one of K or V (GQA: kv_heads x head_dim)
};

// A field that is wrong and why. `key` is the field as configs name it,
// dotted below `model` ("kv_heads", "moe.top_k"); empty when all is well.
struct ModelProblem {
  std::string key;
  std::string message;
  explicit operator bool() const { return !key.empty(); }
};
// Checks that the spec is self-consistent (heads a multiple of kv_heads,
// top_k <= experts, ...).
ModelProblem check_model(const ModelSpec& m);

const char* attention_name(AttentionKind k);
const char* mlp_name(MlpKind k);

}  // namespace gcsim::workloads::models
