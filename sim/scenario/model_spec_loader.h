// Maps YAML onto workloads::models::ModelSpec: a preset by name
// (configs/models/, compiled in), a preset with fields overridden beside it
// (`model: {preset: llama3-405b, seq_len: 8192}`), or every field inline.
#pragma once

#include <string>

#include "sim/config/config_reader.h"
#include "workloads/models/model_spec.h"

namespace gcsim::cli {

// Reads `workload.model`: a preset name, or a map with an optional `preset`
// and fields. Inconsistent specs fail naming the field.
workloads::models::ModelSpec read_model(sim::config::ConfigReader& workload);

// Loads a built-in model preset; throws ConfigError naming `key` of `at`
// if unknown.
workloads::models::ModelSpec load_model_preset(const std::string& name,
                                               const sim::config::ConfigReader& at,
                                               const std::string& key);

// Reads the fields of a spec from `r`, each defaulting to `base`'s value
// (required where base is null).
workloads::models::ModelSpec read_model_fields(sim::config::ConfigReader& r,
                                               const workloads::models::ModelSpec* base);

}  // namespace gcsim::cli
