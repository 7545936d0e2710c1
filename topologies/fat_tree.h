// topology: fat-tree. NICs fill leaves in rank order, whole nodes per leaf
// where a node's NICs fit (a top-of-rack leaf: the d = floor(k r/(r+1))
// NIC-facing ports hold floor(d / gpus_per_node) nodes), a node split over
// leaves only when it has more NICs than a leaf has downlinks. Above the
// leaves, the 2- or 3-tier Clos of clos_sizing.h.
//
// 128 nodes x 8 GPUs, radix 64, 2 tiers, non-blocking: 1,024 NICs, 32 leaves
// of 4 nodes (32 down, 32 up), 32 spines with 32 ports in use. At 3:1 the
// leaves take 48 NICs (6 nodes) and 16 uplinks: 22 leaves, 16 spines.
#pragma once

#include <string>
#include <vector>

#include "models/network/fabric.h"
#include "topologies/clos_sizing.h"
#include "topologies/hgx_node.h"
#include "topologies/topology_spec.h"

namespace gcsim::topologies {

// Top-of-rack placement of `ports` NIC ports, `ports_per_node` consecutive
// ones per node: NIC ports per leaf, and what the leaves ask of the Clos.
struct TorPlacement {
  int per_leaf = 0;
  LeafDemand demand;
};
TorPlacement tor_placement(int ports, int ports_per_node, int radix, double leaf_oversubscription);

// Cuts `ports` into leaves of `per_leaf`.
std::vector<std::vector<models::network::NodeId>> fill_leaves(
    const std::vector<models::network::NodeId>& ports, int per_leaf);

// Sizes the fabric; throws TopologyError when the radix is too small.
ClosLayout fat_tree_layout(const TopologySpec& spec);
void build_fat_tree(models::network::Fabric& fabric, const TopologySpec& spec,
                    const std::vector<HostNodes>& hosts);

}  // namespace gcsim::topologies
