// Bytes carried per link over a run, and the busiest links from them: the
// bookkeeping every network model shares for its stats.
#pragma once

#include <vector>

#include "models/network/fabric.h"
#include "models/network/network_model.h"

namespace gcsim::models::network {

class LinkLedger {
 public:
  explicit LinkLedger(const Fabric& fabric) : fabric_(fabric), bytes_(fabric.num_links(), 0.0) {}

  void add(LinkId l, double bytes) { bytes_[static_cast<size_t>(l)] += bytes; }
  // A footprint's bytes per link, times `scale`.
  void add(const LinkFootprint& f, double scale) {
    for (const auto& [l, per] : f.per_link) add(l, per * scale);
  }
  double bytes(LinkId l) const { return bytes_[static_cast<size_t>(l)]; }

  // bytes / (effective bandwidth × elapsed) of one link.
  double utilization(LinkId l, sim::Duration elapsed) const;
  // Fills max_link_utilization and busiest_links (at most `top`, most
  // loaded first, ties by link id) into `stats`.
  void fill(NetworkStats& stats, sim::Duration elapsed, size_t top = 10) const;

 private:
  const Fabric& fabric_;
  std::vector<double> bytes_;
};

// Each pair's bytes on the links of its ECMP path (queue pair 0).
LinkFootprint footprint_of(const Routing& routing, const std::vector<RankTraffic>& traffic);

}  // namespace gcsim::models::network
