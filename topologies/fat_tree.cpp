#include "topologies/fat_tree.h"

#include <algorithm>

#include "topologies/clos_builder.h"

namespace gcsim::topologies {

using models::network::Fabric;
using models::network::NodeId;

TorPlacement tor_placement(int ports, int ports_per_node, int radix,
                           double leaf_oversubscription) {
  const int down = split_ports(radix, leaf_oversubscription).down;
  TorPlacement p;
  p.per_leaf = ports_per_node <= down ? down / ports_per_node * ports_per_node : down;
  p.demand.ports = ports;
  p.demand.leaves = (ports + p.per_leaf - 1) / p.per_leaf;
  p.demand.nics_per_leaf = std::min(p.per_leaf, ports);
  p.demand.leaf_capacity = p.per_leaf;
  return p;
}

std::vector<std::vector<NodeId>> fill_leaves(const std::vector<NodeId>& ports, int per_leaf) {
  std::vector<std::vector<NodeId>> leaves;
  for (size_t i = 0; i < ports.size(); ++i) {
    if (i % static_cast<size_t>(per_leaf) == 0) leaves.emplace_back();
    leaves.back().push_back(ports[i]);
  }
  return leaves;
}

ClosLayout fat_tree_layout(const TopologySpec& spec) {
  const ScaleOutSpec& o = spec.scale_out;
  const TorPlacement p =
      tor_placement(spec.total_gpus(), spec.gpus_per_node, o.radix, o.leaf_oversubscription);
  return size_clos(p.demand, o.radix, o.tiers, o.leaf_oversubscription, o.spine_oversubscription,
                   "the fabric");
}

void build_fat_tree(Fabric& fabric, const TopologySpec& spec, const std::vector<HostNodes>& hosts) {
  const ScaleOutSpec& o = spec.scale_out;
  const TorPlacement p =
      tor_placement(spec.total_gpus(), spec.gpus_per_node, o.radix, o.leaf_oversubscription);
  std::vector<NodeId> nics;
  for (const HostNodes& h : hosts) nics.insert(nics.end(), h.nics.begin(), h.nics.end());
  const auto leaf_nics = fill_leaves(nics, p.per_leaf);
  ClosPlane plane{"", 0, o.nic_bandwidth, o.hop_latency, fat_tree_layout(spec)};
  build_clos(fabric, plane, leaf_nics, std::vector<int>(leaf_nics.size(), -1));
}

}  // namespace gcsim::topologies
