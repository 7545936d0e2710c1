// Model presets and the closed forms over them: parameter counts against the
// published totals (the released checkpoints' parameter counts) and
// Narayanan et al.'s GPT formulas (SC'21, eqs. for P and F).
#include <memory>

#include "catch.h"
#include "sim/scenario/model_spec_loader.h"
#include "sim/scenario/presets.h"
#include "workloads/models/model_formulas.h"

using namespace gcsim;
using workloads::models::count_params;
using workloads::models::ModelSpec;

namespace {

ModelSpec preset(const std::string& name) {
  auto source = std::make_shared<sim::config::ConfigSource>();
  sim::config::ConfigReader nowhere(YAML::Node(), "", source, nullptr);
  return cli::load_model_preset(name, nowhere, "model");
}

}  // namespace

TEST_CASE("every model preset loads and names its source", "[training][models]") {
  const auto names = cli::preset_names("models");
  for (const char* want : {"gpt3-175b", "llama3-8b", "llama3-70b", "llama3-405b", "mixtral-8x7b",
                           "deepseek-v3", "qwen2.5-72b"}) {
    CHECK(std::find(names.begin(), names.end(), want) != names.end());
  }
  for (const auto& n : names) {
    INFO(n);
    const ModelSpec m = preset(n);
    CHECK(m.name == n);
    CHECK(!m.source.empty());
    CHECK(!workloads::models::check_model(m));
  }
}

TEST_CASE("dense presets have their checkpoints' exact parameter counts", "[training][models]") {
  // Counts of the released Hugging Face checkpoints (config.json shapes):
  // Llama 3 8B 8,030,261,248; 70B 70,553,706,496; 405B 405,853,388,800;
  // Qwen2.5 72B 72,706,203,648.
  CHECK(count_params(preset("llama3-8b")).total == 8'030'261'248.0);
  CHECK(count_params(preset("llama3-70b")).total == 70'553'706'496.0);
  CHECK(count_params(preset("llama3-405b")).total == 405'853'388'800.0);
  CHECK(count_params(preset("qwen2.5-72b")).total == 72'706'203'648.0);
}

TEST_CASE("MoE presets: total and active parameters", "[training][models]") {
  // Mixtral 8x7B: 46,702,792,704 stored, 12.9e9 active (Jiang et al. 2024):
  // per layer 41.9M attention + 8 experts of 3 x 4096 x 14336, 2 active.
  const auto mixtral = count_params(preset("mixtral-8x7b"));
  CHECK(mixtral.total == 46'702'792'704.0);
  CHECK(mixtral.active == 12'879'925'248.0);
  // DeepSeek-V3: 671e9 total, 37e9 activated (technical report, abstract),
  // without the 14e9 multi-token-prediction module.
  const auto ds = count_params(preset("deepseek-v3"));
  CHECK(ds.total == Approx(671e9).epsilon(0.002));
  CHECK(ds.active == Approx(37e9).epsilon(0.03));
  // One MLA layer: q 7168x1536 + 1536 + 1536x(128x192); kv 7168x576 + 512 +
  // 512x(128x256); out 128x128x7168 = 187,107,328.
  CHECK(ds.moe_layer.attention == 187'107'328.0);
  // One routed expert: 3 x 7168 x 2048.
  CHECK(ds.moe_layer.per_expert == 3.0 * 7168 * 2048);
}

TEST_CASE("GPT-3 175B matches Narayanan et al.'s parameter formula", "[training][models]") {
  // P = 12 l h^2 (1 + 13/(12h) + (V+s)/(12 l h)) = 174.6e9 for l = 96,
  // h = 12288, V = 51200, s = 2048. The formula leaves out the final
  // LayerNorm (2h = 24,576 parameters), which the count includes.
  const ModelSpec m = preset("gpt3-175b");
  const double p = workloads::models::narayanan_params(96, 12288, 51200, 2048);
  CHECK(p == Approx(174.6e9).epsilon(0.001));
  CHECK(count_params(m).total == Approx(p + 2.0 * 12288).epsilon(1e-12));
}

TEST_CASE("model FLOPs: Narayanan's F without recompute; 6 P per token", "[training][models]") {
  const ModelSpec m = preset("gpt3-175b");
  // One step of Korthikanti et al.'s 175B run: B = 64, s = 2048.
  const double tokens = 64.0 * 2048;
  const double f = workloads::models::narayanan_flops(64, 2048, 96, 12288, 51200, false);
  CHECK(workloads::models::model_flops(m, tokens) == Approx(f).epsilon(1e-12));
  // 72 B s l h^2 (1 + s/6h + V/12lh) = 1.410e17 FLOPs.
  CHECK(f == Approx(1.410e17).epsilon(0.001));
  // With full recompute the layers' forward runs twice: factor 96, head 6BshV.
  const double full = workloads::models::narayanan_flops(64, 2048, 96, 12288, 51200, true);
  const auto per_token = workloads::models::forward_flops_per_token(m);
  CHECK(full == Approx(tokens * (4.0 * (per_token.layers + per_token.attention) +
                                 3.0 * per_token.logits))
                    .epsilon(1e-12));
  // Llama 3 8B: forward matmuls are 2 x (parameters - embedding - norms).
  const ModelSpec llama = preset("llama3-8b");
  const auto c = count_params(llama);
  const double norms = 32 * c.dense_layer.norms + c.final_norm;
  CHECK(workloads::models::forward_flops_per_token(llama).layers +
            workloads::models::forward_flops_per_token(llama).logits ==
        Approx(2.0 * (c.total - c.embedding - norms)).epsilon(1e-12));
}

TEST_CASE("inconsistent model specs name the field", "[training][models]") {
  ModelSpec m = preset("llama3-8b");
  m.kv_heads = 5;
  CHECK(workloads::models::check_model(m).key == "kv_heads");
  m = preset("mixtral-8x7b");
  m.moe.top_k = 9;
  CHECK(workloads::models::check_model(m).key == "moe.top_k");
  m = preset("deepseek-v3");
  m.moe.dense_layers = 61;
  CHECK(workloads::models::check_model(m).key == "moe.dense_layers");
}

TEST_CASE("up-projection parameters: what DeepSeek-V3's recompute runs again", "[training][formulas]") {
  using workloads::models::up_projection_params;
  // DeepSeek-V3 (config.json): Q up 1536 x (128 heads x (128 + 64)) =
  // 37,748,736; KV up 512 x 128 x (128 + 128) = 16,777,216.
  ModelSpec ds = preset("deepseek-v3");
  CHECK(up_projection_params(ds) == 37'748'736.0 + 16'777'216.0);
  // Without query compression Q comes from the hidden state: 7168 x 24576.
  ds.mla.q_lora_rank = 0;
  CHECK(up_projection_params(ds) == 7168.0 * 24576.0 + 16'777'216.0);
  // Llama 3 8B: QKV 4096 x (4096 + 2 x 8 x 128) = 25,165,824.
  CHECK(up_projection_params(preset("llama3-8b")) == 25'165'824.0);
}
