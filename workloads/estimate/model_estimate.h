// Worksheet section 1, the model: parameters by part (embedding, attention,
// MLP or experts; total and active per token for MoE) and FLOPs per token
// (6N plus the attention term), each as a Line with its formula. Numbers
// come from workloads/models/model_formulas.h; this file only writes them
// out the way an engineer derives them.
#pragma once

#include <vector>

#include "workloads/estimate/estimate_line.h"
#include "workloads/models/model_spec.h"

namespace gcsim::workloads::estimate {

struct ModelEstimate {
  Line embedding;          // token (+ learned position) embedding and untied output head
  Line attention;          // all layers' attention projections (and biases)
  Line mlp;                // dense MLPs of all dense layers
  Line experts;            // routed + shared experts and routers of all MoE layers (0 if dense)
  Line norms;              // layer norms and final norm
  Line total;              // everything stored
  Line active;             // used per token (= total for dense models)
  Line narayanan;          // 12 l h^2 (1 + 13/(12h) + (V+s)/(12 l h)); value 0 unless GPT-like MHA/GELU
  Line dense_flops_per_token;      // 2 x active matrix weights, forward (the "2N" of 6N)
  Line attention_flops_per_token;  // QK^T and PV over the whole sequence, forward
  Line training_flops_per_token;   // 3 x forward (forward + backward), no recompute
  std::vector<Line> lines() const;  // in worksheet order, zero-valued MoE/Narayanan lines left out
};

ModelEstimate estimate_model(const models::ModelSpec& m);

// Narayanan et al. (SC'21) parameter count of GPT with tied embeddings and
// learned positions: 12 l h^2 (1 + 13/(12h) + (V+s)/(12 l h)).
// GPT-3 175B (l 96, h 12288, V 51200, s 2048): 174.6e9.
Line narayanan_params_line(double layers, double hidden, double vocab, double seq);

// Model FLOPs of a training step over `tokens` tokens: 3 x forward per token
// (6N + attention), whole cluster, as MFU counts them.
Line step_model_flops_line(const models::ModelSpec& m, double tokens);

}  // namespace gcsim::workloads::estimate
