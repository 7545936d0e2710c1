#include "workloads/moe/moe_routing.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>
#include <stdexcept>

#include "sim/engine/random.h"

namespace gcsim::workloads::moe {

std::string check_routing(const RoutingConfig& c) {
  if (c.experts < 1) return "experts must be at least 1";
  if (c.ranks < 1) return "ranks must be at least 1";
  if (c.experts % c.ranks != 0) {
    return "experts (" + std::to_string(c.experts) + ") must be a multiple of the EP ranks (" +
           std::to_string(c.ranks) + ")";
  }
  if (c.top_k < 1 || c.top_k > c.experts) {
    return "top_k must be between 1 and experts (" + std::to_string(c.experts) + ")";
  }
  if (c.tokens < 1) return "tokens must be at least 1";
  if (!(c.skew >= 0.0) || c.skew > 10.0) return "skew must be in [0, 10]";
  if (!(c.balance >= 0.0) || c.balance > 1.0) return "balance must be in [0, 1]";
  if (!(c.capacity_factor >= 0.0) || c.capacity_factor > 1e6) {
    return "capacity_factor must be 0 (dropless) or positive";
  }
  if (c.pad_to_capacity && c.capacity_factor == 0.0) {
    return "pad_to_capacity needs a capacity_factor";
  }
  if (!c.expert_tokens.empty()) {
    if (static_cast<int>(c.expert_tokens.size()) != c.experts) {
      return "expert_tokens lists " + std::to_string(c.expert_tokens.size()) +
             " experts, the layer has " + std::to_string(c.experts);
    }
    int64_t sum = 0;
    for (int64_t v : c.expert_tokens) {
      if (v < 0) return "expert_tokens must not be negative";
      sum += v;
    }
    const int64_t want = c.tokens * c.top_k * c.ranks;
    if (sum != want) {
      return "expert_tokens sum to " + std::to_string(sum) + " copies; tokens x top_k x ranks = " +
             std::to_string(want);
    }
    for (int64_t v : c.expert_tokens) {
      // Spread evenly, a source's largest share is ceil(v / ranks).
      if ((v + c.ranks - 1) / c.ranks > c.tokens) {
        return "an expert given " + std::to_string(v) + " copies would take more than one copy "
               "of a token from a source (at most tokens x ranks = " +
               std::to_string(c.tokens * c.ranks) + ")";
      }
    }
  }
  return "";
}

Routing::Routing(int ranks, int experts, int top_k, int64_t tokens)
    : ranks_(ranks), experts_(experts), top_k_(top_k), tokens_(tokens) {
  const auto n = static_cast<size_t>(ranks) * static_cast<size_t>(experts);
  rows_.assign(n, 0);
  dropped_.assign(n, 0);
  padding_.assign(n, 0);
}

void Routing::set(int src, int expert, int64_t kept, int64_t dropped, int64_t padding) {
  const size_t i = static_cast<size_t>(src) * static_cast<size_t>(experts_) +
                   static_cast<size_t>(expert);
  rows_[i] = kept + padding;
  dropped_[i] = dropped;
  padding_[i] = padding;
}

int64_t Routing::expert_rows(int expert) const {
  int64_t s = 0;
  for (int r = 0; r < ranks_; ++r) s += rows(r, expert);
  return s;
}

std::vector<int64_t> Routing::local_rows(int rank) const {
  std::vector<int64_t> v;
  const int per = experts_per_rank();
  for (int e = rank * per; e < (rank + 1) * per; ++e) v.push_back(expert_rows(e));
  return v;
}

std::vector<int64_t> Routing::rank_matrix() const {
  std::vector<int64_t> m(static_cast<size_t>(ranks_) * static_cast<size_t>(ranks_), 0);
  for (int s = 0; s < ranks_; ++s) {
    for (int e = 0; e < experts_; ++e) {
      m[static_cast<size_t>(s) * static_cast<size_t>(ranks_) + static_cast<size_t>(owner(e))] +=
          rows(s, e);
    }
  }
  return m;
}

int64_t Routing::received(int dst) const {
  int64_t s = 0;
  for (int64_t v : local_rows(dst)) s += v;
  return s;
}

int Routing::hot_rank() const {
  int best = 0;
  for (int r = 1; r < ranks_; ++r) {
    if (received(r) > received(best)) best = r;
  }
  return best;
}

int64_t Routing::total_dropped() const {
  return std::accumulate(dropped_.begin(), dropped_.end(), int64_t{0});
}

int64_t Routing::total_padding() const {
  return std::accumulate(padding_.begin(), padding_.end(), int64_t{0});
}

double Routing::rank_imbalance() const {
  double total = 0, most = 0;
  for (int r = 0; r < ranks_; ++r) {
    const auto v = static_cast<double>(received(r));
    total += v;
    most = std::max(most, v);
  }
  return total > 0 ? most / (total / ranks_) : 1.0;
}

std::vector<double> popularity_shares(int experts, double skew, double balance) {
  std::vector<double> w(static_cast<size_t>(experts));
  double sum = 0;
  for (int i = 0; i < experts; ++i) {
    w[static_cast<size_t>(i)] = 1.0 / std::pow(i + 1.0, skew);
    sum += w[static_cast<size_t>(i)];
  }
  for (double& v : w) v = (1.0 - balance) * v / sum + balance / experts;
  return w;
}

namespace {

// Real-valued copies per popularity rank, none above `cap`: the capped
// ones are fixed at the cap and the rest re-share what is left.
std::vector<double> water_fill(double total, double cap, const std::vector<double>& shares) {
  const size_t n = shares.size();
  std::vector<double> ideal(n, 0.0);
  std::vector<bool> capped(n, false);
  double left = total;
  for (;;) {
    double free = 0;
    for (size_t e = 0; e < n; ++e) free += capped[e] ? 0.0 : shares[e];
    bool changed = false;
    for (size_t e = 0; e < n; ++e) {
      if (!capped[e]) ideal[e] = free > 0 ? left * shares[e] / free : 0.0;
    }
    for (size_t e = 0; e < n; ++e) {
      if (!capped[e] && ideal[e] > cap) {
        capped[e] = true;
        ideal[e] = cap;
        left -= cap;
        changed = true;
      }
    }
    if (!changed) return ideal;
  }
}

}  // namespace

std::vector<int64_t> expected_copies(int64_t tokens, int top_k, const std::vector<double>& shares) {
  const int64_t total = tokens * top_k;
  const std::vector<double> ideal =
      water_fill(static_cast<double>(total), static_cast<double>(tokens), shares);
  const size_t n = shares.size();
  std::vector<int64_t> base(n);
  int64_t sum = 0;
  for (size_t e = 0; e < n; ++e) {
    base[e] = static_cast<int64_t>(ideal[e]);
    sum += base[e];
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return ideal[a] - static_cast<double>(base[a]) > ideal[b] - static_cast<double>(base[b]);
  });
  for (int64_t i = 0; i < total - sum; ++i) ++base[order[static_cast<size_t>(i) % n]];
  return base;
}

