#include "models/network/link_ledger.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace gcsim::models::network {

LinkFootprint footprint_of(const Routing& routing, const std::vector<RankTraffic>& traffic) {
  std::map<LinkId, double> per_link;  // ordered: the footprint is deterministic
  LinkFootprint f;
  for (const RankTraffic& t : traffic) {
    const std::vector<LinkId> path = routing.ecmp_path({t.src, t.dst, t.qp});
    if (path.empty()) continue;
    for (LinkId l : path) per_link[l] += t.bytes;
    f.delivered += t.bytes;
    ++f.transfers;
  }
  f.per_link.assign(per_link.begin(), per_link.end());
  return f;
}

double LinkLedger::utilization(LinkId l, sim::Duration elapsed) const {
  const double seconds = elapsed.seconds();
  if (seconds <= 0.0) return 0.0;
  // Nominal bandwidth: a degraded link running flat out shows below 1.
  return bytes_[static_cast<size_t>(l)] /
         (fabric_.link(l).bandwidth.bytes_per_s() * seconds);
}

void LinkLedger::fill(NetworkStats& stats, sim::Duration elapsed, size_t top) const {
  std::vector<LinkId> used;
  for (size_t l = 0; l < bytes_.size(); ++l) {
    if (bytes_[l] > 0.0) used.push_back(static_cast<LinkId>(l));
  }
  auto more_loaded = [&](LinkId a, LinkId b) {
    const double ua = utilization(a, elapsed), ub = utilization(b, elapsed);
    return ua != ub ? ua > ub : a < b;
  };
  const size_t n = std::min(top, used.size());
  std::partial_sort(used.begin(), used.begin() + static_cast<std::ptrdiff_t>(n), used.end(),
                    more_loaded);
  stats.max_link_utilization = n > 0 ? utilization(used.front(), elapsed) : 0.0;
  stats.busiest_links.clear();
  for (size_t i = 0; i < n; ++i) {
    const LinkId l = used[i];
    stats.busiest_links.push_back({l, fabric_.link(l).name,
                                   sim::Bytes(static_cast<int64_t>(std::llround(bytes_[l]))),
                                   utilization(l, elapsed), 0.0});
  }
}

}  // namespace gcsim::models::network
