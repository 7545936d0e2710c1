#include "topologies/multi_plane.h"

#include "topologies/clos_builder.h"
#include "topologies/fat_tree.h"
#include "topologies/topology_error.h"

namespace gcsim::topologies {

using models::network::Fabric;
using models::network::NodeId;

namespace {

bool per_plane_nics(const TopologySpec& spec) {
  return spec.scale_out.attachment == PlaneAttachment::nic_per_plane;
}

// NIC ports of one node in `plane`.
int ports_per_node(const TopologySpec& spec, int plane) {
  if (!per_plane_nics(spec)) return spec.gpus_per_node;
  int n = 0;
  for (int i = 0; i < spec.gpus_per_node; ++i) n += i % spec.scale_out.planes == plane;
  return n;
}

TorPlacement plane_placement(const TopologySpec& spec, int plane) {
  const ScaleOutSpec& o = spec.scale_out;
  const int ppn = ports_per_node(spec, plane);
  if (ppn == 0) {
    throw TopologyError("planes", std::to_string(o.planes) + " planes with nic-per-plane leave "
                                      "plane " + std::to_string(plane) + " without a NIC: a node "
                                      "has " + std::to_string(spec.gpus_per_node) + " NICs");
  }
  return tor_placement(spec.nodes * ppn, ppn, o.radix, o.leaf_oversubscription);
}

}  // namespace

std::vector<ClosLayout> multi_plane_layouts(const TopologySpec& spec) {
  const ScaleOutSpec& o = spec.scale_out;
  std::vector<ClosLayout> layouts;
  for (int p = 0; p < o.planes; ++p) {
    layouts.push_back(size_clos(plane_placement(spec, p).demand, o.radix, o.tiers,
                                o.leaf_oversubscription, o.spine_oversubscription,
                                "plane " + std::to_string(p)));
  }
  return layouts;
}

void build_multi_plane(Fabric& fabric, const TopologySpec& spec,
                       const std::vector<HostNodes>& hosts) {
  const ScaleOutSpec& o = spec.scale_out;
  const std::vector<ClosLayout> layouts = multi_plane_layouts(spec);
  const sim::Bandwidth port =
      per_plane_nics(spec) ? o.nic_bandwidth : o.nic_bandwidth.scaled(1.0 / o.planes);
  for (int p = 0; p < o.planes; ++p) {
    std::vector<NodeId> ports;
    for (const HostNodes& h : hosts) {
      for (int i = 0; i < spec.gpus_per_node; ++i) {
        if (!per_plane_nics(spec) || i % o.planes == p) ports.push_back(h.nics[static_cast<size_t>(i)]);
      }
    }
    const auto leaf_nics = fill_leaves(ports, plane_placement(spec, p).per_leaf);
    ClosPlane plane{plane_prefix(p), p, port, o.hop_latency, layouts[static_cast<size_t>(p)]};
    build_clos(fabric, plane, leaf_nics, std::vector<int>(leaf_nics.size(), -1));
  }
}

}  // namespace gcsim::topologies
