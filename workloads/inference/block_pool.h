// The physical KV-cache blocks of one replica, as vLLM V1's BlockPool keeps
// them: a reference count per block, a free queue ordered for eviction
// (least recently freed first), and the prefix cache mapping a full block's
// chained hash to the block that holds it. A freed block keeps its hash (and
// stays a prefix-cache hit) until it is taken from the head of the free
// queue for a new use; taking a cached block with no users removes it from
// the queue (vLLM's touch).
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace gcsim::workloads::inference {

class BlockPool {
 public:
  explicit BlockPool(int64_t num_blocks);

  int64_t num_blocks() const { return static_cast<int64_t>(ref_.size()); }
  // Blocks with no user (some may still be prefix-cache hits).
  int64_t num_free() const { return free_count_; }
  int64_t num_used() const { return num_blocks() - free_count_; }

  // Takes the block at the head of the free queue for a new use (ref 1),
  // evicting its cache entry if it had one. The caller checks num_free().
  int32_t take();
  // One more user of `block` (a prefix-cache hit); out of the free queue if
  // it had none.
  void touch(int32_t block);
  // One user less; with none left the block goes to the tail of the free
  // queue, keeping its hash.
  void release(int32_t block);

  // The block holding `hash`, if cached.
  std::optional<int32_t> lookup(uint64_t hash) const;
  // Records that `block` (full, in use) holds `hash`. The first block
  // registered for a hash stays the one returned by lookup(), as in vLLM.
  void register_hash(int32_t block, uint64_t hash);

  int32_t ref_count(int32_t block) const { return ref_[static_cast<size_t>(block)]; }
  bool is_free(int32_t block) const { return in_free_[static_cast<size_t>(block)] != 0; }
  // The free queue, head (next evicted) first: for tests and debugging.
  std::vector<int32_t> free_order() const;
  int64_t evictions() const { return evictions_; }

 private:
  void unlink(int32_t b);
  void push_tail(int32_t b);

  std::vector<int32_t> ref_;
  std::vector<uint64_t> hash_;      // 0: none
  std::vector<uint8_t> has_hash_;
  std::vector<int32_t> prev_, next_;  // free queue links, -1 at the ends
  std::vector<uint8_t> in_free_;
  int32_t head_ = -1, tail_ = -1;
  int64_t free_count_ = 0;
  int64_t evictions_ = 0;
  std::unordered_map<uint64_t, int32_t> cached_;
};

}  // namespace gcsim::workloads::inference
