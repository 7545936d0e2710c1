// Writes a workload graph as a Chakra trace: one file per rank,
// DIR/STEM.<rank>.et, and the communicator groups its collectives use as
// DIR/STEM.comm_groups.json (ASTRA-sim's --comm-group-configuration
// format, {"1": [0, 1, 2, 3], ...}; pg_name "0" stays ASTRA-sim's default
// group of every rank).
//
// Each op becomes one node whose id is its index in the rank's program and
// whose data_deps are its deps, in program order, so stream order survives:
// - a kernel: COMP_NODE with num_ops (flops), tensor_size (HBM bytes),
//   duration_micros (its time alone on the GPU, rounded to the
//   microsecond) and the exact shape as gcsim_* attributes;
// - a delay: COMP_NODE with duration_micros and gcsim_duration_ps;
// - a collective: COMM_COLL_NODE with comm_type, comm_size, pg_name and,
//   for broadcast and reduce, root (a global rank);
// - a send or receive: COMM_SEND_NODE / COMM_RECV_NODE with comm_src,
//   comm_dst, comm_size and comm_tag (the message's number on its (src,
//   dst) pair, so that tags and order agree);
// - an allocation or free: METADATA_NODE with gcsim_memory_delta (bytes).
// Every node carries its stream as `stream`; GlobalMetadata lists the
// streams in gcsim's order (gcsim_streams).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "models/gpu/gpu_spec.h"
#include "sim/engine/ir.h"

namespace gcsim::workloads::chakra {

struct ExportResult {
  std::vector<std::string> files;                      // one per rank, in rank order
  std::string comm_groups_file;                        // DIR/STEM.comm_groups.json
  std::map<std::string, std::vector<int>> comm_groups;  // pg_name -> ranks
  uint64_t nodes = 0;
};

// `gpu` costs the kernels for num_ops, tensor_size and duration_micros.
// Throws TraceError when a file cannot be written.
ExportResult export_trace(const WorkloadGraph& graph, const gcsim::models::gpu::GpuSpec& gpu,
                          const std::string& dir, const std::string& stem);

// The Chakra schema version written into GlobalMetadata.
inline constexpr const char* kSchemaVersion = "0.0.4";

}  // namespace gcsim::workloads::chakra
