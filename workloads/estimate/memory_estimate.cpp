#include "workloads/estimate/memory_estimate.h"

#include <algorithm>
#include <cmath>

#include "workloads/training/memory_model.h"
#include "workloads/training/pipeline_schedule.h"

namespace gcsim::workloads::estimate {

namespace wt = workloads::training;
namespace wi = workloads::inference;

ZeroRow zero_row(double params, int nd, int stage, const wt::OptimizerConfig& o) {
  const wt::ModelStateBytes b = wt::zero_model_states(params, nd, stage, o);
  const std::string p = num(params), n = num(nd);
  auto part = [&](const char* label, double v, double per, bool sharded, const char* sym) {
    return make_line(label, v, Unit::bytes,
                     std::string(sym) + " Psi" + (sharded ? " / Nd" : "") + " = " + num(per) + " x " + p +
                         (sharded ? " / " + n : ""));
  };
  ZeroRow r;
  r.stage = stage;
  r.weights = part("weights", b.weights, o.weight_bytes, stage >= 3, "w");
  r.gradients = part("gradients", b.gradients, o.grad_bytes, stage >= 2, "g");
  r.optimizer = part("optimizer states", b.optimizer, o.state_bytes, stage >= 1, "o");
  static const char* const kForm[] = {"(w + g + o) Psi", "(w + g) Psi + o Psi / Nd",
                                      "w Psi + (g + o) Psi / Nd", "(w + g + o) Psi / Nd"};
  r.total = make_line("ZeRO-" + std::to_string(stage) + " model states", b.total(), Unit::bytes,
                      std::string(kForm[std::clamp(stage, 0, 3)]) + " with w " + num(o.weight_bytes) +
                          ", g " + num(o.grad_bytes) + ", o " + num(o.state_bytes) + ", Psi " + p +
                          ", Nd " + n);
  return r;
}

std::vector<Line> TrainingMemoryEstimate::lines() const {
  std::vector<Line> out{weights, gradients, optimizer};
  if (activation_layer.value > 0) out.push_back(activation_layer);
  out.insert(out.end(), {activations, buffers, reserved, total, capacity});
  return out;
}

TrainingMemoryEstimate estimate_training_memory(const wt::TrainingConfig& c, double hbm_bytes) {
  const auto& p = c.parallel;
  const wt::PipelinePlan plan =
      wt::build_pipeline(p.schedule, p.pp, p.virtual_stages, static_cast<int>(c.micro_batches()));
  // The fullest pipeline rank, balanced expert load (the whiteboard case).
  int worst = 0;
  wt::MemoryBreakdown m;
  for (int r = 0; r < p.pp; ++r) {
    const wt::MemoryBreakdown x = wt::memory_for_rank(c, plan, r);
    if (r == 0 || x.total() > m.total()) {
      m = x;
      worst = r;
    }
  }
  TrainingMemoryEstimate e;
  e.pipeline_rank = worst;
  e.params_on_gpu = m.params.total();
  const int nd = p.dp * p.cp;  // ZeRO shards dense states over the dp x cp ranks
  const std::string z = "ZeRO-" + std::to_string(c.optimizer.zero_stage);
  const std::string dense = num(m.params.dense), expert = num(m.params.expert);
  auto states = [&](const char* label, double v, double per, bool sharded) {
    std::string f = num(per) + " B x " + dense + " params" + (sharded ? " / " + num(nd) : "");
    if (m.params.expert > 0) {
      f += " + " + num(per) + " x " + expert + " expert params" +
           (sharded ? " / " + num(std::max(1, nd / p.ep)) : "");
    }
    return make_line(std::string(label) + " (" + z + ")", v, Unit::bytes, f);
  };
  const int st = c.optimizer.zero_stage;
  e.weights = states("weights", m.weights, c.optimizer.weight_bytes, st >= 3);
  e.gradients = states("gradients", m.gradients, c.optimizer.grad_bytes, st >= 2);
  e.optimizer = states("optimizer states", m.optimizer_states, c.optimizer.state_bytes, st >= 1);

  const auto& mo = c.model;
  // Korthikanti's closed form is written for GPT layers (MHA, GELU, 4h MLP)
  // with unfused attention; shown when it is the model's own form.
  if (!mo.is_moe() && mo.attention == models::AttentionKind::mha && mo.mlp == models::MlpKind::gelu &&
      p.cp == 1) {
    const double s = static_cast<double>(mo.seq_len), b = static_cast<double>(c.batch.micro);
    const double h = static_cast<double>(mo.hidden), a = mo.heads, t = p.tp;
    const wt::Recompute r = c.attention_impl == wt::AttentionImpl::flash && c.recompute == wt::Recompute::none
                                ? wt::Recompute::selective  // flash attention stores no s x s scores
                                : c.recompute;
    static const char* const kForm[] = {"sbh (10 + 24/t + 5as/(ht))", "sbh (10 + 24/t)", "2 sbh"};
    static const char* const kFormSp[] = {"sbh/t (34 + 5as/h)", "34 sbh/t", "2 sbh/t"};
    const int i = static_cast<int>(r);
    e.activation_layer = make_line(
        "activations per layer (Korthikanti et al. 2022, recompute " + std::string(wt::recompute_name(r)) + ")",
        wt::korthikanti_layer_bytes(s, b, h, a, t, p.sequence_parallel, r), Unit::bytes,
        std::string(p.sequence_parallel ? kFormSp[i] : kForm[i]) + ", s " + num(s) + ", b " + num(b) +
            ", h " + num(h) + ", a " + num(a) + ", t " + num(t));
  }
  e.activations = make_line("activations (recompute " + std::string(wt::recompute_name(c.recompute)) + ")",
                            m.activations, Unit::bytes,
                            "per micro-batch x micro-batches in flight = " +
                                num(m.activations_per_micro_batch) + " B x " + num(m.in_flight));
  e.buffers = make_line("communication buffers", m.communication_buffers, Unit::bytes,
                        "DP buckets, ZeRO-3 gathered layers, p2p receive buffers");
  e.reserved = make_line("reserved (CUDA context, NCCL, workspaces)", m.reserved, Unit::bytes);
  e.total = make_line("total per GPU (pipeline rank " + std::to_string(worst) + ")", m.total(), Unit::bytes,
                      "sum of the above");
  e.capacity = make_line("HBM per GPU", hbm_bytes, Unit::bytes);
  e.fits = m.total() <= hbm_bytes;
  return e;
}

std::vector<Line> KvEstimate::lines() const {
  return {bytes_per_token, bytes_per_token_per_gpu, weights,    activations,   kv_budget,
          block_bytes,     blocks,                  tokens,     max_concurrent};
}

KvEstimate estimate_kv(const models::ModelSpec& m, const wi::MemoryInputs& in, double tokens_per_request,
                       int64_t max_num_seqs) {
  const wi::MemoryPlan plan = wi::plan_memory(m, in);
  const double bytes = ::gcsim::models::gpu::dtype_bytes(in.kv);
  KvEstimate e;
  const double l = m.layers;
  if (m.attention == models::AttentionKind::mla) {
    e.bytes_per_token = make_line(
        "KV bytes per token (MLA latent)", static_cast<double>(wi::kv_bytes_per_token(m, in.kv)), Unit::bytes,
        "l (kv_lora_rank + rope_dim) bytes = " + num(l) + " x (" + num(static_cast<double>(m.mla.kv_lora_rank)) +
            " + " + num(static_cast<double>(m.mla.qk_rope_head_dim)) + ") x " + num(bytes));
  } else {
    e.bytes_per_token = make_line("KV bytes per token", static_cast<double>(wi::kv_bytes_per_token(m, in.kv)),
                                  Unit::bytes,
                                  "2 l kv_heads d bytes = 2 x " + num(l) + " x " + num(m.kv_heads) + " x " +
                                      num(static_cast<double>(m.head_dim)) + " x " + num(bytes));
  }
  const auto& sh = in.parallel;
  e.bytes_per_token_per_gpu = make_line(
      "KV bytes per token per GPU", static_cast<double>(plan.bytes_per_token), Unit::bytes,
      "stage layers ceil(l/pp) " + num(wi::stage_layers(m, sh.pp)) + ", KV heads per GPU max(1, kv_heads/tp) " +
          num(static_cast<double>(wi::kv_heads_per_gpu(m, sh.tp))) + " (TP " + num(sh.tp) + ", PP " + num(sh.pp) + ")");
  e.weights = make_line("weights per GPU", plan.weights.as_double(), Unit::bytes,
                        "stage's layers / tp, embedding and head on the end stages");
  e.activations = make_line("profiling activations", plan.activations.as_double(), Unit::bytes,
                            "largest layer live set over max_num_batched_tokens " +
                                num(static_cast<double>(in.max_num_batched_tokens)));
  e.kv_budget = make_line("KV cache budget", plan.kv_cache.as_double(), Unit::bytes,
                          "HBM x util - weights - activations - non-torch = " + num(plan.capacity.as_double()) +
                              " x " + num(in.gpu_memory_utilization) + " - " + num(plan.weights.as_double()) +
                              " - " + num(plan.activations.as_double()) + " - " + num(plan.non_torch.as_double()));
  e.block_bytes = make_line("KV block bytes", static_cast<double>(plan.block_bytes), Unit::bytes,
                            "block_size x per-GPU bytes per token = " + num(static_cast<double>(in.block_size)) +
                                " x " + num(static_cast<double>(plan.bytes_per_token)));
  e.blocks = make_line("KV blocks", static_cast<double>(plan.num_blocks), Unit::count,
                       "floor(budget / block bytes)");
  const double tokens = static_cast<double>(plan.num_blocks * in.block_size);
  e.tokens = make_line("KV tokens", tokens, Unit::count,
                       "blocks x block_size = " + num(static_cast<double>(plan.num_blocks)) + " x " +
                           num(static_cast<double>(in.block_size)));
  // Each request holds ceil(tokens / block_size) blocks at its longest.
  const double blocks_per_req = std::ceil(std::max(1.0, tokens_per_request) / static_cast<double>(in.block_size));
  const double fit = std::floor(static_cast<double>(plan.num_blocks) / blocks_per_req);
  e.max_concurrent = make_line("max concurrent requests", std::min(fit, static_cast<double>(max_num_seqs)),
                               Unit::count,
                               "min(max_num_seqs, blocks / ceil(tokens per request / block_size)) = min(" +
                                   num(static_cast<double>(max_num_seqs)) + ", " +
                                   num(static_cast<double>(plan.num_blocks)) + " / " + num(blocks_per_req) + ")");
  return e;
}

}  // namespace gcsim::workloads::estimate
