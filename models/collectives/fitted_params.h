// Collective parameters fitted to real NCCL runs (calibration/fit/), per
// GPU preset. A fit replaces the protocol and latency figures of NCCL's
// defaults for the preset it was measured on; other presets keep them.
#pragma once

#include <string_view>

#include "models/collectives/collective_params.h"

namespace gcsim::models::collectives {

// Overwrites the fitted fields of `params` when a fit exists for
// `gpu_name`; returns whether one did.
bool apply_fitted_params(std::string_view gpu_name, CollectiveParams& params);

}  // namespace gcsim::models::collectives
