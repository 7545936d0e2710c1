#include "workloads/inference/kv_cache_manager.h"

#include <algorithm>
#include <stdexcept>

#include "sim/engine/random.h"

namespace gcsim::workloads::inference {

namespace {
constexpr uint64_t kRootHash = 0x6b76636163686530ULL;    // parent of block 0
constexpr uint64_t kPrefixSalt = 0x7072656669780000ULL;  // shared-prefix content
constexpr uint64_t kUniqueSalt = 0x756e697175650000ULL;  // content unique to a request
}  // namespace

KvCacheManager::KvCacheManager(int64_t num_blocks, int64_t block_size, bool prefix_caching)
    : block_size_(block_size), prefix_caching_(prefix_caching), pool_(num_blocks) {}

void KvCacheManager::ensure_hashes(Request& r, int64_t full_blocks) const {
  for (auto i = static_cast<int64_t>(r.hashes.size()); i < full_blocks; ++i) {
    const bool shared = r.prefix_id >= 0 && (i + 1) * block_size_ <= r.prefix_len;
    const uint64_t owner = shared ? static_cast<uint64_t>(r.prefix_id) ^ kPrefixSalt
                                  : static_cast<uint64_t>(r.id) ^ kUniqueSalt;
    const uint64_t content = sim::splitmix64(sim::splitmix64(owner) + static_cast<uint64_t>(i));
    const uint64_t parent = i == 0 ? kRootHash : r.hashes[static_cast<size_t>(i - 1)];
    r.hashes.push_back(sim::splitmix64(parent ^ content));
  }
}

uint64_t KvCacheManager::block_hash(Request& r, int64_t index) const {
  ensure_hashes(r, index + 1);
  return r.hashes[static_cast<size_t>(index)];
}

int64_t KvCacheManager::cached_prefix(Request& r) {
  if (!prefix_caching_ || !r.blocks.empty()) return 0;
  queried_tokens_ += r.num_tokens();
  const int64_t max_blocks = (r.num_tokens() - 1) / block_size_;
  ensure_hashes(r, max_blocks);
  int64_t hits = 0;
  while (hits < max_blocks && pool_.lookup(r.hashes[static_cast<size_t>(hits)])) ++hits;
  hit_tokens_ += hits * block_size_;
  return hits * block_size_;
}

int64_t KvCacheManager::blocks_to_take(const Request& r, int64_t total_tokens,
                                       int64_t hit_tokens) const {
  const int64_t held = static_cast<int64_t>(r.blocks.size());
  const int64_t hit_blocks = held == 0 ? hit_tokens / block_size_ : 0;
  const int64_t fresh = std::max<int64_t>(0, blocks_for(total_tokens) - held - hit_blocks);
  int64_t free_hits = 0;
  for (int64_t i = 0; i < hit_blocks; ++i) {
    const auto b = pool_.lookup(r.hashes[static_cast<size_t>(i)]);
    if (b && pool_.is_free(*b)) ++free_hits;
  }
  return fresh + free_hits;
}

bool KvCacheManager::allocate(Request& r, int64_t total_tokens, int64_t hit_tokens,
                              int64_t cache_tokens) {
  if (blocks_to_take(r, total_tokens, hit_tokens) > pool_.num_free()) return false;
  if (r.blocks.empty() && hit_tokens > 0) {
    const int64_t hit_blocks = hit_tokens / block_size_;
    for (int64_t i = 0; i < hit_blocks; ++i) {
      const auto b = pool_.lookup(r.hashes[static_cast<size_t>(i)]);
      if (!b) throw std::logic_error("KvCacheManager::allocate: prefix hit no longer cached");
      pool_.touch(*b);
      r.blocks.push_back(*b);
    }
    r.registered_blocks = hit_blocks;
  }
  while (static_cast<int64_t>(r.blocks.size()) < blocks_for(total_tokens)) {
    r.blocks.push_back(pool_.take());
  }
  if (prefix_caching_) {
    const int64_t full = std::min<int64_t>(cache_tokens / block_size_,
                                           static_cast<int64_t>(r.blocks.size()));
    ensure_hashes(r, full);
    for (int64_t i = r.registered_blocks; i < full; ++i) {
      pool_.register_hash(r.blocks[static_cast<size_t>(i)], r.hashes[static_cast<size_t>(i)]);
    }
    r.registered_blocks = std::max(r.registered_blocks, full);
  }
  peak_used_ = std::max(peak_used_, pool_.num_used());
  return true;
}

void KvCacheManager::free(Request& r) {
  for (auto it = r.blocks.rbegin(); it != r.blocks.rend(); ++it) pool_.release(*it);
  r.blocks.clear();
  r.registered_blocks = 0;
}

}  // namespace gcsim::workloads::inference
