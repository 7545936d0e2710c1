// Small fabrics built by hand for network tests, independent of the
// topology builders so that routing and the models can be tested alone.
#pragma once

#include <string>

#include "models/network/fabric.h"

namespace gcsim::test {

struct SmallFabricSpec {
  int hosts = 2;
  int gpus_per_host = 2;
  int leaves = 2;  // each host's NICs all go to leaf (host % leaves)
  int spines = 2;  // every leaf connects to every spine
  sim::Bandwidth nvlink = sim::Bandwidth::gb_per_s(450);
  sim::Bandwidth pcie = sim::Bandwidth::gb_per_s(64);
  sim::Bandwidth nic = sim::Bandwidth::gbps(400);
  sim::Bandwidth uplink = sim::Bandwidth::gbps(400);
  sim::Duration nvlink_latency = sim::ns(int64_t{300});
  sim::Duration pcie_latency = sim::ns(int64_t{500});
  sim::Duration hop_latency = sim::ns(int64_t{500});
};

// Hosts with one NVSwitch each and one NIC per GPU, leaves and spines in a
// two-tier Clos. Node names: "h0/gpu1", "h0/nic1", "h0/nvsw", "leaf0", "spine1".
inline models::network::Fabric small_fabric(const SmallFabricSpec& s) {
  using namespace models::network;
  Fabric f;
  std::vector<NodeId> gpus, nics, nvsw;
  for (int h = 0; h < s.hosts; ++h) {
    for (int g = 0; g < s.gpus_per_host; ++g) {
      const std::string p = "h" + std::to_string(h) + "/";
      gpus.push_back(f.add_node({NodeKind::gpu, p + "gpu" + std::to_string(g), h,
                                 h * s.gpus_per_host + g}));
    }
  }
  for (int h = 0; h < s.hosts; ++h) {
    const std::string p = "h" + std::to_string(h) + "/";
    nvsw.push_back(f.add_node({NodeKind::nvswitch, p + "nvsw", h}));
    for (int g = 0; g < s.gpus_per_host; ++g) {
      const int rank = h * s.gpus_per_host + g;
      nics.push_back(f.add_node({NodeKind::nic, p + "nic" + std::to_string(g), h, rank}));
      f.add_cable(gpus[static_cast<size_t>(rank)], nvsw.back(), s.nvlink, s.nvlink_latency,
                  LinkKind::nvlink);
      f.add_cable(gpus[static_cast<size_t>(rank)], nics.back(), s.pcie, s.pcie_latency,
                  LinkKind::pcie);
    }
  }
  std::vector<NodeId> leaves, spines;
  for (int i = 0; i < s.leaves; ++i) {
    FabricNode n{NodeKind::network_switch, "leaf" + std::to_string(i)};
    n.tier = 1;
    leaves.push_back(f.add_node(n));
  }
  for (int i = 0; i < s.spines; ++i) {
    FabricNode n{NodeKind::network_switch, "spine" + std::to_string(i)};
    n.tier = 2;
    spines.push_back(f.add_node(n));
  }
  for (int h = 0; h < s.hosts; ++h) {
    for (int g = 0; g < s.gpus_per_host; ++g) {
      f.add_cable(nics[static_cast<size_t>(h * s.gpus_per_host + g)],
                  leaves[static_cast<size_t>(h % s.leaves)], s.nic, s.hop_latency,
                  LinkKind::network);
    }
  }
  for (NodeId l : leaves) {
    for (NodeId sp : spines) f.add_cable(l, sp, s.uplink, s.hop_latency, LinkKind::network);
  }
  return f;
}

}  // namespace gcsim::test
