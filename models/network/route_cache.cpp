#include "models/network/route_cache.h"

#include <algorithm>
#include <cstring>

namespace gcsim::models::network {

uint64_t RouteCache::hash(const FlowKey& key) {
  // splitmix64's finalizer over the packed key; ranks < 2^24 and qp < 2^16
  // keep the packing collision-free in practice (a collision costs a probe).
  uint64_t x = (static_cast<uint64_t>(static_cast<uint32_t>(key.src_rank)) << 40) ^
               (static_cast<uint64_t>(static_cast<uint32_t>(key.dst_rank)) << 16) ^ key.qp;
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

size_t RouteCache::probe(const FlowKey& key) const {
  const size_t mask = slots_.size() - 1;
  for (size_t i = hash(key) & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.entry < 0 || (s.src == key.src_rank && s.dst == key.dst_rank && s.qp == key.qp)) {
      return i;
    }
  }
}

RouteCache::Route RouteCache::view(const Entry& e) const {
  return {std::span<const WeightedLink>(pool_.data() + e.offset, e.count), e.latency, e.id};
}

uint64_t RouteCache::content_hash(const std::vector<WeightedLink>& links,
                                  sim::Duration latency) {
  uint64_t h = 0xcbf29ce484222325ULL ^ static_cast<uint64_t>(latency.ps());
  for (const WeightedLink& wl : links) {
    uint64_t w = 0;
    std::memcpy(&w, &wl.weight, sizeof(w));
    for (uint64_t v : {static_cast<uint64_t>(static_cast<uint32_t>(wl.link)), w}) {
      h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    }
  }
  return h;
}

int32_t RouteCache::id_for(const std::vector<WeightedLink>& links, sim::Duration latency) {
  const uint64_t h = content_hash(links, latency);
  auto [first, last] = by_content_.equal_range(h);
  for (auto it = first; it != last; ++it) {
    const Entry& e = entries_[static_cast<size_t>(it->second)];
    if (e.latency != latency || e.count != links.size()) continue;
    if (std::equal(links.begin(), links.end(), pool_.begin() + e.offset,
                   [](const WeightedLink& a, const WeightedLink& b) {
                     return a.link == b.link && a.weight == b.weight;
                   })) {
      return e.id;
    }
  }
  by_content_.emplace(h, static_cast<int32_t>(entries_.size()));  // the entry about to be added
  return next_id_++;
}

void RouteCache::follow(int32_t e) {
  if (last_ >= 0) entries_[static_cast<size_t>(last_)].next = e;
  last_ = e;
}

bool RouteCache::find(const FlowKey& key, Route& out) {
  if (last_ >= 0) {
    // The predicted successor: entries sit in insertion order, so a
    // repeated sequence walks them nearly sequentially (no hash, no probe).
    const int32_t p = entries_[static_cast<size_t>(last_)].next;
    if (p >= 0) {
      const Entry& e = entries_[static_cast<size_t>(p)];
      if (e.key.src_rank == key.src_rank && e.key.dst_rank == key.dst_rank &&
          e.key.qp == key.qp) {
        last_ = p;
        out = view(e);
        return true;
      }
    }
  }
  if (slots_.empty()) return false;
  const Slot& s = slots_[probe(key)];
  if (s.entry < 0) return false;
  follow(s.entry);
  out = view(entries_[static_cast<size_t>(s.entry)]);
  return true;
}

RouteCache::Route RouteCache::insert(const FlowKey& key, const std::vector<WeightedLink>& links,
                                     sim::Duration latency) {
  if ((entries_.size() + 1) * 2 > slots_.size()) grow();
  Entry e;
  e.offset = static_cast<uint32_t>(pool_.size());
  e.count = static_cast<uint32_t>(links.size());
  e.latency = latency;
  e.id = id_for(links, latency);
  e.key = key;
  pool_.insert(pool_.end(), links.begin(), links.end());
  Slot& s = slots_[probe(key)];
  const auto index = static_cast<int32_t>(entries_.size());
  s = Slot{key.src_rank, key.dst_rank, key.qp, index};
  entries_.push_back(e);
  follow(index);
  return view(e);
}

void RouteCache::grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.empty() ? 1024 : old.size() * 2, Slot{});
  for (const Slot& s : old) {
    if (s.entry >= 0) slots_[probe({s.src, s.dst, s.qp})] = s;
  }
}

void RouteCache::clear() {
  slots_.clear();
  entries_.clear();
  pool_.clear();
  by_content_.clear();
  next_id_ = 0;
  last_ = -1;
}

}  // namespace gcsim::models::network
