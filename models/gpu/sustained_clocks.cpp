#include "models/gpu/sustained_clocks.h"

namespace gcsim::models::gpu {

GpuSpec at_sustained_clocks(const GpuSpec& spec) {
  GpuSpec s = spec;
  const double f = spec.sustained_tensor_fraction;
  if (f == 1.0) return s;                    // bit for bit the rested GPU
  if (spec.at_sustained_clocks) return s;    // already derated: once only
  for (double& e : s.efficiency.tensor) e *= f;
  s.efficiency.attention *= f;
  s.efficiency.attention_backward *= f;
  for (auto* fam : {&s.efficiency.cudnn_attention, &s.efficiency.flash3_attention}) {
    fam->forward.efficiency *= f;
    fam->backward.efficiency *= f;
  }
  s.at_sustained_clocks = true;
  return s;
}

}  // namespace gcsim::models::gpu
