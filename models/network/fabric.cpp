#include "models/network/fabric.h"

#include <stdexcept>

namespace gcsim::models::network {

NodeId Fabric::add_node(FabricNode node) {
  const auto id = static_cast<NodeId>(nodes_.size());
  if (!node_by_name_.emplace(node.name, id).second) {
    throw std::logic_error("fabric: duplicate node name " + node.name);
  }
  if (node.kind == NodeKind::gpu) {
    if (node.rank != static_cast<int>(gpu_nodes_.size())) {
      throw std::logic_error("fabric: GPUs must be added in rank order");
    }
    gpu_nodes_.push_back(id);
    nic_of_rank_.push_back(kNoNode);
  } else if (node.kind == NodeKind::nic) {
    if (node.rank < 0 || node.rank >= num_gpus()) {
      throw std::logic_error("fabric: a NIC must name an existing GPU rank");
    }
    nic_of_rank_[static_cast<size_t>(node.rank)] = id;
  }
  nodes_.push_back(std::move(node));
  out_.emplace_back();
  return id;
}

LinkId Fabric::add_cable(NodeId a, NodeId b, sim::Bandwidth bandwidth, sim::Duration latency,
                         LinkKind kind) {
  if (a == b) throw std::logic_error("fabric: a cable needs two distinct ends");
  const auto id = static_cast<LinkId>(links_.size());
  for (auto [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
    Link l;
    l.from = from;
    l.to = to;
    l.bandwidth = bandwidth;
    l.latency = latency;
    l.kind = kind;
    l.name = node(from).name + "->" + node(to).name;
    const auto lid = static_cast<LinkId>(links_.size());
    link_by_name_.emplace(l.name, lid);
    out_.at(static_cast<size_t>(from)).push_back(lid);
    links_.push_back(std::move(l));
  }
  return id;
}

NodeId Fabric::nic_of(int rank) const { return nic_of_rank_.at(static_cast<size_t>(rank)); }

NodeId Fabric::find_node(std::string_view name) const {
  auto it = node_by_name_.find(std::string(name));
  return it == node_by_name_.end() ? kNoNode : it->second;
}

LinkId Fabric::find_link(std::string_view name) const {
  auto it = link_by_name_.find(std::string(name));
  return it == link_by_name_.end() ? kNoLink : it->second;
}

LinkId Fabric::find_link_between(NodeId a, NodeId b) const {
  for (LinkId l : out_links(a)) {
    if (link(l).to == b) return l;
  }
  return kNoLink;
}

void Fabric::set_link_state(LinkId id, LinkState state, double fraction) {
  Link& l = links_.at(static_cast<size_t>(id));
  if (state == LinkState::degraded && !(fraction > 0.0 && fraction <= 1.0)) {
    throw std::logic_error("fabric: a degraded link keeps a bandwidth share in (0, 1]");
  }
  l.state = state;
  l.degraded_fraction = state == LinkState::degraded ? fraction : 1.0;
  ++version_;
}

std::string_view node_kind_name(NodeKind k) {
  switch (k) {
    case NodeKind::gpu: return "gpu";
    case NodeKind::nic: return "nic";
    case NodeKind::nvswitch: return "nvswitch";
    case NodeKind::pcie_switch: return "pcie_switch";
    case NodeKind::network_switch: return "switch";
  }
  return "?";
}

std::string_view link_state_name(LinkState s) {
  switch (s) {
    case LinkState::up: return "up";
    case LinkState::down: return "down";
    case LinkState::degraded: return "degraded";
  }
  return "?";
}

}  // namespace gcsim::models::network