std::vector<int> hot_expert_order(const RoutingConfig& c, int layer) {
  std::vector<int> order(static_cast<size_t>(c.experts));
  std::iota(order.begin(), order.end(), 0);
  if (c.placement == HotPlacement::permuted) {
    // The layer's own stream: each layer has its hot experts elsewhere.
    sim::RandomStream(c.seed, "moe placement L" + std::to_string(layer)).shuffle(order);
  }
  return order;
}

namespace {

// A Binomial(n, p) draw. While fewer than 30 successes (or failures) are
// expected, by inversion: the pmf from 0 by its recurrence, exact. Above,
// a normal with the binomial's mean and variance (Box-Muller), rounded and
// clamped to [0, n]: there the binomial's skewness |1 - 2p| / sqrt(np(1-p))
// is below 0.26 (de Moivre-Laplace; the mean and variance are exact). It keeps a draw O(1) where counting each
// copy would cost tokens x top_k uniforms per source (DeepSeek-V3's study
// draws 64 sources x 4096 tokens x 8 copies for each of 58 x 120 layer and
// micro-batch pairs).
int64_t binomial(int64_t n, double p, sim::RandomStream& rng) {
  if (n <= 0 || !(p > 0.0)) return 0;
  if (p >= 1.0) return n;
  const bool flip = p > 0.5;
  const double q = flip ? 1.0 - p : p;
  const double nd = static_cast<double>(n);
  int64_t k = 0;
  if (nd * q < 30.0) {
    // (1-q)^n >= exp(-30 x 1.39) at q <= 1/2: no underflow.
    double pmf = std::pow(1.0 - q, nd);
    double u = rng.uniform();
    while (u > pmf && k < n) {
      u -= pmf;
      pmf *= q / (1.0 - q) * static_cast<double>(n - k) / static_cast<double>(k + 1);
      ++k;
    }
  } else {
    const double u1 = rng.uniform(), u2 = rng.uniform();
    const double z = std::sqrt(-2.0 * std::log1p(-u1)) * std::cos(2.0 * std::numbers::pi * u2);
    const double x = std::round(nd * q + std::sqrt(nd * q * (1.0 - q)) * z);
    k = static_cast<int64_t>(std::clamp(x, 0.0, nd));
  }
  return flip ? n - k : k;
}

// Copies per popularity rank drawn for one source: a multinomial of
// tokens x top_k draws over the water-filled shares (a binomial per rank
// on what the ranks before it left), then any rank above `tokens` gives
// its excess to the rank with the most room (lowest on ties).
std::vector<int64_t> sampled_copies(int64_t tokens, int top_k, const std::vector<double>& shares,
                                    sim::RandomStream& rng) {
  const int64_t total = tokens * top_k;
  const std::vector<double> ideal =
      water_fill(static_cast<double>(total), static_cast<double>(tokens), shares);
  std::vector<int64_t> n(ideal.size(), 0);
  double mass = 0;
  for (double v : ideal) mass += v;
  int64_t left = total;
  for (size_t e = 0; e + 1 < n.size() && left > 0; ++e) {
    const double p = mass > 0 ? std::min(1.0, ideal[e] / mass) : 0.0;
    n[e] = binomial(left, p, rng);
    left -= n[e];
    mass -= ideal[e];
  }
  n.back() += left;
  for (size_t e = 0; e < n.size(); ++e) {
    while (n[e] > tokens) {
      size_t room = e == 0 ? 1 : 0;
      for (size_t j = 0; j < n.size(); ++j) {
        if (j != e && tokens - n[j] > tokens - n[room]) room = j;
      }
      const int64_t move = std::min(n[e] - tokens, tokens - n[room]);
      n[e] -= move;
      n[room] += move;
    }
  }
  return n;
}

}  // namespace

