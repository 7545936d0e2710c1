#include "topologies/fabric_graph.h"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/connected_components.hpp>
#include <boost/graph/push_relabel_max_flow.hpp>
#include <cmath>
#include <stdexcept>

namespace gcsim::topologies {

using models::network::Fabric;
using models::network::kNoNode;
using models::network::Link;
using models::network::LinkId;
using models::network::NodeId;
using models::network::NodeKind;

namespace {

using UndirectedGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS>;

// Undirected copy of the usable links whose two ends pass `keep`.
template <typename Keep>
std::vector<int> components(const Fabric& fabric, Keep keep) {
  UndirectedGraph g(fabric.num_nodes());
  for (size_t l = 0; l < fabric.num_links(); l += 2) {  // one edge per cable
    const Link& ab = fabric.link(static_cast<LinkId>(l));
    const Link& ba = fabric.link(static_cast<LinkId>(l + 1));
    if ((ab.usable() || ba.usable()) && keep(ab.from) && keep(ab.to)) {
      boost::add_edge(static_cast<size_t>(ab.from), static_cast<size_t>(ab.to), g);
    }
  }
  std::vector<int> comp(fabric.num_nodes());
  boost::connected_components(g, comp.data());
  return comp;
}

}  // namespace

std::optional<std::string> unreachable_gpu(const Fabric& fabric) {
  if (fabric.num_gpus() < 2) return std::nullopt;
  const std::vector<int> comp = components(fabric, [](NodeId) { return true; });
  const int home = comp[static_cast<size_t>(fabric.gpu_node(0))];
  for (int r = 1; r < fabric.num_gpus(); ++r) {
    const NodeId g = fabric.gpu_node(r);
    if (comp[static_cast<size_t>(g)] != home) {
      return "GPU " + fabric.node(g).name + " (rank " + std::to_string(r) + ") cannot reach " +
             fabric.node(fabric.gpu_node(0)).name + " (rank 0): no path of usable links joins them";
    }
  }
  return std::nullopt;
}

std::optional<std::string> stranded_nic(const Fabric& fabric) {
  auto network = [&](NodeId n) {
    const NodeKind k = fabric.node(n).kind;
    return k == NodeKind::nic || k == NodeKind::network_switch;
  };
  const std::vector<int> comp = components(fabric, network);
  NodeId first = kNoNode;
  for (int r = 0; r < fabric.num_gpus(); ++r) {
    const NodeId nic = fabric.nic_of(r);
    if (nic == kNoNode) continue;
    bool cabled = false;
    for (LinkId l : fabric.out_links(nic)) {
      cabled = cabled || fabric.node(fabric.link(l).to).kind == NodeKind::network_switch;
    }
    const std::string gpu = fabric.node(fabric.gpu_node(r)).name;
    if (!cabled) {
      return "NIC " + fabric.node(nic).name + " has no cable to a switch, so GPU " + gpu +
             " (rank " + std::to_string(r) + ") cannot reach the other nodes";
    }
    if (first == kNoNode) {
      first = nic;
    } else if (comp[static_cast<size_t>(nic)] != comp[static_cast<size_t>(first)]) {
      return "NIC " + fabric.node(nic).name + " is not joined to " + fabric.node(first).name +
             " through switches, so GPU " + gpu + " (rank " + std::to_string(r) +
             ") cannot reach every other node";
    }
  }
  return std::nullopt;
}

sim::Bandwidth cut_bandwidth(const Fabric& fabric, const std::vector<int>& from,
                             const std::vector<int>& to) {
  using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
  using FlowGraph = boost::adjacency_list<
      boost::vecS, boost::vecS, boost::directedS, boost::no_property,
      boost::property<boost::edge_capacity_t, int64_t,
                      boost::property<boost::edge_residual_capacity_t, int64_t,
                                      boost::property<boost::edge_reverse_t,
                                                      Traits::edge_descriptor>>>>;
  const size_t n = fabric.num_nodes();
  FlowGraph g(n + 2);
  const size_t source = n, sink = n + 1;
  auto cap = boost::get(boost::edge_capacity, g);
  auto rev = boost::get(boost::edge_reverse, g);
  // Each arc gets a zero-capacity twin for the residual graph.
  auto arc = [&](size_t u, size_t v, int64_t c) {
    auto e = boost::add_edge(u, v, g).first;
    auto r = boost::add_edge(v, u, g).first;
    cap[e] = c;
    cap[r] = 0;
    rev[e] = r;
    rev[r] = e;
  };
  for (size_t l = 0; l < fabric.num_links(); ++l) {
    const Link& link = fabric.link(static_cast<LinkId>(l));
    if (!link.usable()) continue;
    // Whole bytes per second: 400 Gb/s is 5e10, and sums over a 16K-GPU
    // fabric stay far below 2^63.
    arc(static_cast<size_t>(link.from), static_cast<size_t>(link.to),
        std::llround(link.effective_bandwidth().bytes_per_s()));
  }
  // Terminal arcs wider than any GPU's links (10 TB/s), so they never bind.
  constexpr int64_t kUnbounded = 10'000'000'000'000;
  for (int r : from) arc(source, static_cast<size_t>(fabric.gpu_node(r)), kUnbounded);
  for (int r : to) arc(static_cast<size_t>(fabric.gpu_node(r)), sink, kUnbounded);
  const int64_t flow = boost::push_relabel_max_flow(g, source, sink);
  return sim::Bandwidth::bytes_per_s(static_cast<double>(flow));
}

sim::Bandwidth bisection_bandwidth(const Fabric& fabric) {
  int hosts = 0;
  for (int r = 0; r < fabric.num_gpus(); ++r) hosts = std::max(hosts, fabric.host_of(r) + 1);
  if (hosts < 2) throw std::invalid_argument("bisection: the fabric has fewer than two hosts");
  std::vector<int> a, b;
  for (int r = 0; r < fabric.num_gpus(); ++r) {
    (fabric.host_of(r) < hosts / 2 ? a : b).push_back(r);
  }
  return cut_bandwidth(fabric, a, b);
}

}  // namespace gcsim::topologies
