// The entry point from a TopologySpec to a Fabric: servers first (GPUs in
// rank order, their scale-up switch, their NICs), then the scale-out network
// of the chosen topology, then a reachability check on Boost.Graph.
#pragma once

#include "models/network/fabric.h"
#include "topologies/topology_spec.h"

namespace gcsim::topologies {

// Builds the fabric. Throws TopologyError (topology_error.h) for a spec it
// cannot build: a radix too small for the GPU count, a custom cable to an
// unknown node, a custom fabric that leaves a GPU unreachable. The config
// loader calls check_topology first, so at run time this does not throw.
models::network::Fabric build_fabric(const TopologySpec& spec);

// Throws what build_fabric would, for Clos topologies from the sizing
// arithmetic alone (no fabric is built); custom fabrics are built and
// discarded, which for hand-listed cables is cheap.
void check_topology(const TopologySpec& spec);

// Node and cable counts of a built fabric, by kind and tier (tests, reports).
struct FabricCensus {
  int gpus = 0;
  int nics = 0;
  int scale_up_switches = 0;  // NVSwitch or PCIe, one per server
  int leaves = 0;             // network switches of tier 1
  int spines = 0;             // tier 2
  int cores = 0;              // tier 3
  int network_cables = 0;     // NIC-switch and switch-switch cables
  int cables = 0;             // all, links / 2
};
FabricCensus census(const models::network::Fabric& fabric);

}  // namespace gcsim::topologies
