// `gcsim sweep STUDY.yaml [-o DIR] [-j N] [-q]`: a base config and axes of
// overrides (any config keys), crossed, plus optional named cases; each
// point runs as its own `gcsim run` process, N at a time. Points whose
// config is impossible (exit status 2) are skipped with the reason. Writes
// DIR/results.csv, DIR/results.md (a table per workload kind, ranked as
// sweep_tables.h says) and each point's outputs under DIR/points/. On
// stderr: the number of points before anything runs, the time the rest
// will take once the first point (run alone) is timed, and a progress line
// per point (not with -q).
//
// STUDY.yaml:
//   name: gpt3-175b-1024          # optional title
//   base: ../examples/x.yaml      # path (relative to the study) or an inline config map
//   axes:                         # crossed in the order written
//     workload.parallelism.tp: [1, 2, 4, 8]
//   cases:                        # optional; each crossed with the axes
//     - {name: ZeRO-1, set: {workload.optimizer.zero_stage: 1}}
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace gcsim::cli {

// `args` are the words after `sweep`. Returns the exit status; a bad study
// file throws ConfigError.
int sweep_command(const std::vector<std::string>& args, std::ostream& out);

}  // namespace gcsim::cli
