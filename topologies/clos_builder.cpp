#include "topologies/clos_builder.h"

#include <stdexcept>

namespace gcsim::topologies {

using models::network::Fabric;
using models::network::FabricNode;
using models::network::LinkKind;
using models::network::NodeId;
using models::network::NodeKind;

namespace {
NodeId add_switch(Fabric& fabric, const ClosPlane& p, const char* role, int index, int tier,
                  int rail = -1) {
  FabricNode n{NodeKind::network_switch, switch_name(p.prefix, role, index)};
  n.tier = tier;
  n.plane = p.plane;
  n.rail = rail;
  return fabric.add_node(std::move(n));
}
}  // namespace

void build_clos(Fabric& fabric, const ClosPlane& p,
                const std::vector<std::vector<NodeId>>& leaf_nics,
                const std::vector<int>& leaf_rail) {
  const ClosLayout& l = p.layout;
  if (static_cast<int>(leaf_nics.size()) != l.leaves || leaf_rail.size() != leaf_nics.size()) {
    throw std::logic_error("clos: the placement and the layout disagree on the leaf count");
  }
  std::vector<NodeId> leaves, spines, cores;
  for (int i = 0; i < l.leaves; ++i) {
    leaves.push_back(add_switch(fabric, p, "leaf", i, 1, leaf_rail[static_cast<size_t>(i)]));
  }
  for (int j = 0; j < l.spines(); ++j) spines.push_back(add_switch(fabric, p, "spine", j, 2));
  for (int c = 0; c < l.cores(); ++c) cores.push_back(add_switch(fabric, p, "core", c, 3));

  auto cable = [&](NodeId a, NodeId b) {
    fabric.add_cable(a, b, p.port_bandwidth, p.hop_latency, LinkKind::network);
  };
  for (int i = 0; i < l.leaves; ++i) {
    for (NodeId nic : leaf_nics[static_cast<size_t>(i)]) cable(nic, leaves[static_cast<size_t>(i)]);
  }
  for (int i = 0; i < l.leaves; ++i) {
    const int pod = i / l.leaves_per_pod;
    for (int s = 0; s < l.leaf_uplinks; ++s) {
      cable(leaves[static_cast<size_t>(i)], spines[static_cast<size_t>(pod * l.leaf_uplinks + s)]);
    }
  }
  for (int j = 0; j < l.spines(); ++j) {
    const int group = j % l.leaf_uplinks;  // spine j of its pod joins core group j
    for (int c = 0; c < l.spine_uplinks; ++c) {
      cable(spines[static_cast<size_t>(j)], cores[static_cast<size_t>(group * l.spine_uplinks + c)]);
    }
  }
}

}  // namespace gcsim::topologies
