// Reads and writes the attention-family keys of a GPU preset or calibration
// profile: `attention_default` (what workload.attention_kernel: auto runs)
// and `efficiency.attention_families` (the fused families' parameters,
// models/gpu/attention_family.h).
#pragma once

#include <optional>

#include "models/gpu/gpu_spec.h"
#include "sim/config/config_reader.h"

namespace gcsim::cli {

// `efficiency.attention_families: {cudnn: {...}, flash3: {...}}`, each
// {available, forward: {efficiency, wide_head, softmax_exposed,
// wave_overhead, ctas_per_sm, lone_cta_fraction, cta_latency_blocks,
// kernel_overhead, side_bandwidth}, backward: {...}, decode_bandwidth,
// decode_wave_overhead},
// and `flash2: {decode: {efficiency, bandwidth, wave_overhead,
// combine_overhead, combine_per_split}}`; absent keys keep `eff`'s values.
// Fractions outside their range are errors.
void read_attention_families(sim::config::ConfigReader& efficiency,
                             models::gpu::GpuEfficiency& eff);
sim::config::Json attention_families_json(const models::gpu::GpuEfficiency& eff);

// `attention_default: {prefill: cudnn, decode: flash2}` of a preset.
void read_attention_default(sim::config::ConfigReader& preset, models::gpu::GpuSpec& spec);
sim::config::Json attention_default_json(const models::gpu::GpuSpec& spec);

// `workload.attention_kernel`: auto (nullopt) or a family, checked against
// what the GPU runs (flash3 needs Hopper: a preset marks it unavailable).
// `flash` is read as flash2 (the name configs used before the families).
std::optional<models::gpu::AttentionFamily> read_attention_kernel(
    sim::config::ConfigReader& workload, const models::gpu::GpuSpec& gpu);

}  // namespace gcsim::cli
