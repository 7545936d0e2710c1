#include "models/network/routing.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "sim/engine/random.h"

namespace gcsim::models::network {

namespace {
bool in_node_switch(NodeKind k) { return k == NodeKind::nvswitch || k == NodeKind::pcie_switch; }
}  // namespace

Routing::Routing(const Fabric& fabric, uint64_t seed)
    : fabric_(fabric), seed_(seed), cached_version_(fabric.version()) {
  switch_index_.assign(fabric.num_nodes(), -1);
  for (size_t n = 0; n < fabric.num_nodes(); ++n) {
    if (fabric.node(static_cast<NodeId>(n)).kind == NodeKind::network_switch) {
      switch_index_[n] = num_switches_++;
    }
  }
}

bool Routing::is_switch(NodeId n) const { return switch_index_[static_cast<size_t>(n)] >= 0; }

NodeId Routing::entry_of(int rank) const {
  const NodeId nic = fabric_.nic_of(rank);
  return nic == kNoNode ? fabric_.gpu_node(rank) : nic;
}

std::vector<NodeId> Routing::attachment_of(NodeId entry) const {
  std::vector<NodeId> att;
  for (LinkId l : fabric_.out_links(entry)) {
    const NodeId s = fabric_.link(l).to;
    if (is_switch(s) && fabric_.link(Fabric::reverse(l)).usable()) att.push_back(s);
  }
  std::sort(att.begin(), att.end());
  return att;
}

const Routing::DistanceTable& Routing::table_for(NodeId entry) const {
  if (cached_version_ != fabric_.version()) {
    tables_.clear();
    cached_version_ = fabric_.version();
  }
  std::vector<NodeId> att = attachment_of(entry);
  auto it = tables_.find(att);
  if (it != tables_.end()) return it->second;
  // Breadth-first search backwards from the attachment over usable
  // switch-to-switch links.
  DistanceTable dist(static_cast<size_t>(num_switches_), -1);
  std::vector<NodeId> frontier = att;
  for (NodeId s : att) dist[static_cast<size_t>(switch_index_[static_cast<size_t>(s)])] = 0;
  for (int32_t d = 1; !frontier.empty(); ++d) {
    std::vector<NodeId> next;
    for (NodeId v : frontier) {
      for (LinkId l : fabric_.out_links(v)) {
        const NodeId u = fabric_.link(l).to;
        if (!is_switch(u) || !fabric_.link(Fabric::reverse(l)).usable()) continue;
        int32_t& du = dist[static_cast<size_t>(switch_index_[static_cast<size_t>(u)])];
        if (du < 0) {
          du = d;
          next.push_back(u);
        }
      }
    }
    frontier = std::move(next);
  }
  return tables_.emplace(std::move(att), std::move(dist)).first->second;
}

std::vector<LinkId> Routing::in_host_next_hops(NodeId at, NodeId dst_gpu) const {
  // Hosts hold a handful of switches: a small backward search each time.
  const int host = fabric_.node(dst_gpu).host;
  std::vector<std::pair<NodeId, int>> dist{{dst_gpu, 0}};
  auto dist_of = [&](NodeId n) {
    for (auto& [node, d] : dist) {
      if (node == n) return d;
    }
    return -1;
  };
  for (size_t i = 0; i < dist.size(); ++i) {
    const auto [v, d] = dist[i];
    for (LinkId l : fabric_.out_links(v)) {
      const NodeId u = fabric_.link(l).to;
      const FabricNode& un = fabric_.node(u);
      const bool relay = in_node_switch(un.kind) && un.host == host;
      if ((relay || u == at) && fabric_.link(Fabric::reverse(l)).usable() && dist_of(u) < 0) {
        dist.emplace_back(u, d + 1);
      }
    }
  }
  const int d_at = dist_of(at);
  std::vector<LinkId> hops;
  if (d_at <= 0) return hops;
  for (LinkId l : fabric_.out_links(at)) {
    const Link& link = fabric_.link(l);
    if (link.usable() && dist_of(link.to) == d_at - 1) hops.push_back(l);
  }
  return hops;
}

bool Routing::in_host_reachable(NodeId src_gpu, NodeId dst_gpu) const {
  if (fabric_.node(src_gpu).host != fabric_.node(dst_gpu).host) return false;
  return !in_host_next_hops(src_gpu, dst_gpu).empty();
}

std::vector<LinkId> Routing::next_hops(NodeId at, int dst_rank) const {
  const NodeId dst_gpu = fabric_.gpu_node(dst_rank);
  std::vector<LinkId> hops;
  if (at == dst_gpu) return hops;
  const FabricNode& here = fabric_.node(at);
  const NodeId dst_entry = entry_of(dst_rank);

  if (here.kind == NodeKind::gpu && in_host_reachable(at, dst_gpu)) {
    return in_host_next_hops(at, dst_gpu);
  }
  if (in_node_switch(here.kind)) return in_host_next_hops(at, dst_gpu);

  // Between hosts. A GPU first hands its traffic to its own NIC.
  if (here.kind == NodeKind::gpu && fabric_.nic_of(here.rank) != kNoNode) {
    const LinkId l = fabric_.find_link_between(at, fabric_.nic_of(here.rank));
    if (l != kNoLink && fabric_.link(l).usable()) hops.push_back(l);
    return hops;
  }
  if (at == dst_entry) {  // the destination's NIC delivers to its GPU
    const LinkId l = fabric_.find_link_between(at, dst_gpu);
    if (l != kNoLink && fabric_.link(l).usable()) hops.push_back(l);
    return hops;
  }
  const DistanceTable& dist = table_for(dst_entry);
  auto dist_of = [&](NodeId n) {
    return is_switch(n) ? dist[static_cast<size_t>(switch_index_[static_cast<size_t>(n)])] : -1;
  };
  if (is_switch(at)) {
    const int32_t d = dist_of(at);
    if (d < 0) return hops;
    for (LinkId l : fabric_.out_links(at)) {
      const Link& link = fabric_.link(l);
      if (!link.usable()) continue;
      if (d == 0 ? link.to == dst_entry : dist_of(link.to) == d - 1) hops.push_back(l);
    }
    return hops;
  }
  // A source NIC (or a GPU plugged straight into switches): every uplink
  // whose switch is nearest to the destination.
  int32_t best = std::numeric_limits<int32_t>::max();
  for (LinkId l : fabric_.out_links(at)) {
    const Link& link = fabric_.link(l);
    const int32_t d = dist_of(link.to);
    if (!link.usable() || d < 0) continue;
    if (d < best) {
      best = d;
      hops.clear();
    }
    if (d == best) hops.push_back(l);
  }
  return hops;
}

std::vector<LinkId> Routing::path_with(int src_rank, int dst_rank, const Chooser& choose) const {
  std::vector<LinkId> path;
  if (src_rank == dst_rank) return path;
  const NodeId dst_gpu = fabric_.gpu_node(dst_rank);
  NodeId at = fabric_.gpu_node(src_rank);
  while (at != dst_gpu) {
    std::vector<LinkId> hops = next_hops(at, dst_rank);
    if (hops.empty() || path.size() > fabric_.num_nodes()) return {};
    const LinkId l = hops.size() == 1 ? hops.front() : hops.at(choose(at, hops) % hops.size());
    path.push_back(l);
    at = fabric_.link(l).to;
  }
  return path;
}

uint64_t Routing::hash_at(NodeId at, const FlowKey& key) const {
  const uint64_t switch_seed = sim::splitmix64(seed_ ^ (static_cast<uint64_t>(at) << 20));
  const uint64_t tuple = (static_cast<uint64_t>(static_cast<uint32_t>(key.src_rank)) << 32) ^
                         static_cast<uint32_t>(key.dst_rank);
  return sim::splitmix64(switch_seed ^ sim::splitmix64(tuple ^ sim::splitmix64(key.qp)));
}

std::vector<LinkId> Routing::ecmp_path(const FlowKey& key) const {
  return path_with(key.src_rank, key.dst_rank,
                   [&](NodeId at, const std::vector<LinkId>& c) {
                     return static_cast<size_t>(hash_at(at, key) % c.size());
                   });
}

std::vector<WeightedLink> Routing::spray_weights(int src_rank, int dst_rank) const {
  std::vector<WeightedLink> out;
  if (src_rank == dst_rank) return out;
  const NodeId dst_gpu = fabric_.gpu_node(dst_rank);
  // Every equal-cost next hop lies one step nearer, so the frontier advances
  // in lock step; shares meeting at a node merge.
  std::vector<std::pair<NodeId, double>> frontier{{fabric_.gpu_node(src_rank), 1.0}};
  for (size_t step = 0; !frontier.empty(); ++step) {
    if (step > fabric_.num_nodes()) throw std::logic_error("routing: spray did not converge");
    std::vector<std::pair<NodeId, double>> next;
    for (auto [at, share] : frontier) {
      if (at == dst_gpu) continue;
      const std::vector<LinkId> hops = next_hops(at, dst_rank);
      if (hops.empty()) return {};
      const double each = share / static_cast<double>(hops.size());
      for (LinkId l : hops) {
        out.push_back({l, each});
        const NodeId to = fabric_.link(l).to;
        auto it = std::find_if(next.begin(), next.end(), [&](auto& p) { return p.first == to; });
        if (it == next.end()) {
          next.emplace_back(to, each);
        } else {
          it->second += each;
        }
      }
    }
    frontier = std::move(next);
  }
  return out;
}

sim::Duration Routing::latency(const std::vector<LinkId>& path) const {
  sim::Duration d = sim::Duration::zero();
  for (LinkId l : path) d = d + fabric_.link(l).latency;
  return d;
}

sim::Bandwidth Routing::bottleneck(const std::vector<LinkId>& path) const {
  if (path.empty()) throw std::logic_error("routing: the bottleneck of an empty path");
  sim::Bandwidth b = fabric_.link(path.front()).effective_bandwidth();
  for (LinkId l : path) b = std::min(b, fabric_.link(l).effective_bandwidth());
  return b;
}

}  // namespace gcsim::models::network
