#include "models/network/unroutable_log.h"

#include <algorithm>

#include "sim/config/unit_parse.h"

namespace gcsim::models::network {

void UnroutableLog::record(const Fabric& fabric, int src_rank, int dst_rank, sim::Bytes bytes,
                           sim::Time when) {
  ++count_;
  if (kept_.size() >= kKept) return;
  UnroutableTransfer t{src_rank, dst_rank, bytes, when, {}};
  // Only kKept scans of the link table per run, so a 160K-link fabric costs
  // nothing noticeable.
  for (size_t l = 0; l < fabric.num_links(); ++l) {
    if (!fabric.link(static_cast<LinkId>(l)).usable()) t.down_links.push_back(static_cast<LinkId>(l));
  }
  kept_.push_back(std::move(t));
}

void UnroutableLog::fill(NetworkStats& stats) const {
  stats.unroutable = count_;
  stats.unroutable_transfers = kept_;
}

std::string describe_unroutable(const Fabric& fabric, const UnroutableTransfer& t) {
  const auto gpu = [&](int rank) {
    return "rank " + std::to_string(rank) + " (" + fabric.node(fabric.gpu_node(rank)).name + ")";
  };
  std::string s = gpu(t.src_rank) + " -> " + gpu(t.dst_rank) + ", " + sim::format_bytes(t.bytes) +
                  " at " + sim::format_duration(t.when - sim::Time::zero()) + ": no path";
  std::vector<std::string> names;
  for (LinkId l : t.down_links) {
    const LinkId r = Fabric::reverse(l);
    const bool cable = std::binary_search(t.down_links.begin(), t.down_links.end(), r);
    if (cable && r < l) continue;  // named once, with its lower-id direction
    std::string name = fabric.link(l).name;
    if (cable) name.replace(name.find("->"), 2, "<->");
    names.push_back(std::move(name));
  }
  if (names.empty()) return s + " (no link is down: the fabric does not join them)";
  s += " while these links are down: ";
  for (size_t i = 0; i < std::min<size_t>(names.size(), 8); ++i) s += (i ? ", " : "") + names[i];
  if (names.size() > 8) s += " and " + std::to_string(names.size() - 8) + " more";
  return s;
}

}  // namespace gcsim::models::network
