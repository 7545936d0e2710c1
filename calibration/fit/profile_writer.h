// A calibration profile as YAML (format: calibration/profiles/README.md):
// the fitted parameters cluster.calibration reads, the fit and held-out
// statistics, each measurement file's provenance, and every raw
// measurement with the set it was in, so `gcsim calibrate --validate`
// needs nothing but the profile.
#pragma once

#include <string>
#include <vector>
#include <yaml-cpp/yaml.h>

#include "calibration/fit/measurements.h"
#include "calibration/fit/profile_fit.h"
#include "calibration/fit/validation.h"

namespace gcsim::calibration {

// Rounds what a profile stores (efficiencies to 4 decimals, times to 1 ns)
// so that the spec validated is exactly the one written.
void round_for_profile(models::gpu::GpuSpec& spec);

struct ProfileContent {
  std::string command;                 // how it was made
  const FitResult* fit = nullptr;      // fit->spec is written
  const MeasurementSet* set = nullptr;
  const std::vector<Split>* splits = nullptr;
  std::vector<ClassError> heldout, fitted;
};

std::string profile_yaml(const ProfileContent& c);

// The measurements a profile keeps, with their sets (for --validate).
// Throws std::runtime_error when the profile has none.
MeasurementSet measurements_in_profile(const YAML::Node& profile, std::vector<Split>& splits);

}  // namespace gcsim::calibration
