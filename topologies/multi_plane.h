// topology: multi-plane. `planes` independent fat-trees (fat_tree.h
// placement, names prefixed "p<plane>/"), no switch shared between planes.
// Two ways to reach them (PlaneAttachment):
// - port-per-plane (Alibaba HPN, SIGCOMM'24 dual-plane): every NIC has one
//   port in each plane at nic_bandwidth / planes; each plane holds every NIC.
// - nic-per-plane (DeepSeek-V3 report, multi-plane fat-tree): NIC i of a
//   node is in plane i mod planes at full bandwidth; a plane holds
//   nodes x (its share of the node's NICs) ports. Traffic between planes
//   crosses NVLink to a GPU of the right plane first (not a routed path).
#pragma once

#include <vector>

#include "models/network/fabric.h"
#include "topologies/clos_sizing.h"
#include "topologies/hgx_node.h"
#include "topologies/topology_spec.h"

namespace gcsim::topologies {

// One layout per plane; throws TopologyError when the radix is too small or
// a plane would hold no NIC.
std::vector<ClosLayout> multi_plane_layouts(const TopologySpec& spec);
void build_multi_plane(models::network::Fabric& fabric, const TopologySpec& spec,
                       const std::vector<HostNodes>& hosts);

}  // namespace gcsim::topologies
