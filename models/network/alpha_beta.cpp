#include "models/network/alpha_beta.h"

#include <algorithm>

namespace gcsim::models::network {

namespace {
bool spans_nodes(const AlphaBetaFabric& f, const std::vector<int>& ranks) {
  for (int r : ranks) {
    if (!f.same_node(r, ranks.front())) return true;
  }
  return false;
}
}  // namespace

sim::Bandwidth AlphaBetaFabric::bandwidth_for(const std::vector<int>& ranks) const {
  return spans_nodes(*this, ranks) ? scale_out_bandwidth : scale_up_bandwidth;
}

sim::Duration AlphaBetaFabric::latency_for(const std::vector<int>& ranks) const {
  return spans_nodes(*this, ranks) ? scale_out_latency : scale_up_latency;
}

sim::Duration p2p_time(const AlphaBetaFabric& f, int src, int dst, sim::Bytes bytes) {
  if (src == dst) return sim::Duration::zero();
  const std::vector<int> pair{src, dst};
  return f.latency_for(pair) + sim::transfer_time(bytes, f.bandwidth_for(pair));
}

sim::Duration collective_time(const AlphaBetaFabric& f, CollectiveAlgo algo,
                              const std::vector<int>& ranks, sim::Bytes bytes) {
  const int n = static_cast<int>(ranks.size());
  if (n <= 1) return sim::Duration::zero();
  const sim::Duration alpha = f.latency_for(ranks);
  const sim::Bandwidth beta = f.bandwidth_for(ranks);
  const double s = bytes.as_double();
  const double fraction = static_cast<double>(n - 1) / n;
  switch (algo) {
    case CollectiveAlgo::all_reduce:
      return alpha * (2 * (n - 1)) + sim::transfer_time(2.0 * fraction * s, beta);
    case CollectiveAlgo::all_gather:
    case CollectiveAlgo::reduce_scatter:
    case CollectiveAlgo::all_to_all:
      return alpha * (n - 1) + sim::transfer_time(fraction * s, beta);
    case CollectiveAlgo::broadcast:
    case CollectiveAlgo::reduce:
      return alpha * (n - 1) + sim::transfer_time(s, beta);
  }
  return sim::Duration::zero();
}

std::vector<RankTraffic> collective_traffic(CollectiveAlgo algo, const std::vector<int>& ranks,
                                            sim::Bytes bytes, int root) {
  const size_t n = ranks.size();
  std::vector<RankTraffic> out;
  if (n <= 1) return out;
  const double s = bytes.as_double();
  const double fraction = static_cast<double>(n - 1) / static_cast<double>(n);
  const auto ring = [&](double per_hop) {
    for (size_t i = 0; i < n; ++i) out.push_back({ranks[i], ranks[(i + 1) % n], per_hop});
  };
  switch (algo) {
    case CollectiveAlgo::all_reduce: ring(2.0 * fraction * s); break;
    case CollectiveAlgo::all_gather:
    case CollectiveAlgo::reduce_scatter: ring(fraction * s); break;
    case CollectiveAlgo::broadcast:
    case CollectiveAlgo::reduce: {
      // `root` indexes the group (the IR's convention); out of range: the first.
      const size_t first = root >= 0 && static_cast<size_t>(root) < n ? static_cast<size_t>(root) : 0;
      for (size_t k = 0; k + 1 < n; ++k) {
        const int a = ranks[(first + k) % n], b = ranks[(first + k + 1) % n];
        if (algo == CollectiveAlgo::broadcast) out.push_back({a, b, s});
        else out.push_back({b, a, s});
      }
      break;
    }
    case CollectiveAlgo::all_to_all:
      for (int a : ranks) {
        for (int b : ranks) {
          if (a != b) out.push_back({a, b, s / static_cast<double>(n)});
        }
      }
      break;
  }
  return out;
}

double bus_bandwidth_factor(CollectiveAlgo algo, int n) {
  if (n <= 1) return 1.0;
  const double fraction = static_cast<double>(n - 1) / n;
  switch (algo) {
    case CollectiveAlgo::all_reduce: return 2.0 * fraction;
    case CollectiveAlgo::all_gather:
    case CollectiveAlgo::reduce_scatter:
    case CollectiveAlgo::all_to_all: return fraction;
    case CollectiveAlgo::broadcast:
    case CollectiveAlgo::reduce: return 1.0;
  }
  return 1.0;
}

}  // namespace gcsim::models::network

namespace gcsim::models::network {

sim::Duration all_to_all_v_time(const AlphaBetaFabric& f, const std::vector<int>& ranks,
                                const std::vector<int64_t>& pair_bytes) {
  const size_t n = ranks.size();
  if (n <= 1) return sim::Duration::zero();
  // Per endpoint, the bytes to and from peers on its own node (NVLink) and
  // on other nodes (its NIC): the two tiers move at once.
  sim::Duration busiest = sim::Duration::zero();
  for (size_t i = 0; i < n; ++i) {
    double sent[2] = {0.0, 0.0}, received[2] = {0.0, 0.0};  // [same node, other nodes]
    for (size_t j = 0; j < n; ++j) {
      if (j == i) continue;
      const int tier = f.same_node(ranks[i], ranks[j]) ? 0 : 1;
      sent[tier] += static_cast<double>(pair_bytes[i * n + j]);
      received[tier] += static_cast<double>(pair_bytes[j * n + i]);
    }
    // A tier no byte crosses costs nothing (a one-node fabric has no NIC rate).
    const double up = std::max(sent[0], received[0]), out = std::max(sent[1], received[1]);
    if (up > 0) busiest = std::max(busiest, sim::transfer_time(up, f.scale_up_bandwidth));
    if (out > 0) busiest = std::max(busiest, sim::transfer_time(out, f.scale_out_bandwidth));
  }
  return f.latency_for(ranks) * static_cast<int64_t>(n - 1) + busiest;
}

std::vector<RankTraffic> all_to_all_v_traffic(const std::vector<int>& ranks,
                                              const std::vector<int64_t>& pair_bytes) {
  std::vector<RankTraffic> out;
  const size_t n = ranks.size();
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) {
      const int64_t b = pair_bytes[i * n + j];
      if (i != j && b > 0) out.push_back({ranks[i], ranks[j], static_cast<double>(b)});
    }
  }
  return out;
}

}  // namespace gcsim::models::network
