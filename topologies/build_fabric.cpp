#include "topologies/build_fabric.h"

#include <stdexcept>

#include "topologies/custom_fabric.h"
#include "topologies/fabric_graph.h"
#include "topologies/fat_tree.h"
#include "topologies/hgx_node.h"
#include "topologies/multi_plane.h"
#include "topologies/rail_optimized.h"
#include "topologies/topology_error.h"

namespace gcsim::topologies {

using models::network::Fabric;
using models::network::LinkKind;
using models::network::LinkId;
using models::network::NodeId;
using models::network::NodeKind;

Fabric build_fabric(const TopologySpec& spec) {
  Fabric fabric;
  const ScaleOutTopology t = spec.scale_out.topology;
  const auto hosts = build_hosts(fabric, spec, t != ScaleOutTopology::none);
  switch (t) {
    case ScaleOutTopology::none: break;
    case ScaleOutTopology::fat_tree: build_fat_tree(fabric, spec, hosts); break;
    case ScaleOutTopology::rail_optimized: build_rail_optimized(fabric, spec, hosts); break;
    case ScaleOutTopology::multi_plane: build_multi_plane(fabric, spec, hosts); break;
    case ScaleOutTopology::custom: build_custom(fabric, spec); break;
  }
  if (auto why = unreachable_gpu(fabric)) {
    if (t == ScaleOutTopology::custom) throw TopologyError("links", *why);
    // Built-in topologies connect every GPU by construction, except a
    // multi-node cluster without a network, which the loader refuses.
    if (t == ScaleOutTopology::none) throw TopologyError("topology", *why);
    throw std::logic_error("topology builder left a GPU unreachable: " + *why);
  }
  return fabric;
}

void check_topology(const TopologySpec& spec) {
  switch (spec.scale_out.topology) {
    case ScaleOutTopology::none: break;
    case ScaleOutTopology::fat_tree: fat_tree_layout(spec); break;
    case ScaleOutTopology::rail_optimized: rail_optimized_layout(spec); break;
    case ScaleOutTopology::multi_plane: multi_plane_layouts(spec); break;
    case ScaleOutTopology::custom: build_fabric(spec); break;
  }
}

FabricCensus census(const Fabric& fabric) {
  FabricCensus c;
  for (size_t n = 0; n < fabric.num_nodes(); ++n) {
    const auto& node = fabric.node(static_cast<NodeId>(n));
    switch (node.kind) {
      case NodeKind::gpu: ++c.gpus; break;
      case NodeKind::nic: ++c.nics; break;
      case NodeKind::nvswitch:
      case NodeKind::pcie_switch: ++c.scale_up_switches; break;
      case NodeKind::network_switch:
        c.leaves += node.tier == 1;
        c.spines += node.tier == 2;
        c.cores += node.tier == 3;
        break;
    }
  }
  c.cables = static_cast<int>(fabric.num_links() / 2);
  for (size_t l = 0; l < fabric.num_links(); l += 2) {
    c.network_cables += fabric.link(static_cast<LinkId>(l)).kind == LinkKind::network;
  }
  return c;
}

}  // namespace gcsim::topologies
