// An HGX/DGX-style server as fabric nodes: its GPUs on one logical scale-up
// switch (NVSwitch, or a PCIe switch for PCIe cards) and, when the cluster
// has a scale-out network, one NIC per GPU (a rail) on a PCIe link of its
// own. The four NVSwitch chips of an HGX H100 act as one non-blocking
// switch, so one node with the per-GPU NVLink bandwidth stands for them.
#pragma once

#include <vector>

#include "models/network/fabric.h"
#include "topologies/topology_spec.h"

namespace gcsim::topologies {

struct HostNodes {
  std::vector<models::network::NodeId> gpus;  // by local index
  std::vector<models::network::NodeId> nics;  // by local index; empty without scale-out
  models::network::NodeId scale_up = models::network::kNoNode;  // kNoNode for kind none
};

// Adds every server, GPUs in rank order (rank = host * gpus_per_node + i).
// GPU-switch links: scale_up.bandwidth each way, half of scale_up.latency
// each (GPU to GPU = scale_up.latency). GPU-NIC links: pcie_bandwidth and
// scale_out.nic_latency.
std::vector<HostNodes> build_hosts(models::network::Fabric& fabric, const TopologySpec& spec,
                                   bool with_nics);

}  // namespace gcsim::topologies
