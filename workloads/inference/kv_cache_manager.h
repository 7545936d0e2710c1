// PagedAttention block accounting for the requests of one replica (vLLM's
// KVCacheManager): how many blocks a request holds, growing them as its
// tokens are scheduled, prefix-cache lookups by chained block hashes, and
// freeing in reverse order so that a request's last blocks are evicted
// first and its shared prefix survives longest.
//
// Token content is not simulated, so a block's hash is derived from what
// decides it: the shared prefix (prefix_id, block index) for blocks wholly
// inside a request's shared prefix, else (request id, block index). The
// hash of block i chains the hash of block i-1, as vLLM's does, so a hit
// on block i implies the whole prefix before it matches.
#pragma once

#include <cstdint>

#include "workloads/inference/block_pool.h"
#include "workloads/inference/request.h"

namespace gcsim::workloads::inference {

class KvCacheManager {
 public:
  KvCacheManager(int64_t num_blocks, int64_t block_size, bool prefix_caching);

  int64_t block_size() const { return block_size_; }
  bool prefix_caching() const { return prefix_caching_; }
  const BlockPool& pool() const { return pool_; }
  int64_t blocks_for(int64_t tokens) const { return (tokens + block_size_ - 1) / block_size_; }

  // For a request holding no blocks: the tokens of its leading full blocks
  // found in the prefix cache, at most num_tokens - 1 (vLLM V1: a full hit
  // still recomputes the last token, and since hits are whole blocks, the
  // whole last block). 0 without prefix caching. Counts a query.
  int64_t cached_prefix(Request& r);

  // Blocks that allocate(r, total_tokens, hit_tokens, ...) would take from
  // the free queue (the new ones plus the cached hits nobody holds).
  int64_t blocks_to_take(const Request& r, int64_t total_tokens, int64_t hit_tokens) const;

  // Makes `r` hold blocks for `total_tokens` tokens: first the cached
  // blocks of its first `hit_tokens` tokens (a cached_prefix() result of
  // this same step), then new blocks from the head of the free queue.
  // Full blocks among the first `cache_tokens` tokens (whose KV exists once
  // this step ends) enter the prefix cache. Returns false and changes
  // nothing when free blocks are short.
  bool allocate(Request& r, int64_t total_tokens, int64_t hit_tokens, int64_t cache_tokens);

  // Releases every block of `r`, last block first.
  void free(Request& r);

  int64_t num_blocks() const { return pool_.num_blocks(); }
  int64_t used_blocks() const { return pool_.num_used(); }
  int64_t free_blocks() const { return pool_.num_free(); }
  int64_t peak_used_blocks() const { return peak_used_; }
  int64_t queried_tokens() const { return queried_tokens_; }
  int64_t hit_tokens() const { return hit_tokens_; }

  // The chained hash of r's block `index` (its tokens must be known).
  uint64_t block_hash(Request& r, int64_t index) const;

 private:
  void ensure_hashes(Request& r, int64_t full_blocks) const;

  int64_t block_size_;
  bool prefix_caching_;
  BlockPool pool_;
  int64_t peak_used_ = 0;
  int64_t queried_tokens_ = 0;
  int64_t hit_tokens_ = 0;
};

}  // namespace gcsim::workloads::inference
