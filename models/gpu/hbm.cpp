#include "models/gpu/hbm.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace gcsim::models::gpu {

sim::Bandwidth achieved_hbm_bandwidth(const GpuSpec& spec) {
  return spec.hbm_bandwidth.scaled(spec.efficiency.hbm);
}

sim::Bandwidth single_sm_hbm_reach(const GpuSpec& spec) {
  if (spec.sm_hbm_reach) return *spec.sm_hbm_reach;
  return sim::Bandwidth::bytes_per_s(spec.sm_bandwidth_headroom * achieved_hbm_bandwidth(spec).bytes_per_s() /
                                     spec.sm_count);
}

sim::Bandwidth hbm_bandwidth_per_sm(const GpuSpec& spec, int active_sms) {
  return hbm_bandwidth_per_sm(spec, active_sms, 1.0);
}

sim::Bandwidth hbm_bandwidth_per_sm(const GpuSpec& spec, int active_sms, double available_fraction) {
  if (!(available_fraction > 0.0 && available_fraction <= 1.0)) {
    throw std::invalid_argument("the HBM fraction left to kernels must be in (0, 1]");
  }
  if (active_sms < 1 || spec.sm_count < 1) {
    throw std::invalid_argument("HBM share needs at least one active SM and one SM on the GPU");
  }
  const double b = achieved_hbm_bandwidth(spec).bytes_per_s();
  const double even_split = available_fraction * b / active_sms;
  return sim::Bandwidth::bytes_per_s(std::min(single_sm_hbm_reach(spec).bytes_per_s(), even_split));
}

bool Hbm::allocate(sim::Bytes bytes) {
  if (bytes.count() < 0) throw std::invalid_argument("cannot allocate a negative byte count");
  if (bytes > spec_.hbm_capacity - used_) return false;
  used_ += bytes;
  peak_ = std::max(peak_, used_);
  return true;
}

void Hbm::free(sim::Bytes bytes) {
  if (bytes.count() < 0) throw std::invalid_argument("cannot free a negative byte count");
  if (bytes > used_) {
    throw std::invalid_argument("freeing " + std::to_string(bytes.count()) + " B but only " +
                                std::to_string(used_.count()) + " B are allocated");
  }
  used_ -= bytes;
}

}  // namespace gcsim::models::gpu
