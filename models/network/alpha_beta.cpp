#include "models/network/alpha_beta.h"

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