Routing route(const RoutingConfig& c, int layer, int micro_batch) {
  const std::string why = check_routing(c);
  if (!why.empty()) throw std::invalid_argument("moe routing: " + why);
  Routing out(c.ranks, c.experts, c.top_k, c.tokens);
  const std::vector<int> order = hot_expert_order(c, layer);
  const std::vector<double> shares = popularity_shares(c.experts, c.skew, c.balance);
  const int64_t capacity =
      c.capacity_factor > 0
          ? static_cast<int64_t>(std::ceil(c.capacity_factor * static_cast<double>(c.tokens) *
                                           c.top_k / c.experts - 1e-9))
          : -1;
  for (int s = 0; s < c.ranks; ++s) {
    std::vector<int64_t> by_expert(static_cast<size_t>(c.experts), 0);
    if (!c.expert_tokens.empty()) {
      // Spread evenly: each expert's remainder goes to the sources after
      // the last one served, round robin, so every source sends
      // tokens x top_k copies when the list sums to that times the ranks.
      int next = 0;
      for (int e = 0; e < c.experts; ++e) {
        const int64_t v = c.expert_tokens[static_cast<size_t>(e)];
        const auto rem = static_cast<int>(v % c.ranks);
        const bool extra = (s - next + c.ranks) % c.ranks < rem;
        by_expert[static_cast<size_t>(e)] = v / c.ranks + (extra ? 1 : 0);
        next = (next + rem) % c.ranks;
      }
    } else {
      std::vector<int64_t> by_rank;
      if (c.sample) {
        sim::RandomStream rng(c.seed, "moe routing L" + std::to_string(layer) + " mb" +
                                          std::to_string(micro_batch) + " src" +
                                          std::to_string(s));
        by_rank = sampled_copies(c.tokens, c.top_k, shares, rng);
      } else {
        by_rank = expected_copies(c.tokens, c.top_k, shares);
      }
      for (int i = 0; i < c.experts; ++i) {
        by_expert[static_cast<size_t>(order[static_cast<size_t>(i)])] = by_rank[static_cast<size_t>(i)];
      }
    }
    for (int e = 0; e < c.experts; ++e) {
      const int64_t want = by_expert[static_cast<size_t>(e)];
      const int64_t kept = capacity >= 0 ? std::min(want, capacity) : want;
      const int64_t pad = c.pad_to_capacity ? capacity - kept : 0;
      out.set(s, e, kept, want - kept, pad);
    }
  }
  return out;
}

}  // namespace gcsim::workloads::moe
