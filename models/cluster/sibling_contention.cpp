#include "models/cluster/sibling_contention.h"

#include <algorithm>

namespace gcsim::models::cluster {

using network::Fabric;
using network::LinkId;
using network::NodeId;
using network::NodeKind;

namespace {
// Capacities are sums of a few hundred link rates: a relative margin keeps
// a non-blocking switch's equal sums from reading as oversubscribed.
constexpr double kOversubscribedMargin = 1e-9;
}  // namespace

SiblingContention::SiblingContention(const Fabric& fabric)
    : fabric_(fabric), routing_(fabric, 0) {}

void SiblingContention::refresh() {
  if (version_ == fabric_.version()) return;
  version_ = fabric_.version();
  toward_.clear();
  entry_ids_.clear();
  thin_.assign(fabric_.num_links(), 0);
  any_ = false;
  for (size_t n = 0; n < fabric_.num_nodes(); ++n) {
    const auto& node = fabric_.node(static_cast<NodeId>(n));
    if (node.kind != NodeKind::network_switch || node.tier <= 0) continue;
    // Down: toward hosts (NICs, GPUs plugged in) and lower tiers; up: to
    // higher tiers. Bytes per second, usable links at their current rate.
    double down = 0.0, up = 0.0;
    for (LinkId l : fabric_.out_links(static_cast<NodeId>(n))) {
      const auto& link = fabric_.link(l);
      if (!link.usable()) continue;
      const auto& peer = fabric_.node(link.to);
      const double bps = link.effective_bandwidth().bytes_per_s();
      if (peer.kind != NodeKind::network_switch || peer.tier < node.tier) {
        down += bps;
      } else if (peer.tier > node.tier) {
        up += bps;
      }
    }
    if (up <= 0.0 || down <= up * (1.0 + kOversubscribedMargin)) continue;
    for (LinkId l : fabric_.out_links(static_cast<NodeId>(n))) {
      const auto& peer = fabric_.node(fabric_.link(l).to);
      if (peer.kind == NodeKind::network_switch && peer.tier > node.tier) {
        thin_[static_cast<size_t>(l)] = 1;
        thin_[static_cast<size_t>(Fabric::reverse(l))] = 1;
        any_ = true;
      }
    }
  }
}

bool SiblingContention::any() {
  refresh();
  return any_;
}

std::vector<NodeId> SiblingContention::first_switches(int rank) const {
  const NodeId nic = fabric_.nic_of(rank);
  const NodeId entry = nic == network::kNoNode ? fabric_.gpu_node(rank) : nic;
  std::vector<NodeId> out;
  for (LinkId l : fabric_.out_links(entry)) {
    const auto& link = fabric_.link(l);
    if (link.usable() && fabric_.node(link.to).kind == NodeKind::network_switch) {
      out.push_back(link.to);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

const std::vector<LinkId>& SiblingContention::links_toward(NodeId from, int dst_rank) {
  // Routes from a switch depend on the destination only through the
  // switches its entry plugs into, so one search serves a whole leaf.
  auto [id_it, added] = entry_ids_.emplace(first_switches(dst_rank), 0);
  if (added) id_it->second = static_cast<int>(entry_ids_.size()) - 1;
  auto [it, fresh] = toward_.emplace(std::make_pair(from, id_it->second), std::vector<LinkId>{});
  if (!fresh) return it->second;
  std::vector<LinkId>& links = it->second;
  std::vector<NodeId> frontier{from};
  std::vector<NodeId> seen{from};
  while (!frontier.empty()) {
    const NodeId at = frontier.back();
    frontier.pop_back();
    for (LinkId l : routing_.next_hops(at, dst_rank)) {
      if (thin_[static_cast<size_t>(l)]) links.push_back(l);
      const NodeId to = fabric_.link(l).to;
      if (fabric_.node(to).kind != NodeKind::network_switch) continue;
      if (std::find(seen.begin(), seen.end(), to) != seen.end()) continue;
      seen.push_back(to);
      frontier.push_back(to);
    }
  }
  std::sort(links.begin(), links.end());
  links.erase(std::unique(links.begin(), links.end()), links.end());
  return links;
}

std::vector<LinkId> SiblingContention::contended_links(const std::vector<int>& group) {
  refresh();
  std::vector<LinkId> out;
  if (!any_) return out;
  // Distinct (first switch, destination) searches only: a ring over 64
  // hosts on 11 leaves needs 11 x 64, not 64 x 63.
  std::vector<std::vector<NodeId>> firsts;
  firsts.reserve(group.size());
  for (int r : group) firsts.push_back(first_switches(r));
  for (size_t i = 0; i < group.size(); ++i) {
    for (size_t j = 0; j < group.size(); ++j) {
      if (i == j || fabric_.host_of(group[i]) == fabric_.host_of(group[j])) continue;
      for (NodeId f : firsts[i]) {
        const auto& l = links_toward(f, group[j]);
        out.insert(out.end(), l.begin(), l.end());
      }
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
  }
  return out;
}

std::vector<size_t> SiblingContention::sharing(const std::vector<int>& group,
                                               const std::vector<std::vector<int>>& siblings) {
  std::vector<size_t> counted;
  const std::vector<LinkId> own = contended_links(group);
  if (own.empty()) return counted;
  std::vector<char> reached(fabric_.num_links(), 0);
  for (LinkId l : own) reached[static_cast<size_t>(l)] = 1;
  std::vector<std::vector<LinkId>> links;
  links.reserve(siblings.size());
  for (const auto& s : siblings) links.push_back(contended_links(s));
  // Grow the set of reached links until no further sibling touches it: a
  // sibling that shares a link only with another sibling still slows that
  // one, whose symmetric twin is the simulated group.
  std::vector<char> in(siblings.size(), 0);
  for (bool grew = true; grew;) {
    grew = false;
    for (size_t k = 0; k < siblings.size(); ++k) {
      if (in[k]) continue;
      const bool touches = std::any_of(links[k].begin(), links[k].end(), [&](LinkId l) {
        return reached[static_cast<size_t>(l)] != 0;
      });
      if (!touches) continue;
      in[k] = 1;
      grew = true;
      for (LinkId l : links[k]) reached[static_cast<size_t>(l)] = 1;
    }
  }
  for (size_t k = 0; k < siblings.size(); ++k) {
    if (in[k]) counted.push_back(k);
  }
  return counted;
}

}  // namespace gcsim::models::cluster
