// The transfers a network model could not route, with what a user needs to
// see why: endpoints, size, time and the links that were down. Every model
// keeps one, so a partitioned fabric reads the same in each.
#pragma once

#include <string>
#include <vector>

#include "models/network/fabric.h"
#include "models/network/network_model.h"

namespace gcsim::models::network {

class UnroutableLog {
 public:
  // Details are kept for the first kKept transfers; later ones only count.
  static constexpr size_t kKept = 8;

  void record(const Fabric& fabric, int src_rank, int dst_rank, sim::Bytes bytes, sim::Time when);
  int64_t count() const { return count_; }
  // Fills stats.unroutable and stats.unroutable_transfers.
  void fill(NetworkStats& stats) const;

 private:
  int64_t count_ = 0;
  std::vector<UnroutableTransfer> kept_;
};

// "rank 0 (node0/gpu0) -> rank 8 (node1/gpu0), 256 MiB at 1 ms: no path
// while these links are down: node0/nic0<->leaf0" (a cable when both of its
// directions are down; at most 8 named).
std::string describe_unroutable(const Fabric& fabric, const UnroutableTransfer& t);

}  // namespace gcsim::models::network
