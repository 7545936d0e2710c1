// `gcsim list`: the built-in presets and registered models.
#pragma once

#include <iosfwd>
#include <string>

namespace gcsim::cli {
// what: "" (everything), gpus, models, topologies, workloads, networks.
int list_command(const std::string& what, std::ostream& out);
}  // namespace gcsim::cli
