// Closed forms over a ModelSpec: parameter counts (total and active per
// token) and FLOPs per token, the numbers a capacity planner checks first.
// Pure functions; tests compare them with published totals and with
// Narayanan et al. (SC'21) for GPT.
#pragma once

#include "workloads/models/model_spec.h"

namespace gcsim::workloads::models {

// Parameters of one transformer layer, by part.
struct LayerParams {
  double attention = 0;       // projections (+ MLA's low-rank norms) and their biases
  double norms = 0;           // the two pre-norms
  double dense_mlp = 0;       // dense MLP (0 in an MoE layer)
  double router = 0;          // MoE gate
  double routed_experts = 0;  // all routed experts of the layer
  double shared_experts = 0;
  double per_expert = 0;      // one routed expert
  double total() const {
    return attention + norms + dense_mlp + router + routed_experts + shared_experts;
  }
};

struct ParamCounts {
  double embedding = 0;       // token embedding
  double position = 0;        // learned position embedding
  double output_head = 0;     // 0 when tied to the embedding
  double final_norm = 0;
  LayerParams dense_layer;    // a layer with a dense MLP
  LayerParams moe_layer;      // a layer with experts (zeros in a dense model)
  double total = 0;           // everything stored
  double active = 0;          // used per token: top_k routed + shared experts
};

ParamCounts count_params(const ModelSpec& m);
// One layer's attention weights that produce Q, K and V from the layer's
// (or the latents') normed input, the GEMMs DeepSeek-V3's recompute runs
// again in the backward: MLA's Q up-projection and KV up-projection, or a
// plain attention's QKV projection (MLA without query compression: its Q
// projection from the hidden state). MLA's rotary key and the output
// projection are not among them.
double up_projection_params(const ModelSpec& m);

// Narayanan et al. (SC'21), GPT with tied embeddings and learned positions:
// P = 12 l h^2 (1 + 13/(12h) + (V+s)/(12 l h)).
double narayanan_params(double layers, double hidden, double vocab, double seq);

// Forward FLOPs per token (2 per multiply-add), with attention counted over
// the whole sequence as Narayanan et al. and PaLM's MFU do (not halved for
// the causal mask), split by part.
struct TokenFlops {
  double layers = 0;          // all transformer layers: projections, MLP/experts, router
  double attention = 0;       // QK^T and PV of all layers (the s/(6h) term)
  double logits = 0;          // output head
  double forward() const { return layers + attention + logits; }
};
TokenFlops forward_flops_per_token(const ModelSpec& m);

// Model FLOPs of one training step over `tokens` tokens: forward + backward
// (2x forward), no recompute.
double model_flops(const ModelSpec& m, double tokens);

// Narayanan et al. (SC'21) eq. for a step of B sequences of s tokens, GPT:
// F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) with full recompute, which
// re-runs every layer's forward but not the output head. Without recompute
// the layers' factor is 72 and the head keeps its 6BshV: 72 B s l h^2
// (1 + s/(6h) + V/(12 l h)).
double narayanan_flops(double batch, double seq, double layers, double hidden, double vocab,
                       bool full_recompute);

}  // namespace gcsim::workloads::models
