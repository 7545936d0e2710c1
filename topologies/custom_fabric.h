// topology: custom. The switches and cables are listed in the config; the
// servers (GPUs, their scale-up switch, one NIC per GPU named
// "node<h>/nic<i>") come from the node builder as for every topology. A cable
// joins two switches or a NIC and a switch; GPUs and in-node switches are
// not cabled by hand. Every NIC must reach every other through switches
// (routing between hosts goes NIC to NIC over switches only).
#pragma once

#include <vector>

#include "models/network/fabric.h"
#include "topologies/topology_spec.h"

namespace gcsim::topologies {

// Throws TopologyError naming the switch or cable at fault ("switches" or
// "links", its index and field), or "links" for a NIC left unreachable.
void build_custom(models::network::Fabric& fabric, const TopologySpec& spec);

}  // namespace gcsim::topologies
