// Presets compiled into the binary from configs/hardware and configs/models
// (scripts/embed_presets.cmake), so gcsim runs from any directory.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gcsim::presets {
// Keyed by path relative to configs/, e.g. "hardware/h100-sxm.yaml".
const std::map<std::string, std::string>& embedded_presets();
}  // namespace gcsim::presets

namespace gcsim::cli {

// Names of the presets in one folder ("hardware" → {"a100-sxm-80gb", ...}).
std::vector<std::string> preset_names(const std::string& folder);
// The YAML text of one preset, or nullopt.
std::optional<std::string> preset_text(const std::string& folder, const std::string& name);

}  // namespace gcsim::cli
