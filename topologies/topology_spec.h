// The typed description of a cluster's interconnect from which
// build_fabric() makes a models::network::Fabric: the servers (HGX/DGX
// style: GPUs on one scale-up switch, one NIC per GPU) and the scale-out
// network between them (fat-tree, rail-optimized, multi-plane or a custom
// list of switches and cables). No YAML here: sim/cli/fabric_loader reads
// the config onto this struct and validates it, naming the key at fault.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/engine/time.h"
#include "sim/config/units.h"

namespace gcsim::topologies {

enum class ScaleUpKind {
  nvswitch,  // every GPU of a node on one logical NVSwitch (HGX/DGX)
  pcie,      // GPUs meet on a PCIe switch (PCIe cards, no NVLink)
  none,      // one GPU per node: nothing inside the node to cross
};

enum class ScaleOutTopology {
  none,            // a single node: no NICs, no network
  fat_tree,        // NICs of a node on the same leaf (ToR), Clos above
  rail_optimized,  // NIC i of every node on rail leaf i, spines join the rails
  multi_plane,     // independent fat-trees (Alibaba HPN dual-plane, DeepSeek-V3 MPFT)
  custom,          // switches and cables listed by hand
};

// How a multi-plane fabric reaches its NICs.
enum class PlaneAttachment {
  // Every NIC has one port in each plane, its bandwidth split evenly (Alibaba
  // HPN, SIGCOMM'24: a 400G NIC as 2 x 200G ports on two planes). Any GPU
  // reaches any other through its own NIC.
  port_per_plane,
  // NIC i of a node sits in plane i mod planes at full bandwidth (DeepSeek-V3
  // report, multi-plane fat-tree). GPUs of different planes meet only through
  // a GPU of the right plane in the same node (NVLink, NCCL's PXN): routing
  // between hosts finds no path for such a pair.
  nic_per_plane,
};

struct ScaleUpSpec {
  ScaleUpKind kind = ScaleUpKind::nvswitch;
  sim::Bandwidth bandwidth = sim::Bandwidth::gb_per_s(450);  // per GPU, each direction
  // GPU to GPU through the switch; each of the two GPU-switch links carries half.
  sim::Duration latency = sim::Duration::from_ps(600'000);
};

// A switch of a custom fabric.
struct CustomSwitch {
  std::string name;  // unique, not of the form "node<h>/..."
  int tier = 1;      // 1 leaf, 2 spine, 3 core: informational (reports, names)
};

// A cable of a custom fabric: two directed links, from->to and to->from.
struct CustomLink {
  std::string from;  // a listed switch or a NIC, "node<h>/nic<i>"
  std::string to;
  std::optional<sim::Bandwidth> bandwidth;  // default: ScaleOutSpec::nic_bandwidth
  std::optional<sim::Duration> latency;     // default: ScaleOutSpec::hop_latency
};

struct ScaleOutSpec {
  ScaleOutTopology topology = ScaleOutTopology::none;
  int tiers = 2;    // switch tiers of a Clos: 2 (leaf, spine) or 3 (leaf, spine, core)
  int radix = 64;   // ports per switch (NVIDIA Quantum-2 and Spectrum-4: 64 x 400G)
  sim::Bandwidth nic_bandwidth = sim::Bandwidth::gbps(400);  // per GPU
  // Downlink:uplink ratio of the leaf tier and of the spine tier (3 tiers
  // only); 1 is non-blocking. Uplinks = ceil(downlinks in use / ratio).
  double leaf_oversubscription = 1.0;
  double spine_oversubscription = 1.0;
  // One network link (NIC-leaf, leaf-spine, spine-core): cable propagation
  // (~5 ns/m, 0.1 us for 20 m) plus the switch's port-to-port forwarding
  // (cut-through: NVIDIA Quantum-2 NDR ~0.3 us, 400G Ethernet ASICs
  // 0.4-0.8 us). 0.5 us also makes NIC to NIC across a 2-tier fabric
  // (4 links) the 2 us the alpha-beta model used before the fabric.
  sim::Duration hop_latency = sim::Duration::from_ps(500'000);
  // GPU to its NIC (PCIe through the node's PCIe switch, ~0.1-0.2 us) plus
  // the NIC's send or receive pipeline (~0.3 us): a round figure.
  sim::Duration nic_latency = sim::Duration::from_ps(500'000);
  int planes = 1;  // multi-plane: independent planes
  PlaneAttachment attachment = PlaneAttachment::port_per_plane;
  std::vector<CustomSwitch> switches;  // custom only
  std::vector<CustomLink> links;       // custom only
};

struct TopologySpec {
  int nodes = 1;
  int gpus_per_node = 8;
  ScaleUpSpec scale_up;
  // GPU to NIC (and the node's PCIe switch): the GPU preset's host link.
  sim::Bandwidth pcie_bandwidth = sim::Bandwidth::gb_per_s(64);
  ScaleOutSpec scale_out;

  int total_gpus() const { return nodes * gpus_per_node; }
};

// Every scale-out topology with a one-line description, in the order
// `gcsim list topologies` prints them.
struct TopologyInfo {
  ScaleOutTopology topology;
  const char* description;
};
const std::vector<TopologyInfo>& topology_catalog();

std::string_view scale_up_kind_name(ScaleUpKind k);
std::string_view topology_name(ScaleOutTopology t);
std::string_view plane_attachment_name(PlaneAttachment a);

// Names the builders give nodes (faults and custom links use them).
std::string gpu_name(int host, int gpu);      // "node3/gpu5"
std::string nic_name(int host, int gpu);      // "node3/nic5"
std::string scale_up_switch_name(int host, ScaleUpKind kind);  // "node3/nvswitch", "node3/pcie"
// "leaf12", "spine0", "core1"; a multi-plane fabric prefixes its plane: "p1/leaf0".
std::string switch_name(std::string_view prefix, std::string_view role, int index);
std::string plane_prefix(int plane);  // "p1/"

}  // namespace gcsim::topologies
