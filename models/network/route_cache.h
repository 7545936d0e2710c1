// The flow model's routes by flow key: an open-addressing table (linear
// probing, keys inline) over one pool of links, so that a lookup costs one
// cache line for the key and one for the links instead of a chain of
// nodes. An EP 64 all-to-all starts 7,616 flows whose routes repeat every
// layer; finding them again was 29% of a DeepSeek-V3 flow run.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "models/network/routing.h"
#include "sim/engine/time.h"

namespace gcsim::models::network {

class RouteCache {
 public:
  struct Route {
    std::span<const WeightedLink> links;  // valid until the next insert or clear
    sim::Duration latency;
    // Routes with the same links, weights and latency share an id (dense,
    // from 0, until clear()): keys that hash onto one path are one route.
    int32_t id = -1;
  };

  // The route stored for `key`, or false when none is. Callers that look
  // keys up in a repeating order (a collective's transfers, phase after
  // phase) find each one without hashing: every entry remembers the entry
  // looked up after it, which is tried first.
  bool find(const FlowKey& key, Route& out);
  // Stores `links` (may be empty: unroutable) for `key`, not yet present.
  Route insert(const FlowKey& key, const std::vector<WeightedLink>& links,
               sim::Duration latency);
  void clear();
  size_t size() const { return entries_.size(); }
  // Distinct routes stored (ids are below this).
  size_t num_routes() const { return next_id_; }

 private:
  struct Slot {
    int32_t src = 0;
    int32_t dst = 0;
    uint32_t qp = 0;
    int32_t entry = -1;  // index into entries_, -1 when free
  };
  struct Entry {
    uint32_t offset = 0;  // into pool_
    uint32_t count = 0;
    sim::Duration latency;
    int32_t id = -1;
    int32_t next = -1;  // the entry found or inserted after this one, last time
    FlowKey key;
  };

  static uint64_t hash(const FlowKey& key);
  static uint64_t content_hash(const std::vector<WeightedLink>& links, sim::Duration latency);
  // The id of a stored route equal to `links` and `latency`, or a new one.
  int32_t id_for(const std::vector<WeightedLink>& links, sim::Duration latency);
  size_t probe(const FlowKey& key) const;  // the key's slot, or the free slot it would take
  void grow();
  Route view(const Entry& e) const;

  std::vector<Slot> slots_;  // power-of-two size, at most half full
  std::vector<Entry> entries_;
  std::vector<WeightedLink> pool_;
  // Content hash -> entries with that hash (the first of each distinct route).
  std::unordered_multimap<uint64_t, int32_t> by_content_;
  int32_t next_id_ = 0;
  int32_t last_ = -1;  // the entry found or inserted last
  // Records `e` as the successor of the last entry and makes it the last.
  void follow(int32_t e);
};

}  // namespace gcsim::models::network
