// Token routing of one MoE layer under expert parallelism: how many token
// copies each source EP rank sends to each expert, for one (layer,
// micro-batch). Experts [r*E/R, (r+1)*E/R) live on EP rank r, as in
// Megatron-LM and DeepSeek-V3.
//
// Expert popularity is a Zipf law (share of the i-th most popular expert
// ∝ 1/(i+1)^skew), with the popular experts on the lowest indices or on a
// seeded permutation per layer, or the copies per expert are given exactly.
// A token picks top_k distinct experts, so no expert takes more than
// `tokens` copies from one source: shares above 1/top_k are capped and
// their excess spread over the others in proportion (water filling).
// Expected counts are rounded by largest remainder (ties to the lower
// index); `sample` draws them instead, per (layer, micro-batch, source).
//
// Capacity (GShard, Lepikhin et al. 2020; Switch, Fedus et al. 2021; as
// Megatron-LM computes it per rank): each expert takes at most
//   C = ceil(capacity_factor x tokens x top_k / experts)
// copies from each source; the rest are dropped, and pad_to_capacity fills
// every expert to C. DeepSeek-V3's auxiliary-loss-free balancing is a
// `balance` in [0, 1]: the fraction of the skew its bias terms remove
// (shares (1-balance) x Zipf + balance / E).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gcsim::workloads::moe {

enum class HotPlacement { index, permuted };

struct RoutingConfig {
  int experts = 8;                    // routed experts of the layer
  int top_k = 2;                      // experts per token (distinct)
  int ranks = 1;                      // EP ranks; divides experts
  int64_t tokens = 0;                 // tokens per source rank and micro-batch
  double skew = 0.0;                  // Zipf exponent of expert popularity (0: uniform)
  std::vector<int64_t> expert_tokens; // copies per expert over all sources; empty: from skew
  HotPlacement placement = HotPlacement::index;  // where the popular experts are
  bool sample = false;                // draw counts per (layer, micro-batch) instead of expecting them
  double balance = 0.0;               // fraction of the skew removed by balancing, 0..1
  double capacity_factor = 0.0;       // 0: dropless; else capacity per expert and source
  bool pad_to_capacity = false;       // every expert filled to its capacity (needs capacity_factor)
  uint64_t seed = 1;                  // placement and sampling streams
};

// "" when `c` is consistent, else the first problem (what a loader reports
// against the key it names first in the message).
std::string check_routing(const RoutingConfig& c);

class Routing {
 public:
  Routing(int ranks, int experts, int top_k, int64_t tokens);

  int ranks() const { return ranks_; }
  int experts() const { return experts_; }
  int top_k() const { return top_k_; }
  int64_t tokens() const { return tokens_; }
  int experts_per_rank() const { return experts_ / ranks_; }
  int owner(int expert) const { return expert / experts_per_rank(); }

  // Rows an expert processes from `src`: the kept copies plus padding.
  int64_t rows(int src, int expert) const { return at(rows_, src, expert); }
  int64_t dropped(int src, int expert) const { return at(dropped_, src, expert); }
  int64_t padding(int src, int expert) const { return at(padding_, src, expert); }
  void set(int src, int expert, int64_t kept, int64_t dropped, int64_t padding);

  // Rows of `expert` over every source.
  int64_t expert_rows(int expert) const;
  // Rows of each of `rank`'s local experts, in expert order.
  std::vector<int64_t> local_rows(int rank) const;
  // Rows `src` sends to `dst` (a ranks x ranks matrix row-major by source;
  // the diagonal stays on the GPU).
  std::vector<int64_t> rank_matrix() const;
  int64_t received(int dst) const;  // over every source, its own included
  // The rank whose experts get the most rows (lowest on ties).
  int hot_rank() const;
  int64_t total_dropped() const;
  int64_t total_padding() const;
  // Most rows of a rank's experts over the mean (1 = balanced).
  double rank_imbalance() const;

 private:
  int64_t at(const std::vector<int64_t>& v, int src, int expert) const {
    return v[static_cast<size_t>(src) * static_cast<size_t>(experts_) + static_cast<size_t>(expert)];
  }
  int ranks_, experts_, top_k_;
  int64_t tokens_;
  std::vector<int64_t> rows_, dropped_, padding_;  // [src][expert]
};

// Shares of the popularity ranks 0..experts-1 (most popular first):
// Zipf(skew) blended with uniform by `balance`, summing to 1.
std::vector<double> popularity_shares(int experts, double skew, double balance);
// Copies per popularity rank from one source of `tokens` tokens: water-filled
// under the cap `tokens`, rounded by largest remainder to sum tokens x top_k.
std::vector<int64_t> expected_copies(int64_t tokens, int top_k, const std::vector<double>& shares);
// Which expert holds each popularity rank in `layer` (identity for index).
std::vector<int> hot_expert_order(const RoutingConfig& c, int layer);

// The routing of one (layer, micro-batch). `c` must pass check_routing().
Routing route(const RoutingConfig& c, int layer, int micro_batch);

}  // namespace gcsim::workloads::moe
