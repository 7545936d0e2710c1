// topology: rail-optimized (NVIDIA DGX SuperPOD reference architecture): NIC
// i of every node goes to rail leaf i, so GPUs of the same index on
// different nodes are one switch apart and NCCL's rings and PXN stay on a
// rail; spines join the rails. A rail with more NICs than a leaf has
// downlinks (d = floor(k r/(r+1)) nodes) is split into rail groups: nodes
// g*d .. g*d+d-1 form group g, whose rail-i leaf is leaf g*gpus_per_node + i.
// Above the leaves, the 2- or 3-tier Clos of clos_sizing.h.
//
// 128 nodes x 8 GPUs, radix 64, non-blocking: 4 rail groups of 32 nodes,
// 32 leaves (leaf 9 = group 1, rail 1), 32 spines.
#pragma once

#include <vector>

#include "models/network/fabric.h"
#include "topologies/clos_sizing.h"
#include "topologies/hgx_node.h"
#include "topologies/topology_spec.h"

namespace gcsim::topologies {

// Nodes per rail leaf (the leaf's NIC-facing ports).
int nodes_per_rail_leaf(const TopologySpec& spec);
ClosLayout rail_optimized_layout(const TopologySpec& spec);
void build_rail_optimized(models::network::Fabric& fabric, const TopologySpec& spec,
                          const std::vector<HostNodes>& hosts);

}  // namespace gcsim::topologies
