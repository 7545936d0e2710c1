// Reads a GPU's `power:` block (models/gpu/power_model.h) from a preset or
// an inline `cluster.gpu` map: every key defaults to `base`, and each must
// lie in its physical range (the error names file, line and key).
#pragma once

#include "models/gpu/power_model.h"
#include "sim/config/config_reader.h"

namespace gcsim::cli {

models::gpu::PowerParams read_power_params(sim::config::ConfigReader& gpu,
                                           const models::gpu::PowerParams& base);

}  // namespace gcsim::cli
