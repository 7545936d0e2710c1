#include "sim/scenario/presets.h"

namespace gcsim::cli {

std::vector<std::string> preset_names(const std::string& folder) {
  std::vector<std::string> names;
  const std::string prefix = folder + "/";
  for (const auto& [path, text] : presets::embedded_presets()) {
    if (path.rfind(prefix, 0) == 0 && path.size() > prefix.size() + 5) {
      names.push_back(path.substr(prefix.size(), path.size() - prefix.size() - 5));
    }
  }
  return names;  // std::map keeps them sorted
}

std::optional<std::string> preset_text(const std::string& folder, const std::string& name) {
  auto it = presets::embedded_presets().find(folder + "/" + name + ".yaml");
  if (it == presets::embedded_presets().end()) return std::nullopt;
  return it->second;
}

}  // namespace gcsim::cli
