#include "models/gpu/attention_grid_tail.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <mutex>
#include <numeric>
#include <queue>
#include <tuple>

namespace gcsim::models::gpu {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

using TailKey = std::tuple<int, int64_t, int64_t, bool, bool, int64_t, int64_t, int64_t, int64_t,
                           double, double>;

}  // namespace

std::vector<int64_t> blocks_per_cta(const AttentionShape& s, int64_t tile_m, int64_t tile_n) {
  const int64_t q = s.q_len, kv = s.kv_len > 0 ? s.kv_len : s.q_len;
  std::vector<int64_t> blocks;
  if (!s.backward) {
    for (int64_t i = 0; i < ceil_div(q, tile_m); ++i) {
      int64_t visible = kv;
      if (s.causal) {
        const int64_t last_row = std::min((i + 1) * tile_m, q) - 1;
        visible = std::clamp<int64_t>(kv - q + last_row + 1, 0, kv);
      }
      blocks.push_back(ceil_div(visible, tile_n));
    }
    return blocks;
  }
  const int64_t q_blocks = ceil_div(q, tile_m);
  for (int64_t j = 0; j < ceil_div(kv, tile_n); ++j) {
    int64_t count = q_blocks;
    if (s.causal) {
      // Row r sees keys below kv - q + r + 1: the block's first key j*n is
      // first seen by row j*n - (kv - q).
      const int64_t first_row = std::max<int64_t>(0, j * tile_n - (kv - q));
      count = first_row >= q ? 0 : q_blocks - first_row / tile_m;
    }
    blocks.push_back(count);
  }
  return blocks;
}

double list_makespan(const std::vector<int64_t>& works, int64_t repeats, int64_t slots) {
  if (slots < 1 || works.empty() || repeats < 1) return 0.0;
  // Min-heap of the slots' finishing times; integers keep it exact.
  std::priority_queue<int64_t, std::vector<int64_t>, std::greater<>> free;
  for (int64_t i = 0; i < slots; ++i) free.push(0);
  int64_t last = 0;
  for (int64_t r = 0; r < repeats; ++r) {
    for (int64_t w : works) {
      const int64_t end = free.top() + w;
      free.pop();
      free.push(end);
      last = std::max(last, end);
    }
  }
  return static_cast<double>(last);
}

CtaSharing cta_sharing(const FusedAttentionPass& p) {
  return CtaSharing{p.ctas_per_sm, p.lone_cta_fraction, p.cta_latency_blocks};
}

double shared_makespan(const std::vector<int64_t>& works, int64_t repeats, int64_t sm_count,
                       const CtaSharing& sh) {
  if (sm_count < 1 || works.empty() || repeats < 1) return 0.0;
  if (sh.trivial()) return list_makespan(works, repeats, sm_count);
  const int64_t k = std::max<int64_t>(1, sh.ctas_per_sm);
  const int64_t ctas = repeats * static_cast<int64_t>(works.size());
  // CTAs an SM holds on average while the grid runs.
  const double n = std::clamp(static_cast<double>(ctas) / static_cast<double>(sm_count), 1.0,
                              static_cast<double>(k));
  const double lone = sh.lone_fraction > 0.0 ? sh.lone_fraction : 1.0;
  std::vector<double> time(works.size());
  for (size_t i = 0; i < works.size(); ++i) {
    const double w = static_cast<double>(works[i]);
    time[i] = std::max((sh.latency_blocks + w) / lone, n * w);
  }
  std::priority_queue<double, std::vector<double>, std::greater<>> free;
  for (int64_t i = 0; i < std::min(sm_count * k, ctas); ++i) free.push(0.0);
  double last = 0.0;
  for (int64_t r = 0; r < repeats; ++r) {
    for (double t : time) {
      const double end = free.top() + t;
      free.pop();
      free.push(end);
      last = std::max(last, end);
    }
  }
  return last;
}

double attention_grid_tail(AttentionFamily family, const AttentionShape& s, int64_t tile_m,
                           int64_t tile_n, int64_t sm_count, const CtaSharing& sharing,
                           int64_t hw_ctas_per_sm) {
  if (sm_count < 1) return 1.0;
  // Several CTAs a SM with nothing measured about how they share it
  // (FlashAttention-2's 4-warp forward: a lone 4-warp CTA gets more than
  // half the SM, not all of it): the wave model.
  if (sharing.trivial() && (hw_ctas_per_sm > 1 || !s.causal)) return 1.0;
  const int64_t pairs = s.batch * s.heads;
  const TailKey key{static_cast<int>(family), s.q_len, s.kv_len > 0 ? s.kv_len : s.q_len,
                    s.backward, s.causal, tile_m * 100000 + tile_n, pairs, sm_count,
                    sharing.ctas_per_sm, sharing.lone_fraction, sharing.latency_blocks};
  static std::mutex mutex;
  static std::map<TailKey, double> cache;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (const auto it = cache.find(key); it != cache.end()) return it->second;
  }
  std::vector<int64_t> works = blocks_per_cta(s, tile_m, tile_n);
  if (family == AttentionFamily::flash3 && s.causal) {
    std::sort(works.begin(), works.end(), std::greater<>());
  }
  const int64_t ctas = pairs * static_cast<int64_t>(works.size());
  const double total = static_cast<double>(pairs) *
                       static_cast<double>(std::accumulate(works.begin(), works.end(), int64_t{0}));
  double tail = 1.0;
  if (ctas > 0 && total > 0.0) {
    // The wave model: ceil(tiles / SMs) waves of the mean tile, a tile
    // being an SM's co-resident CTAs.
    const int64_t tiles = ceil_div(ctas, std::max<int64_t>(1, sharing.ctas_per_sm));
    const int64_t waves = ceil_div(tiles, sm_count);
    const double mean = total / static_cast<double>(tiles);
    tail = shared_makespan(works, pairs, sm_count, sharing) / (static_cast<double>(waves) * mean);
  }
  const std::lock_guard<std::mutex> lock(mutex);
  cache.emplace(key, tail);
  return tail;
}

}  // namespace gcsim::models::gpu
