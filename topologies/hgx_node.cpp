#include "topologies/hgx_node.h"

namespace gcsim::topologies {

using models::network::Fabric;
using models::network::FabricNode;
using models::network::LinkKind;
using models::network::NodeKind;

std::vector<HostNodes> build_hosts(Fabric& fabric, const TopologySpec& spec, bool with_nics) {
  const ScaleUpSpec& up = spec.scale_up;
  const sim::Duration gpu_to_switch = up.latency.scaled(0.5);
  const LinkKind up_kind = up.kind == ScaleUpKind::pcie ? LinkKind::pcie : LinkKind::nvlink;
  std::vector<HostNodes> hosts(static_cast<size_t>(spec.nodes));
  for (int h = 0; h < spec.nodes; ++h) {
    HostNodes& host = hosts[static_cast<size_t>(h)];
    for (int g = 0; g < spec.gpus_per_node; ++g) {
      FabricNode n{NodeKind::gpu, gpu_name(h, g), h, h * spec.gpus_per_node + g};
      host.gpus.push_back(fabric.add_node(std::move(n)));
    }
    if (up.kind != ScaleUpKind::none) {
      const NodeKind kind = up.kind == ScaleUpKind::pcie ? NodeKind::pcie_switch : NodeKind::nvswitch;
      host.scale_up = fabric.add_node({kind, scale_up_switch_name(h, up.kind), h});
      for (auto gpu : host.gpus) {
        fabric.add_cable(gpu, host.scale_up, up.bandwidth, gpu_to_switch, up_kind);
      }
    }
    if (!with_nics) continue;
    for (int g = 0; g < spec.gpus_per_node; ++g) {
      FabricNode n{NodeKind::nic, nic_name(h, g), h, h * spec.gpus_per_node + g};
      host.nics.push_back(fabric.add_node(std::move(n)));
      fabric.add_cable(host.gpus[static_cast<size_t>(g)], host.nics.back(), spec.pcie_bandwidth,
                       spec.scale_out.nic_latency, LinkKind::pcie);
    }
  }
  return hosts;
}

}  // namespace gcsim::topologies
