#include "sim/scenario/model_spec_loader.h"

#include <memory>
#include <optional>

#include "sim/scenario/presets.h"
#include "sim/config/did_you_mean.h"

namespace gcsim::cli {

using sim::config::ConfigReader;
using sim::config::ConfigSource;
using sim::config::Json;
using workloads::models::AttentionKind;
using workloads::models::MlpKind;
using workloads::models::ModelSpec;
using workloads::models::NormKind;
using workloads::models::PositionKind;

namespace {

template <typename T>
std::optional<T> from(const ModelSpec* base, T ModelSpec::*field) {
  if (!base) return std::nullopt;
  return base->*field;
}

int read_count(ConfigReader& r, const std::string& key, std::optional<int64_t> fallback,
               const char* doc, int64_t lo) {
  return static_cast<int>(r.get_int_in(key, fallback, doc, lo, 1'000'000'000));
}

ModelSpec read_preset_document(const YAML::Node& root, const std::string& origin) {
  auto source = std::make_shared<ConfigSource>();
  source->file = origin;
  Json ignored;
  ConfigReader r(root, "", source, &ignored);
  ModelSpec m = read_model_fields(r, nullptr);
  r.get_string("description", std::string(), "one-line description");
  r.finish();
  return m;
}

}  // namespace

ModelSpec read_model_fields(ConfigReader& r, const ModelSpec* base) {
  ModelSpec m = base ? *base : ModelSpec{};
  m.name = r.get_string("name", base ? base->name : std::string("custom"), "model name");
  m.source = r.get_string("source", from(base, &ModelSpec::source).value_or(""),
                          "where the architecture comes from");
  m.layers = read_count(r, "layers", from<int>(base, &ModelSpec::layers), "transformer layers", 1);
  m.hidden = r.get_int_in("hidden", from(base, &ModelSpec::hidden), "model width h", 1);
  m.heads = read_count(r, "heads", from<int>(base, &ModelSpec::heads), "query heads", 1);
  m.kv_heads = read_count(r, "kv_heads", base ? base->kv_heads : m.heads,
                          "key/value heads (GQA when fewer than heads)", 1);
  m.head_dim = r.get_int_in("head_dim", base ? base->head_dim : m.hidden / m.heads,
                            "width of one head (default hidden / heads)", 1);
  m.vocab = r.get_int_in("vocab", from(base, &ModelSpec::vocab), "vocabulary size", 1);
  m.seq_len = r.get_int_in("seq_len", from(base, &ModelSpec::seq_len),
                           "training sequence length (tokens)", 1);

  const std::string default_attention =
      base ? workloads::models::attention_name(base->attention)
           : (m.kv_heads < m.heads ? "gqa" : "mha");
  const std::string attention = r.get_choice("attention", {"mha", "gqa", "mla"}, default_attention,
                                             "attention: mha, gqa or mla (DeepSeek)");
  m.attention = attention == "mha" ? AttentionKind::mha
                : attention == "gqa" ? AttentionKind::gqa
                                     : AttentionKind::mla;
  // Inline defaults follow Megatron-LM's GPT, the model of the contract's
  // example and of Korthikanti et al.'s runs.
  const std::string mlp =
      r.get_choice("mlp", {"gelu", "swiglu"}, base ? workloads::models::mlp_name(base->mlp) : "gelu",
                   "MLP: gelu (2 matrices) or swiglu (3)");
  m.mlp = mlp == "gelu" ? MlpKind::gelu : MlpKind::swiglu;
  m.ffn_hidden = r.get_int_in("ffn_hidden", base ? base->ffn_hidden : 4 * m.hidden,
                              "dense MLP intermediate size (default 4 x hidden)", 0);
  const std::string norm = r.get_choice(
      "norm", {"layer_norm", "rms_norm"},
      std::string(base && base->norm == NormKind::rms_norm ? "rms_norm" : "layer_norm"),
      "normalisation");
  m.norm = norm == "layer_norm" ? NormKind::layer_norm : NormKind::rms_norm;
  const std::string position = r.get_choice(
      "position", {"learned", "rotary"},
      std::string(base && base->position == PositionKind::rotary ? "rotary" : "learned"),
      "position encoding");
  m.position = position == "learned" ? PositionKind::learned : PositionKind::rotary;
  m.tied_embeddings = r.get_bool("tied_embeddings", base ? base->tied_embeddings : true,
                                 "output head shares the input embedding");
  m.linear_bias = r.get_bool("linear_bias", base ? base->linear_bias : true,
                             "biases on every linear layer (GPT)");
  m.qkv_bias = r.get_bool("qkv_bias", base ? base->qkv_bias : false, "biases on Q, K, V only");
  m.dropout = r.get_double("dropout", base ? base->dropout : 0.1,
                           "dropout probability (> 0 adds masks and kernels)");

  ConfigReader mla = r.child("mla", "multi-head latent attention ranks (attention: mla)");
  m.mla.q_lora_rank = mla.get_int_in("q_lora_rank", m.mla.q_lora_rank,
                                     "query compression rank (0 = none)", 0);
  m.mla.kv_lora_rank =
      mla.get_int_in("kv_lora_rank", m.mla.kv_lora_rank, "key/value compression rank", 1);
  m.mla.qk_nope_head_dim =
      mla.get_int_in("qk_nope_head_dim", m.mla.qk_nope_head_dim, "per-head q/k width", 1);
  m.mla.qk_rope_head_dim =
      mla.get_int_in("qk_rope_head_dim", m.mla.qk_rope_head_dim, "rotary q/k width", 1);
  m.mla.v_head_dim = mla.get_int_in("v_head_dim", m.mla.v_head_dim, "per-head value width", 1);
  mla.finish();

  ConfigReader moe = r.child("moe", "mixture of experts (experts: 0 = dense)");
  m.moe.experts = read_count(moe, "experts", m.moe.experts, "routed experts per MoE layer", 0);
  m.moe.top_k = read_count(moe, "top_k", m.moe.top_k, "routed experts per token", 1);
  m.moe.expert_ffn_hidden =
      moe.get_int_in("expert_ffn_hidden", m.moe.expert_ffn_hidden > 0 ? m.moe.expert_ffn_hidden
                                                                      : m.ffn_hidden,
                     "intermediate size of one expert", 0);
  m.moe.shared_experts =
      read_count(moe, "shared_experts", m.moe.shared_experts, "always-active experts", 0);
  m.moe.dense_layers =
      read_count(moe, "dense_layers", m.moe.dense_layers, "first layers with a dense MLP", 0);
  m.moe.max_route_nodes = read_count(moe, "max_route_nodes", m.moe.max_route_nodes,
                                     "node-limited routing: nodes per token (0 = no limit)", 0);
  m.moe.skew = moe.get_double("skew", m.moe.skew,
                              "routing imbalance: expert e gets tokens ~ 1/(e+1)^skew");
  m.moe.balance = moe.get_double("balance", m.moe.balance,
                                 "auxiliary-loss-free balancing (DeepSeek-V3): fraction of the "
                                 "skew removed, 0..1");
  m.moe.permuted_placement =
      moe.get_choice("placement", {"index", "permuted"},
                     std::string(m.moe.permuted_placement ? "permuted" : "index"),
                     "index: popular experts on the lowest indices (EP rank 0 hot); permuted: a "
                     "seeded permutation per layer") == "permuted";
  // Read only where given, so a config without them resolves (and echoes
  // in summary.json) as it did before they existed.
  if (moe.has("sample")) {
    m.moe.sample = moe.get_bool("sample", m.moe.sample,
                                "draw each (MoE layer, micro-batch)'s routing under the seed "
                                "instead of its expected counts");
  }
  if (moe.has("capacity_factor")) {
    m.moe.capacity_factor = moe.get_double("capacity_factor", m.moe.capacity_factor,
                                           "expert capacity factor per source rank (0: "
                                           "dropless), 0..1000");
  }
  if (moe.has("pad_to_capacity")) {
    m.moe.pad_to_capacity = moe.get_bool("pad_to_capacity", m.moe.pad_to_capacity,
                                         "fill every expert to its capacity from each source "
                                         "(padding sent and computed); needs capacity_factor");
  }
  moe.finish();

  if (auto problem = workloads::models::check_model(m)) {
    if (problem.key.rfind("moe.", 0) == 0) moe.fail(problem.key.substr(4), problem.message);
    if (problem.key == "mla") mla.fail_here(problem.message);
    r.fail(problem.key, problem.message);
  }
  return m;
}

ModelSpec load_model_preset(const std::string& name, const ConfigReader& at,
                            const std::string& key) {
  if (auto text = preset_text("models", name)) {
    const std::string origin = "configs/models/" + name + ".yaml";
    return read_preset_document(sim::config::load_yaml_text(*text, origin), origin);
  }
  const auto names = preset_names("models");
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  at.fail(key, "unknown model preset '" + name + "'" + sim::config::did_you_mean(name, names) +
                   "; presets: " + list);
}

ModelSpec read_model(ConfigReader& workload) {
  const char* doc = "the model: a preset name or {preset: NAME, fields}";
  YAML::Node node = workload.raw("model", doc);
  if (!node.IsDefined() || node.IsNull()) {
    workload.fail_here("missing required key 'model' (a preset such as llama3-8b; see gcsim list "
                       "models)");
  }
  if (node.IsScalar()) {
    // Through get_string so that the resolved config records the choice.
    return load_model_preset(workload.get_string("model", std::nullopt, doc), workload, "model");
  }
  if (!node.IsMap()) workload.fail("model", "expected a preset name or a map of model fields");
  ConfigReader r = workload.child("model", doc, true);
  std::optional<ModelSpec> base;
  if (r.has("preset")) {
    const std::string name = r.get_string("preset", std::nullopt, "model preset (gcsim list models)");
    base = load_model_preset(name, r, "preset");
  }
  ModelSpec m = read_model_fields(r, base ? &*base : nullptr);
  r.get_string("description", std::string(), "one-line description");
  r.finish();
  return m;
}

}  // namespace gcsim::cli
