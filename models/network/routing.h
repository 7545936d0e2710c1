// Shortest-path routing over a Fabric that keeps every equal-cost next hop,
// and the per-flow choice among them: ECMP by hashing the flow's 5-tuple
// with a per-switch seed, packet spraying (uniform split), or adaptive
// (least-loaded hop, decided by the caller's load function).
//
// Paths have a fixed shape. Inside a host a GPU reaches another over the
// host's scale-up switches (NVSwitch or PCIe). Between hosts it leaves
// through its own NIC (its rail), crosses network switches only, and
// enters the destination's NIC. Distances between switches come from one
// breadth-first search per destination *attachment* (the switches the
// destination NIC plugs into), not per destination GPU, so a 16K-GPU
// fat-tree needs one table per leaf, a few MB in all.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <utility>
#include <vector>

#include "models/network/fabric.h"

namespace gcsim::models::network {

// What ECMP hashes: the 5-tuple of a RoCE flow reduces to the endpoints and
// the queue pair (UDP source port); `qp` lets one rank pair open several
// flows that may take different paths (NCCL channels).
struct FlowKey {
  int src_rank = 0;
  int dst_rank = 0;
  uint32_t qp = 0;
};

// A route's use of one link: weight 1 for a single path; a sprayed flow puts
// a fraction of its bytes on each of several links.
struct WeightedLink {
  LinkId link = kNoLink;
  double weight = 1.0;
};

class Routing {
 public:
  Routing(const Fabric& fabric, uint64_t seed);

  // Equal-cost next hops from `at` toward GPU `dst_rank`, usable links only,
  // in ascending link id. Empty when `at` cannot reach it.
  std::vector<LinkId> next_hops(NodeId at, int dst_rank) const;

  // The path one ECMP flow takes (links in order); empty if unreachable or
  // src == dst.
  std::vector<LinkId> ecmp_path(const FlowKey& key) const;

  // Picks hop by hop with `choose(at, candidates)` returning an index into
  // the candidates (adaptive routing passes a least-loaded chooser).
  using Chooser = std::function<size_t(NodeId at, const std::vector<LinkId>& candidates)>;
  std::vector<LinkId> path_with(int src_rank, int dst_rank, const Chooser& choose) const;

  // Per-packet round-robin spraying seen as a fluid: every hop splits its
  // share evenly over the equal-cost next hops. Weights of the links leaving
  // any one node on the way sum to the share that reached it.
  std::vector<WeightedLink> spray_weights(int src_rank, int dst_rank) const;

  // Sum of link latencies along a path.
  sim::Duration latency(const std::vector<LinkId>& path) const;
  // The lowest effective bandwidth along a path.
  sim::Bandwidth bottleneck(const std::vector<LinkId>& path) const;

  // The hash ECMP uses at switch `at` for `key` (exposed for tests).
  uint64_t hash_at(NodeId at, const FlowKey& key) const;

  const Fabric& fabric() const { return fabric_; }

 private:
  // Hop distance from each network switch to the destination's attachment
  // (-1 unreachable), indexed by switch_index_.
  using DistanceTable = std::vector<int32_t>;
  const DistanceTable& table_for(NodeId dst_nic) const;
  std::vector<NodeId> attachment_of(NodeId nic) const;
  std::vector<LinkId> in_host_next_hops(NodeId at, NodeId dst_gpu) const;
  bool in_host_reachable(NodeId src_gpu, NodeId dst_gpu) const;
  // The node traffic to `dst_rank` enters the network through (its NIC, or
  // the GPU itself where a custom fabric plugs GPUs into switches).
  NodeId entry_of(int rank) const;
  bool is_switch(NodeId n) const;

  const Fabric& fabric_;
  uint64_t seed_;
  std::vector<int32_t> switch_index_;  // node id -> dense switch index, -1 otherwise
  int num_switches_ = 0;
  // Cached per attachment, dropped when the fabric's link states change.
  mutable uint64_t cached_version_ = 0;
  mutable std::map<std::vector<NodeId>, DistanceTable> tables_;
};

}  // namespace gcsim::models::network
