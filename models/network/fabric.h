// The cluster's physical network as the network models see it: nodes (GPUs,
// NICs, NVSwitches, Ethernet/IB switches) joined by directed links, each
// with a bandwidth, a latency and a state. Topology builders (topologies/)
// fill it in; routing and the analytical, flow and packet models read it.
// Every physical cable is two directed links (one per direction) whose ids
// differ by one, so a fault on a cable takes both down.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sim/engine/time.h"
#include "sim/config/units.h"

namespace gcsim::models::network {

using NodeId = int32_t;
using LinkId = int32_t;
constexpr NodeId kNoNode = -1;
constexpr LinkId kNoLink = -1;

enum class NodeKind : uint8_t {
  gpu,          // an endpoint; sources and sinks traffic, never forwards others'
  nic,          // a GPU's network adapter (one per GPU: a rail); forwards only its GPU's traffic
  nvswitch,     // scale-up switch inside a node
  pcie_switch,  // PCIe switch inside a node (scale_up.kind: pcie)
  network_switch,  // Ethernet/IB switch: leaf (tier 1), spine (tier 2), core (tier 3)
};

enum class LinkKind : uint8_t { nvlink, pcie, network };

enum class LinkState : uint8_t { up, down, degraded };

struct FabricNode {
  NodeKind kind = NodeKind::network_switch;
  std::string name;  // unique, e.g. "node3/gpu5", "node3/nic5", "leaf12", "spine0"
  int host = -1;     // server index for GPUs, NICs and in-node switches; -1 otherwise
  int rank = -1;     // GPU rank for GPU nodes and their NICs; -1 otherwise
  int tier = 0;      // network switches: 1 leaf, 2 spine, 3 core; 0 otherwise
  int plane = 0;     // multi-plane fabrics: the plane a switch belongs to
  int rail = -1;     // rail-optimized fabrics: the rail a leaf serves; -1 otherwise
};

struct Link {
  NodeId from = kNoNode;
  NodeId to = kNoNode;
  sim::Bandwidth bandwidth;  // nominal, this direction
  sim::Duration latency;     // propagation + forwarding of this hop
  LinkKind kind = LinkKind::network;
  LinkState state = LinkState::up;
  double degraded_fraction = 1.0;  // share of `bandwidth` left when degraded, (0, 1]
  std::string name;                // "leaf3->spine1"

  bool usable() const { return state != LinkState::down; }
  // The bandwidth traffic actually gets: nominal, scaled when degraded.
  sim::Bandwidth effective_bandwidth() const {
    return state == LinkState::degraded ? bandwidth.scaled(degraded_fraction) : bandwidth;
  }
};

class Fabric {
 public:
  NodeId add_node(FabricNode node);
  // Adds a cable: link a→b and link b→a with the same bandwidth and latency.
  // Returns the id of a→b; b→a is that id + 1. Names are "A->B" and "B->A".
  LinkId add_cable(NodeId a, NodeId b, sim::Bandwidth bandwidth, sim::Duration latency,
                   LinkKind kind);

  size_t num_nodes() const { return nodes_.size(); }
  size_t num_links() const { return links_.size(); }
  const FabricNode& node(NodeId id) const { return nodes_.at(static_cast<size_t>(id)); }
  const Link& link(LinkId id) const { return links_.at(static_cast<size_t>(id)); }
  const std::vector<LinkId>& out_links(NodeId id) const {
    return out_.at(static_cast<size_t>(id));
  }
  // The opposite direction of the same cable.
  static LinkId reverse(LinkId id) { return id ^ 1; }

  // GPU endpoints by rank (ranks are dense, 0..num_gpus()-1).
  int num_gpus() const { return static_cast<int>(gpu_nodes_.size()); }
  NodeId gpu_node(int rank) const { return gpu_nodes_.at(static_cast<size_t>(rank)); }
  // The NIC of a GPU, or kNoNode when the cluster has no scale-out network.
  NodeId nic_of(int rank) const;
  int host_of(int rank) const { return node(gpu_node(rank)).host; }

  // Lookup by name (faults name nodes and links); kNoNode / kNoLink if absent.
  NodeId find_node(std::string_view name) const;
  LinkId find_link(std::string_view name) const;
  // The a→b link of a cable between two named nodes, or kNoLink.
  LinkId find_link_between(NodeId a, NodeId b) const;

  // Changes one direction's state; callers that mean a cable change both.
  // `fraction` is the bandwidth share for `degraded`, ignored otherwise.
  void set_link_state(LinkId id, LinkState state, double fraction = 1.0);
  // Bumped by every set_link_state, so routing caches know to rebuild.
  uint64_t version() const { return version_; }

 private:
  std::vector<FabricNode> nodes_;
  std::vector<Link> links_;
  std::vector<std::vector<LinkId>> out_;
  std::vector<NodeId> gpu_nodes_;
  std::vector<NodeId> nic_of_rank_;
  std::unordered_map<std::string, NodeId> node_by_name_;
  std::unordered_map<std::string, LinkId> link_by_name_;
  uint64_t version_ = 0;
};

std::string_view node_kind_name(NodeKind k);
std::string_view link_state_name(LinkState s);

}  // namespace gcsim::models::network
