// Recompute::norms_up_proj (DeepSeek-V3 sections 3.2.3 and 3.3) in the
// generated step: the backward re-runs each layer's norms, MLA's latent
// norms and up-projections with the rotary part, and under FP8 each MoE
// SwiGLU's output, once per layer and micro-batch; nothing is re-run
// without it.
#include <map>
#include <memory>
#include <string>

#include "catch.h"
#include "sim/scenario/model_spec_loader.h"
#include "workloads/training/training_generator.h"

using namespace gcsim;
using namespace gcsim::workloads::training;

namespace {

// How many ops of rank 0's program, by the name after the layer, start with
// "R " (a recomputed forward op).
std::map<std::string, int> recomputed(const TrainingConfig& c) {
  const TrainingWorkload w = generate_training(c, GeneratorOptions{});
  std::map<std::string, int> out;
  for (const auto& op : w.graph->program(0).ops) {
    const std::string name = w.graph->name(op.name);
    if (name.rfind("R ", 0) != 0) continue;
    const size_t layer = name.find(" L");
    const size_t after = name.find(' ', layer + 2);
    out[name.substr(after + 1)] += 1;
  }
  return out;
}

}  // namespace

TEST_CASE("DeepSeek-V3's recompute: what the backward runs again", "[training][generator]") {
  auto source = std::make_shared<sim::config::ConfigSource>();
  sim::config::ConfigReader nowhere(YAML::Node(), "", source, nullptr);
  TrainingConfig c;
  c.model = cli::load_model_preset("deepseek-v3", nowhere, "model");
  c.model.layers = 4;  // three dense layers and one MoE layer
  c.model.seq_len = 256;
  c.batch = {2, 1};    // two micro-batches
  c.precision = Precision::fp8;
  CHECK(recomputed(c).empty());
  c.recompute = Recompute::norms_up_proj;
  const auto r = recomputed(c);
  const int passes = 4 * 2;  // layers x micro-batches
  CHECK(r.at("norm1") == passes);
  CHECK(r.at("norm2") == passes);
  CHECK(r.at("q norm") == passes);
  CHECK(r.at("kv norm") == passes);
  CHECK(r.at("q up") == passes);
  CHECK(r.at("kv up") == passes);
  CHECK(r.at("rope") == passes);
  // Not the down-projections: their inputs (the norms' inputs) are kept.
  CHECK(r.count("q down") == 0);
  CHECK(r.count("kv down") == 0);
  // The MoE layer's SwiGLU outputs (its experts' rows as one group, and the
  // shared expert), each micro-batch; in BF16 the SwiGLU keeps its output.
  CHECK(r.at("expert act") == 2);
  CHECK(r.at("shared act") == 2);
  c.precision = Precision::bf16;
  for (const auto& [name, n] : recomputed(c)) CHECK(name.find(" act") == std::string::npos);
  // Without query compression Q is projected straight from norm1's output,
  // which the memory model no longer keeps either: that projection runs
  // again instead of the Q norm and up-projection.
  c.model.mla.q_lora_rank = 0;
  const auto direct = recomputed(c);
  CHECK(direct.at("q proj") == passes);
  CHECK(direct.count("q up") == 0);
  CHECK(direct.count("q norm") == 0);
}
