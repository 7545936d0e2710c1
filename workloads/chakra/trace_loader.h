// Loads a whole Chakra trace (PREFIX.0.et .. PREFIX.<n-1>.et) into the IR,
// for `gcsim run` with `workload: {kind: chakra}`: every node becomes an op
// of its rank's program (file order is program order, so a stream runs its
// nodes in file order), its ctrl and data dependencies become deps, its
// collectives meet on one communicator per group and its sends and
// receives on peer slots. Memory grows with the trace (about 100 bytes per
// node); stream_source.h replays a trace of any length in bounded memory.
//
// Everything a replay would trip over is refused here with the file, rank
// and node: a missing rank file, a truncated message, a duplicate node id,
// a dependency on a node the file lacks, a dependency cycle (named), a node
// that waits for a later node of its own stream, an unknown pg_name,
// members of a group issuing different collectives, and a SEND without its
// RECV (matched on src, dst and comm_tag, in order per pair as NCCL does).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "workloads/chakra/node_converter.h"
#include "sim/engine/ir.h"

namespace gcsim::workloads::chakra {

struct LoadedTrace {
  std::unique_ptr<WorkloadGraph> graph;
  ImportStats stats;
  std::string version;  // GlobalMetadata.version of rank 0
};

// Throws TraceError (file, rank, node and problem) or std::invalid_argument
// (a bad comm group).
LoadedTrace load_trace(const std::string& prefix, const ImportOptions& options);

// The stream names gcsim writes into GlobalMetadata (attribute
// "gcsim_streams") so that an import numbers streams as the export did.
inline constexpr const char* kStreamsAttr = "gcsim_streams";

// Checks that PREFIX.0.et .. PREFIX.<n-1>.et exist and PREFIX.<n>.et does
// not; throws TraceError naming the first missing (or extra) file.
void check_rank_files(const std::string& prefix, int num_ranks);

}  // namespace gcsim::workloads::chakra
