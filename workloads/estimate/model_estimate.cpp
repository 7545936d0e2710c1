#include "workloads/estimate/model_estimate.h"

#include "workloads/models/model_formulas.h"

namespace gcsim::workloads::estimate {

namespace wm = workloads::models;

std::vector<Line> ModelEstimate::lines() const {
  std::vector<Line> out{embedding, attention, mlp};
  if (experts.value > 0) out.push_back(experts);
  out.push_back(norms);
  out.push_back(total);
  if (experts.value > 0) out.push_back(active);
  if (narayanan.value > 0) out.push_back(narayanan);
  out.push_back(dense_flops_per_token);
  out.push_back(attention_flops_per_token);
  out.push_back(training_flops_per_token);
  return out;
}

Line narayanan_params_line(double l, double h, double v, double s) {
  return make_line("parameters (Narayanan et al. 2021)", wm::narayanan_params(l, h, v, s), Unit::count,
                   "12 l h^2 (1 + 13/(12h) + (V+s)/(12 l h)) = 12 x " + num(l) + " x " + num(h) +
                       "^2 x (1 + 13/(12 x " + num(h) + ") + (" + num(v) + " + " + num(s) +
                       ")/(12 x " + num(l) + " x " + num(h) + "))");
}

ModelEstimate estimate_model(const wm::ModelSpec& m) {
  const wm::ParamCounts c = wm::count_params(m);
  const wm::TokenFlops f = wm::forward_flops_per_token(m);
  const double h = static_cast<double>(m.hidden), v = static_cast<double>(m.vocab);
  const double l = m.layers, ld = m.dense_mlp_layers(), lm = m.moe_layers();
  ModelEstimate e;

  std::string emb = "V h = " + num(v) + " x " + num(h);
  if (c.position > 0) emb = "(V + s) h = (" + num(v) + " + " + num(static_cast<double>(m.seq_len)) + ") x " + num(h);
  if (c.output_head > 0) emb += " + untied head V h";
  e.embedding = make_line("embedding and output head", c.embedding + c.position + c.output_head,
                          Unit::count, emb);

  const double q = static_cast<double>(m.q_width()), kv = static_cast<double>(m.kv_width());
  std::string attn_f;
  if (m.attention == wm::AttentionKind::mla) {
    attn_f = "l x MLA projections (q/kv low-rank, K/V up, output) = " + num(l) + " x " +
             num(c.dense_layer.attention);
  } else {
    attn_f = "l (2 h q + 2 h kv) = " + num(l) + " x (2 x " + num(h) + " x " + num(q) + " + 2 x " +
             num(h) + " x " + num(kv) + ")" + (m.linear_bias || m.qkv_bias ? " + biases" : "");
  }
  e.attention = make_line("attention", l * c.dense_layer.attention, Unit::count, attn_f);

  const double mats = m.mlp == wm::MlpKind::swiglu ? 3.0 : 2.0;
  e.mlp = make_line("dense MLP", ld * c.dense_layer.dense_mlp, Unit::count,
                    "l_dense x " + num(mats) + " h f = " + num(ld) + " x " + num(mats) + " x " + num(h) +
                        " x " + num(static_cast<double>(m.ffn_hidden)) + (m.linear_bias ? " + biases" : ""));
  if (m.is_moe()) {
    const auto& x = c.moe_layer;
    e.experts = make_line(
        "experts and routers", lm * (x.routed_experts + x.shared_experts + x.router), Unit::count,
        "l_moe (E + shared) x " + num(mats) + " h f_e + l_moe E h = " + num(lm) + " x (" +
            num(m.moe.experts) + " + " + num(m.moe.shared_experts) + ") x " + num(x.per_expert) +
            " + " + num(lm) + " x " + num(m.moe.experts) + " x " + num(h));
  }
  e.norms = make_line("norms", ld * c.dense_layer.norms + lm * c.moe_layer.norms + c.final_norm,
                      Unit::count, m.norm == wm::NormKind::layer_norm ? "(4 l + 2) h" : "(2 l + 1) h");
  e.total = make_line("total parameters N", c.total, Unit::count, "sum of the above");
  if (m.is_moe()) {
    e.active = make_line("active parameters per token", c.active, Unit::count,
                         "N - l_moe (E - top_k) x expert = N - " + num(lm) + " x (" +
                             num(m.moe.experts) + " - " + num(m.moe.top_k) + ") x " +
                             num(c.moe_layer.per_expert));
  } else {
    e.active = make_line("active parameters per token", c.total, Unit::count, "dense: all of N");
  }
  // Narayanan's form holds for GPT-style models (MHA, GELU 4h MLP, tied
  // embeddings, learned positions, biases); others keep value 0.
  if (!m.is_moe() && m.attention == wm::AttentionKind::mha && m.mlp == wm::MlpKind::gelu &&
      m.ffn_hidden == 4 * m.hidden && m.tied_embeddings && m.position == wm::PositionKind::learned) {
    e.narayanan = narayanan_params_line(l, h, v, static_cast<double>(m.seq_len));
  }
  e.dense_flops_per_token = make_line("forward FLOPs per token, weights", f.layers + f.logits, Unit::flops,
                                      "2 x matrix weights used (incl. head) = 2 x " +
                                          num((f.layers + f.logits) / 2.0));
  const double s = static_cast<double>(m.seq_len);
  e.attention_flops_per_token = make_line("forward FLOPs per token, attention", f.attention, Unit::flops,
                                          "2 l s (qk + pv widths) = 2 x " + num(l) + " x " + num(s) +
                                              " x " + num(f.attention / (2.0 * l * s)));
  e.training_flops_per_token = make_line(
      "training FLOPs per token (6N + attention)", 3.0 * f.forward(), Unit::flops,
      "3 x (" + num(f.layers + f.logits) + " + " + num(f.attention) + ")");
  return e;
}

Line step_model_flops_line(const wm::ModelSpec& m, double tokens) {
  const double per = 3.0 * wm::forward_flops_per_token(m).forward();
  return make_line("model FLOPs per step", wm::model_flops(m, tokens), Unit::flops,
                   "3 x forward per token x tokens = " + num(per) + " x " + num(tokens));
}

}  // namespace gcsim::workloads::estimate
