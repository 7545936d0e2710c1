#include "sim/scenario/attention_params_loader.h"

#include <string>
#include <vector>

#include "sim/config/unit_parse.h"

namespace gcsim::cli {

using models::gpu::AttentionFamily;
using models::gpu::FusedAttentionParams;
using models::gpu::FusedAttentionPass;
using models::gpu::GpuEfficiency;
using models::gpu::GpuSpec;
using sim::config::ConfigReader;
using sim::config::Json;

namespace {

constexpr AttentionFamily kFused[] = {AttentionFamily::cudnn, AttentionFamily::flash3};

double in_range(ConfigReader& r, const std::string& key, double fallback, double lo, bool lo_open,
                double hi, const char* doc) {
  const double v = r.get_double(key, fallback, doc);
  const bool ok = (lo_open ? v > lo : v >= lo) && v <= hi;
  if (!ok) {
    r.fail(key, "must lie in " + std::string(lo_open ? "(" : "[") + std::to_string(lo).substr(0, 3) +
                    ", " + std::to_string(hi).substr(0, 3) + "]");
  }
  return v;
}

// A duration in [0, hi] (the parser refuses negative ones).
sim::Duration at_most(ConfigReader& r, const std::string& key, sim::Duration fallback, sim::Duration hi,
                      const char* doc) {
  const sim::Duration d = r.get_duration(key, fallback, doc);
  if (d > hi) r.fail(key, "must lie in [0, " + sim::format_duration(hi) + "]");
  return d;
}

void read_pass(ConfigReader& r, FusedAttentionPass& p) {
  p.efficiency = in_range(r, "efficiency", p.efficiency, 0.0, true, 1.0,
                          "tensor-core mainloop fraction of peak (head dim <= 128)");
  p.wide_head = in_range(r, "wide_head", p.wide_head, 0.0, true, 1.0,
                         "multiplier on efficiency for head dims above 128");
  p.softmax_exposed = in_range(r, "softmax_exposed", p.softmax_exposed, 0.0, false, 1.0,
                               "fraction of the exponentials' SFU time not hidden by the GEMMs");
  p.wave_overhead = r.get_duration("wave_overhead", p.wave_overhead, "fixed cost per wave of CTAs");
  p.ctas_per_sm = r.get_int_in("ctas_per_sm", p.ctas_per_sm,
                               "CTAs of the kernel resident on one SM at a time", 1, 4);
  p.lone_cta_fraction = in_range(r, "lone_cta_fraction", p.lone_cta_fraction, 0.0, true, 1.0,
                                 "fraction of the SM's throughput one CTA reaches alone");
  p.cta_latency_blocks = in_range(r, "cta_latency_blocks", p.cta_latency_blocks, 0.0, false, 16.0,
                                  "a CTA's fixed latency, in key blocks of its lone time");
  p.kernel_overhead = r.get_duration("kernel_overhead", p.kernel_overhead,
                                     "once per kernel: the grid's ramp and drain");
  p.side_bandwidth = in_range(r, "side_bandwidth", p.side_bandwidth, 0.0, false, 1.0,
                              "fraction of the HBM peak the call's side kernels reach (0: none)");
  // A kernel's ramp and drain is a few microseconds of SM and memory latency.
  if (p.kernel_overhead > sim::us(int64_t{10})) r.fail("kernel_overhead", "must lie in [0, 10us]");
  if (p.wave_overhead < sim::Duration::zero()) r.fail("wave_overhead", "must not be negative");
  if (p.kernel_overhead < sim::Duration::zero()) r.fail("kernel_overhead", "must not be negative");
}

Json pass_json(const FusedAttentionPass& p) {
  return Json{{"efficiency", p.efficiency},
              {"wide_head", p.wide_head},
              {"softmax_exposed", p.softmax_exposed},
              {"wave_overhead", sim::format_duration(p.wave_overhead)},
              {"ctas_per_sm", p.ctas_per_sm},
              {"lone_cta_fraction", p.lone_cta_fraction},
              {"cta_latency_blocks", p.cta_latency_blocks},
              {"kernel_overhead", sim::format_duration(p.kernel_overhead)},
              {"side_bandwidth", p.side_bandwidth}};
}

std::vector<std::string> family_names() {
  std::vector<std::string> v;
  for (AttentionFamily f : models::gpu::kAllAttentionFamilies) {
    v.emplace_back(models::gpu::attention_family_name(f));
  }
  return v;
}

void read_flash2_decode(ConfigReader& r, models::gpu::Flash2DecodeParams& p) {
  p.efficiency = in_range(r, "efficiency", p.efficiency, 0.0, true, 1.0,
                          "MMA fraction of tensor peak on the padded query tile");
  p.bandwidth = in_range(r, "bandwidth", p.bandwidth, 0.0, true, 1.0,
                         "fraction of the HBM peak reading the KV cache");
  p.wave_overhead = r.get_duration("wave_overhead", p.wave_overhead, "fixed cost per wave of CTAs");
  p.combine_overhead = r.get_duration("combine_overhead", p.combine_overhead,
                                      "split-KV combine kernel: fixed cost");
  p.combine_per_split = r.get_duration("combine_per_split", p.combine_per_split,
                                       "split-KV combine kernel: cost per split");
}

}  // namespace

void read_attention_families(ConfigReader& efficiency, GpuEfficiency& eff) {
  ConfigReader all = efficiency.child(
      "attention_families", "fused attention kernels (cudnn, flash3): per-pass efficiencies");
  for (AttentionFamily f : kFused) {
    FusedAttentionParams& p = eff.fused_attention(f);
    ConfigReader r = all.child(std::string(models::gpu::attention_family_name(f)),
                               "parameters of this attention kernel family");
    p.available = r.get_bool("available", p.available, "whether this GPU runs the family");
    ConfigReader fwd = r.child("forward", "forward pass");
    read_pass(fwd, p.forward);
    fwd.finish();
    ConfigReader bwd = r.child("backward", "backward pass");
    read_pass(bwd, p.backward);
    bwd.finish();
    p.decode_bandwidth = in_range(r, "decode_bandwidth", p.decode_bandwidth, 0.0, true, 1.0,
                                  "decode: fraction of the HBM peak reading the KV cache");
    p.decode_wave_overhead = r.get_duration("decode_wave_overhead", p.decode_wave_overhead,
                                            "decode: fixed cost per wave of CTAs");
    p.decode_split_overhead =
        r.get_duration("decode_split_overhead", p.decode_split_overhead,
                       "decode: cost of combining split-KV partial results (a second kernel)");
    p.decode_min_split_keys = r.get_int_in("decode_min_split_keys", p.decode_min_split_keys,
                                           "decode: keys per sequence below which the keys are not split "
                                           "(0: the flash-decoding rule alone)",
                                           0, int64_t{1} << 24);
    p.decode_kernel_overhead = at_most(r, "decode_kernel_overhead", p.decode_kernel_overhead, FusedAttentionParams::kMaxDecodeKernelOverhead,
                                       "decode: fixed cost of each decode kernel");
    p.decode_block_latency = at_most(r, "decode_block_latency", p.decode_block_latency, FusedAttentionParams::kMaxDecodeStepLatency,
                                     "decode: a CTA's latency per 128-key block it walks");
    p.decode_split_per_doubling =
        at_most(r, "decode_split_per_doubling", p.decode_split_per_doubling, FusedAttentionParams::kMaxDecodeStepLatency,
                "decode: the combining kernel's growth each time the pieces double");
    r.finish();
  }
  ConfigReader flash2 = all.child(
      "flash2", "FlashAttention-2 (its prefill's efficiency and wave overhead: efficiency.attention)");
  for (bool backward : {false, true}) {
    models::gpu::Flash2PrefillPass& p =
        backward ? eff.flash2_prefill.backward : eff.flash2_prefill.forward;
    ConfigReader r = flash2.child(backward ? "backward" : "forward",
                                  backward ? "prefill backward pass" : "prefill forward pass");
    p.wide_head = in_range(r, "wide_head", p.wide_head, 0.0, true, 1.0,
                           "multiplier on efficiency for head dims above 128");
    p.softmax_exposed = in_range(r, "softmax_exposed", p.softmax_exposed, 0.0, false, 1.0,
                                 "fraction of the exponentials' SFU time not hidden by the MMAs");
    r.finish();
  }
  ConfigReader decode = flash2.child("decode", "decode kernels (models/gpu/attention_flash2_decode.h)");
  read_flash2_decode(decode, eff.flash2_decode);
  decode.finish();
  flash2.finish();
  all.finish();
}

Json attention_families_json(const GpuEfficiency& eff) {
  Json j = Json::object();
  for (AttentionFamily f : kFused) {
    const FusedAttentionParams& p = eff.fused_attention(f);
    j[std::string(models::gpu::attention_family_name(f))] =
        Json{{"available", p.available},
             {"forward", pass_json(p.forward)},
             {"backward", pass_json(p.backward)},
             {"decode_bandwidth", p.decode_bandwidth},
             {"decode_wave_overhead", sim::format_duration(p.decode_wave_overhead)},
             {"decode_split_overhead", sim::format_duration(p.decode_split_overhead)},
             {"decode_min_split_keys", p.decode_min_split_keys},
             {"decode_kernel_overhead", sim::format_duration(p.decode_kernel_overhead)},
             {"decode_block_latency", sim::format_duration(p.decode_block_latency)},
             {"decode_split_per_doubling", sim::format_duration(p.decode_split_per_doubling)}};
  }
  const models::gpu::Flash2DecodeParams& f = eff.flash2_decode;
  auto prefill = [](const models::gpu::Flash2PrefillPass& p) {
    return Json{{"wide_head", p.wide_head}, {"softmax_exposed", p.softmax_exposed}};
  };
  j["flash2"] = Json{{"forward", prefill(eff.flash2_prefill.forward)},
                     {"backward", prefill(eff.flash2_prefill.backward)},
                     {"decode",
                      Json{{"efficiency", f.efficiency},
                           {"bandwidth", f.bandwidth},
                           {"wave_overhead", sim::format_duration(f.wave_overhead)},
                           {"combine_overhead", sim::format_duration(f.combine_overhead)},
                           {"combine_per_split", sim::format_duration(f.combine_per_split)}}}};
  return j;
}

void read_attention_default(ConfigReader& preset, GpuSpec& spec) {
  ConfigReader r = preset.child(
      "attention_default", "what workload.attention_kernel: auto runs (PyTorch SDPA's default)");
  const auto names = family_names();
  auto read = [&](const char* key, AttentionFamily fallback, const char* doc) {
    const std::string v =
        r.get_choice(key, names, std::string(models::gpu::attention_family_name(fallback)), doc);
    return *models::gpu::parse_attention_family(v);
  };
  spec.default_attention = read("prefill", spec.default_attention, "prefill and training");
  spec.default_decode_attention =
      read("decode", spec.default_decode_attention, "decode (q_len <= 16)");
  r.finish();
}

Json attention_default_json(const GpuSpec& spec) {
  return Json{
      {"prefill", std::string(models::gpu::attention_family_name(spec.default_attention))},
      {"decode", std::string(models::gpu::attention_family_name(spec.default_decode_attention))}};
}

std::optional<AttentionFamily> read_attention_kernel(ConfigReader& workload, const GpuSpec& gpu) {
  std::vector<std::string> choices{"auto"};
  for (const auto& n : family_names()) choices.push_back(n);
  choices.emplace_back("flash");
  const std::string v = workload.get_choice(
      "attention_kernel", choices, std::string("auto"),
      "auto (PyTorch SDPA's default on this GPU: cudnn on Hopper, flash2 on Ampere) | flash2 | "
      "flash3 | cudnn | unfused (flash = flash2)");
  if (v == "auto") return std::nullopt;
  const AttentionFamily f =
      v == "flash" ? AttentionFamily::flash2 : *models::gpu::parse_attention_family(v);
  if ((f == AttentionFamily::cudnn || f == AttentionFamily::flash3) &&
      !gpu.efficiency.fused_attention(f).available) {
    workload.fail("attention_kernel", v + " does not run on " + gpu.name +
                                          (f == AttentionFamily::flash3
                                               ? " (FlashAttention-3 needs a Hopper GPU)"
                                               : ""));
  }
  return f;
}

}  // namespace gcsim::cli
