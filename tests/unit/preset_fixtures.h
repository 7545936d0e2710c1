// The built-in GPU and model presets (configs/), loaded as `gcsim` loads
// them, for tests whose figures follow the shipped presets.
#pragma once

#include <memory>
#include <string>

#include "sim/scenario/gpu_spec_loader.h"
#include "sim/scenario/model_spec_loader.h"

namespace gcsim::test {

inline sim::config::ConfigReader nowhere_reader() {
  auto source = std::make_shared<sim::config::ConfigSource>();
  return sim::config::ConfigReader(YAML::Node(), "", source, nullptr);
}

inline models::gpu::GpuSpec gpu_preset(const std::string& name) {
  auto nowhere = nowhere_reader();
  return cli::load_gpu_preset(name, nowhere, "gpu");
}

// The GPU preset with its default calibration profile applied, as a run
// builds it (calibration/profiles/).
inline models::gpu::GpuSpec calibrated_gpu_preset(const std::string& name) {
  auto spec = gpu_preset(name);
  auto nowhere = nowhere_reader();
  cli::apply_calibration_profile(spec.calibration, spec, nowhere);
  return spec;
}

inline workloads::models::ModelSpec model_preset(const std::string& name) {
  auto nowhere = nowhere_reader();
  return cli::load_model_preset(name, nowhere, "model");
}

}  // namespace gcsim::test
