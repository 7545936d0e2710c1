#include "models/collectives/fitted_params.h"

namespace gcsim::models::collectives {

bool apply_fitted_params(std::string_view, CollectiveParams&) {
  // No calibration fit yet: every preset runs on NCCL's defaults.
  return false;
}

}  // namespace gcsim::models::collectives
