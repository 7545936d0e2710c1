// `gcsim export CONFIG.yaml -o DIR`: the workload a config generates, as a
// Chakra execution trace (workloads/chakra/trace_exporter.h) that ASTRA-sim
// and other Chakra tools read, plus a gcsim config that replays it:
//
//   DIR/STEM.<rank>.et            one file per GPU
//   DIR/STEM.comm_groups.json     pg_name -> ranks (ASTRA-sim's format)
//   DIR/STEM.chakra.yaml          the same cluster and network, workload
//                                 {kind: chakra, compute: model}
//
// STEM is the config file's name without extension. A training config with
// mirrored ranks is exported with every rank simulated
// (`workload.simulate: all`): a trace holds every rank's own work.
#pragma once

#include <iosfwd>
#include <string>

#include "sim/scenario/scenario.h"

namespace gcsim::cli {

// Returns the exit status; ConfigError propagates to the caller.
int export_command(const std::string& config_path, const LoadOptions& options,
                   const std::string& out_dir, std::ostream& out);

}  // namespace gcsim::cli
