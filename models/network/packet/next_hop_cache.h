// The equal-cost next hops toward each destination, per node, computed once
// by Routing::next_hops and kept until a link changes state (the fabric's
// version moves), with the round-robin cursor that per-packet spraying
// advances at each switch.
#pragma once

#include <cstdint>
#include <deque>
#include <unordered_map>
#include <vector>

#include "models/network/routing.h"

namespace gcsim::models::network {

class NextHopCache {
 public:
  struct Entry {
    std::vector<LinkId> links;  // usable equal-cost next hops, ascending id
    uint32_t cursor = 0;        // spraying: the next one to use
  };

  explicit NextHopCache(const Routing& routing) : routing_(routing) {}

  // Valid until the next lookup after a link state change.
  Entry& lookup(NodeId at, int dst_rank) {
    if (version_ != routing_.fabric().version()) {
      index_.clear();
      entries_.clear();
      version_ = routing_.fabric().version();
    }
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(at)) << 32) |
                         static_cast<uint32_t>(dst_rank);
    auto [it, fresh] = index_.try_emplace(key, static_cast<uint32_t>(entries_.size()));
    if (fresh) entries_.push_back({routing_.next_hops(at, dst_rank), 0});
    return entries_[it->second];
  }

 private:
  const Routing& routing_;
  uint64_t version_ = 0;
  std::unordered_map<uint64_t, uint32_t> index_;
  std::deque<Entry> entries_;  // stable addresses while growing
};

}  // namespace gcsim::models::network
