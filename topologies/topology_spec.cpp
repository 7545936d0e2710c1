#include "topologies/topology_spec.h"

namespace gcsim::topologies {

const std::vector<TopologyInfo>& topology_catalog() {
  static const std::vector<TopologyInfo> catalog{
      {ScaleOutTopology::fat_tree,
       "NICs of a node on one leaf (top of rack); 2 or 3 tiers of radix-k switches, "
       "oversubscription per tier"},
      {ScaleOutTopology::rail_optimized,
       "NIC i of every node on rail leaf i (rail groups when a rail outgrows a leaf); spines "
       "join the rails"},
      {ScaleOutTopology::multi_plane,
       "independent fat-tree planes: each NIC's ports split over the planes (Alibaba HPN) or "
       "NIC i in plane i mod planes (DeepSeek-V3)"},
      {ScaleOutTopology::custom, "switches and cables listed under scale_out.switches and links"},
      {ScaleOutTopology::none, "a single node: no NICs, no network"},
  };
  return catalog;
}

std::string_view scale_up_kind_name(ScaleUpKind k) {
  switch (k) {
    case ScaleUpKind::nvswitch: return "nvswitch";
    case ScaleUpKind::pcie: return "pcie";
    case ScaleUpKind::none: return "none";
  }
  return "?";
}

std::string_view topology_name(ScaleOutTopology t) {
  switch (t) {
    case ScaleOutTopology::none: return "none";
    case ScaleOutTopology::fat_tree: return "fat-tree";
    case ScaleOutTopology::rail_optimized: return "rail-optimized";
    case ScaleOutTopology::multi_plane: return "multi-plane";
    case ScaleOutTopology::custom: return "custom";
  }
  return "?";
}

std::string_view plane_attachment_name(PlaneAttachment a) {
  switch (a) {
    case PlaneAttachment::port_per_plane: return "port-per-plane";
    case PlaneAttachment::nic_per_plane: return "nic-per-plane";
  }
  return "?";
}

std::string gpu_name(int host, int gpu) {
  return "node" + std::to_string(host) + "/gpu" + std::to_string(gpu);
}

std::string nic_name(int host, int gpu) {
  return "node" + std::to_string(host) + "/nic" + std::to_string(gpu);
}

std::string scale_up_switch_name(int host, ScaleUpKind kind) {
  return "node" + std::to_string(host) + (kind == ScaleUpKind::pcie ? "/pcie" : "/nvswitch");
}

std::string switch_name(std::string_view prefix, std::string_view role, int index) {
  std::string s(prefix);
  s += role;
  s += std::to_string(index);
  return s;
}

std::string plane_prefix(int plane) { return "p" + std::to_string(plane) + "/"; }

}  // namespace gcsim::topologies
