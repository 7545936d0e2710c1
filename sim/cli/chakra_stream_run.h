// A Chakra trace replayed streamed (sim/engine/streaming_replayer.h) on a
// scenario's cluster and network: the same models `gcsim run` builds, with
// the trace read node by node instead of loaded whole, so a trace of any
// length runs in bounded memory. The whole-trace path (the `chakra`
// workload kind) keeps a record per op for summary.json; this path keeps
// counts and the makespan only, and streams spans to a trace file.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "models/cluster/cluster_model.h"
#include "models/network/network_model.h"
#include "sim/scenario/scenario.h"
#include "sim/engine/streaming_replayer.h"
#include "workloads/chakra/node_converter.h"

namespace gcsim::cli {

struct ChakraStreamRun {
  sim::StreamOutcome outcome;
  uint64_t events = 0;
  double wall_time_s = 0;
  workloads::chakra::ImportStats stats;
  size_t kernel_shapes = 0;               // distinct kernels costed
  std::vector<sim::Bytes> memory_peak;    // per rank
  std::optional<models::network::NetworkStats> network;
};

// Replays PREFIX.<rank>.et on `s`'s cluster and network with `window` ops
// per rank; spans go to `trace_path` (Perfetto) unless it is empty.
// Throws TraceError when the files cannot be opened; problems found while
// replaying end the replay and are in outcome.problem.
ChakraStreamRun run_chakra_streamed(const Scenario& s, const std::string& prefix,
                                    const workloads::chakra::ImportOptions& options, size_t window,
                                    const std::string& trace_path = "");

}  // namespace gcsim::cli
