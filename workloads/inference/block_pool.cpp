#include "workloads/inference/block_pool.h"

#include <stdexcept>

namespace gcsim::workloads::inference {

BlockPool::BlockPool(int64_t num_blocks)
    : ref_(static_cast<size_t>(num_blocks), 0),
      hash_(static_cast<size_t>(num_blocks), 0),
      has_hash_(static_cast<size_t>(num_blocks), 0),
      prev_(static_cast<size_t>(num_blocks), -1),
      next_(static_cast<size_t>(num_blocks), -1),
      in_free_(static_cast<size_t>(num_blocks), 0) {
  // All blocks start free, in id order (vLLM's initial queue).
  for (int32_t b = 0; b < static_cast<int32_t>(num_blocks); ++b) push_tail(b);
}

void BlockPool::unlink(int32_t b) {
  const size_t i = static_cast<size_t>(b);
  if (prev_[i] >= 0) next_[static_cast<size_t>(prev_[i])] = next_[i];
  else head_ = next_[i];
  if (next_[i] >= 0) prev_[static_cast<size_t>(next_[i])] = prev_[i];
  else tail_ = prev_[i];
  prev_[i] = next_[i] = -1;
  in_free_[i] = 0;
  --free_count_;
}

void BlockPool::push_tail(int32_t b) {
  const size_t i = static_cast<size_t>(b);
  prev_[i] = tail_;
  next_[i] = -1;
  if (tail_ >= 0) next_[static_cast<size_t>(tail_)] = b;
  else head_ = b;
  tail_ = b;
  in_free_[i] = 1;
  ++free_count_;
}

int32_t BlockPool::take() {
  if (head_ < 0) throw std::logic_error("BlockPool::take: no free block");
  const int32_t b = head_;
  unlink(b);
  const size_t i = static_cast<size_t>(b);
  if (has_hash_[i]) {
    auto it = cached_.find(hash_[i]);
    if (it != cached_.end() && it->second == b) cached_.erase(it);
    has_hash_[i] = 0;
    ++evictions_;
  }
  ref_[i] = 1;
  return b;
}

void BlockPool::touch(int32_t b) {
  const size_t i = static_cast<size_t>(b);
  if (in_free_[i]) unlink(b);
  ++ref_[i];
}

void BlockPool::release(int32_t b) {
  const size_t i = static_cast<size_t>(b);
  if (ref_[i] <= 0) throw std::logic_error("BlockPool::release: block has no user");
  if (--ref_[i] == 0) push_tail(b);
}

std::optional<int32_t> BlockPool::lookup(uint64_t hash) const {
  auto it = cached_.find(hash);
  if (it == cached_.end()) return std::nullopt;
  return it->second;
}

void BlockPool::register_hash(int32_t b, uint64_t hash) {
  const size_t i = static_cast<size_t>(b);
  if (has_hash_[i]) return;
  hash_[i] = hash;
  has_hash_[i] = 1;
  cached_.emplace(hash, b);  // keeps an existing entry for the same hash
}

std::vector<int32_t> BlockPool::free_order() const {
  std::vector<int32_t> v;
  for (int32_t b = head_; b >= 0; b = next_[static_cast<size_t>(b)]) v.push_back(b);
  return v;
}

}  // namespace gcsim::workloads::inference
