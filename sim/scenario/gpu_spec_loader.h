// Maps YAML onto models::gpu::GpuSpec: a preset by name, a preset with
// fields overridden beside it, a preset file by path, or a calibration
// profile's efficiencies on top.
#pragma once

#include <string>

#include "models/gpu/gpu_spec.h"
#include "sim/config/config_reader.h"

namespace gcsim::cli {

// Reads `cluster.gpu`: a preset name ("h100-sxm"), a path to a preset file,
// or a map {preset: NAME, <fields to override>} / a full inline spec.
// Then applies the preset's default calibration profile unless the cluster
// names one (cluster.calibration: PATH | none, applied by the scenario).
models::gpu::GpuSpec read_gpu(sim::config::ConfigReader& cluster);
// The same without any calibration profile.
models::gpu::GpuSpec read_gpu_uncalibrated(sim::config::ConfigReader& cluster);

// Loads a built-in preset; throws ConfigError naming `key` if unknown.
models::gpu::GpuSpec load_gpu_preset(const std::string& name, const sim::config::ConfigReader& at,
                                     const std::string& key);

// Reads a spec's fields from `r`, each defaulting to `base`'s value (every
// field required when base is null).
models::gpu::GpuSpec read_gpu_fields(sim::config::ConfigReader& r,
                                     const models::gpu::GpuSpec* base);

// Reads the `efficiency:` block (presets and calibration profiles share it).
void read_efficiency(sim::config::ConfigReader& r, models::gpu::GpuEfficiency& eff);

// The spec as a run used it (preset, overrides and profile applied), in the
// preset's own keys and units: summary.json's `hardware`.
sim::config::Json gpu_spec_json(const models::gpu::GpuSpec& spec);

// Applies a calibration profile (cluster.calibration) to `spec`: a built-in
// profile's name (calibration/profiles/NAME.yaml, embedded), a file path, or
// `none` (no change).
void apply_calibration_profile(const std::string& path, models::gpu::GpuSpec& spec,
                               const sim::config::ConfigReader& at);

}  // namespace gcsim::cli
