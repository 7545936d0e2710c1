#include "topologies/custom_fabric.h"

#include <algorithm>
#include <set>
#include <utility>

#include "sim/config/did_you_mean.h"
#include "topologies/fabric_graph.h"
#include "topologies/topology_error.h"

namespace gcsim::topologies {

using models::network::Fabric;
using models::network::FabricNode;
using models::network::kNoNode;
using models::network::LinkKind;
using models::network::NodeId;
using models::network::NodeKind;

namespace {

void add_switches(Fabric& fabric, const std::vector<CustomSwitch>& switches) {
  for (size_t i = 0; i < switches.size(); ++i) {
    const CustomSwitch& s = switches[i];
    const int idx = static_cast<int>(i);
    if (s.name.empty()) throw TopologyError("switches", "a switch needs a name", idx, "name");
    if (s.name.find("->") != std::string::npos || s.name.find_first_of("<> \t") != std::string::npos) {
      throw TopologyError("switches", "'" + s.name + "' may not contain spaces, '<' or '>' "
                                      "(faults name links as \"a->b\" and cables as \"a<->b\")",
                          idx, "name");
    }
    const NodeId existing = fabric.find_node(s.name);
    if (existing != kNoNode) {
      const bool is_switch = fabric.node(existing).kind == NodeKind::network_switch;
      throw TopologyError("switches",
                          "'" + s.name + "' is " +
                              (is_switch ? std::string("listed twice")
                                         : "the name of a server's " +
                                               std::string(models::network::node_kind_name(
                                                   fabric.node(existing).kind))),
                          idx, "name");
    }
    FabricNode n{NodeKind::network_switch, s.name};
    n.tier = s.tier;
    fabric.add_node(std::move(n));
  }
}

NodeId resolve_end(const Fabric& fabric, const TopologySpec& spec, const std::string& name,
                   int idx, const char* field) {
  const NodeId id = fabric.find_node(name);
  if (id == kNoNode) {
    std::vector<std::string> known;
    for (const CustomSwitch& s : spec.scale_out.switches) known.push_back(s.name);
    for (int h = 0; h < spec.nodes; ++h) {
      for (int g = 0; g < spec.gpus_per_node; ++g) known.push_back(nic_name(h, g));
    }
    throw TopologyError("links",
                        "no switch or NIC named '" + name + "'" +
                            sim::config::did_you_mean(name, known) +
                            " (switches are listed under scale_out.switches; NICs are node<h>/nic<i>"
                            " for h < " + std::to_string(spec.nodes) + ", i < " +
                            std::to_string(spec.gpus_per_node) + ")",
                        idx, field);
  }
  const NodeKind kind = fabric.node(id).kind;
  if (kind != NodeKind::network_switch && kind != NodeKind::nic) {
    throw TopologyError("links",
                        "'" + name + "' is a " + std::string(models::network::node_kind_name(kind)) +
                            " inside a server: cables of a custom fabric join NICs and switches "
                            "(a GPU reaches the network through its NIC)",
                        idx, field);
  }
  return id;
}

}  // namespace

void build_custom(Fabric& fabric, const TopologySpec& spec) {
  const ScaleOutSpec& o = spec.scale_out;
  add_switches(fabric, o.switches);
  std::set<std::pair<NodeId, NodeId>> cables;
  for (size_t i = 0; i < o.links.size(); ++i) {
    const CustomLink& c = o.links[i];
    const int idx = static_cast<int>(i);
    const NodeId a = resolve_end(fabric, spec, c.from, idx, "from");
    const NodeId b = resolve_end(fabric, spec, c.to, idx, "to");
    if (a == b) throw TopologyError("links", "a cable needs two different ends", idx, "to");
    if (fabric.node(a).kind == NodeKind::nic && fabric.node(b).kind == NodeKind::nic) {
      throw TopologyError("links", "a cable joins a NIC to a switch, not two NICs", idx, "to");
    }
    if (!cables.emplace(std::min(a, b), std::max(a, b)).second) {
      throw TopologyError("links",
                          "the cable " + c.from + "<->" + c.to +
                              " is listed twice (a cable carries both directions; one cable per "
                              "pair keeps link names unique)",
                          idx, "to");
    }
    fabric.add_cable(a, b, c.bandwidth.value_or(o.nic_bandwidth),
                     c.latency.value_or(o.hop_latency), LinkKind::network);
  }
  if (auto why = stranded_nic(fabric)) throw TopologyError("links", *why);
}

}  // namespace gcsim::topologies
