#include "topologies/rail_optimized.h"

#include <algorithm>

#include "topologies/clos_builder.h"

namespace gcsim::topologies {

using models::network::Fabric;
using models::network::NodeId;

int nodes_per_rail_leaf(const TopologySpec& spec) {
  return split_ports(spec.scale_out.radix, spec.scale_out.leaf_oversubscription).down;
}

ClosLayout rail_optimized_layout(const TopologySpec& spec) {
  const ScaleOutSpec& o = spec.scale_out;
  const int d = nodes_per_rail_leaf(spec);
  const int groups = (spec.nodes + d - 1) / d;
  LeafDemand demand;
  demand.ports = spec.total_gpus();
  demand.leaves = groups * spec.gpus_per_node;
  demand.nics_per_leaf = std::min(d, spec.nodes);
  demand.leaf_capacity = d;
  return size_clos(demand, o.radix, o.tiers, o.leaf_oversubscription, o.spine_oversubscription,
                   "the fabric");
}

void build_rail_optimized(Fabric& fabric, const TopologySpec& spec,
                          const std::vector<HostNodes>& hosts) {
  const ScaleOutSpec& o = spec.scale_out;
  const ClosLayout layout = rail_optimized_layout(spec);
  const int d = nodes_per_rail_leaf(spec);
  const int rails = spec.gpus_per_node;
  std::vector<std::vector<NodeId>> leaf_nics(static_cast<size_t>(layout.leaves));
  std::vector<int> leaf_rail(static_cast<size_t>(layout.leaves));
  for (int l = 0; l < layout.leaves; ++l) leaf_rail[static_cast<size_t>(l)] = l % rails;
  for (int h = 0; h < spec.nodes; ++h) {
    for (int i = 0; i < rails; ++i) {
      const int leaf = (h / d) * rails + i;
      leaf_nics[static_cast<size_t>(leaf)].push_back(hosts[static_cast<size_t>(h)].nics[static_cast<size_t>(i)]);
    }
  }
  ClosPlane plane{"", 0, o.nic_bandwidth, o.hop_latency, layout};
  build_clos(fabric, plane, leaf_nics, leaf_rail);
}

}  // namespace gcsim::topologies
