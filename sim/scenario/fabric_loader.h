// Reads the interconnect part of a config: cluster.scale_up and
// cluster.scale_out onto a topologies::TopologySpec, and network.faults onto
// a list of timed link faults. Every value is checked here, with the key at
// fault named (radix too small for the GPU count, a custom cable to an
// unknown node, a fault on a link the fabric does not have), so that
// topologies::build_fabric() does not fail at run time.
#pragma once

#include <vector>

#include "sim/scenario/scenario.h"
#include "sim/config/config_reader.h"
#include "topologies/fault_schedule.h"
#include "topologies/topology_spec.h"

namespace gcsim::cli {

// `cluster_reader` is the `cluster` map; `cluster` already holds the GPU and
// the node counts. Also fills cluster.scale_up and cluster.scale_out, the
// figures the alpha-beta model reads (scale_out.latency: NIC to NIC
// through the top tier).
topologies::TopologySpec read_topology(sim::config::ConfigReader& cluster_reader,
                                       ClusterConfig& cluster);

// `network` is the `network` map. Fault links are checked against the
// fabric `topology` builds (built once here, only when faults are listed).
std::vector<topologies::FaultSpec> read_faults(sim::config::ConfigReader& network,
                                               const topologies::TopologySpec& topology);

}  // namespace gcsim::cli
