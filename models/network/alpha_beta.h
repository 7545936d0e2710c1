// The α-β (latency-bandwidth) model of communication: time = steps × α +
// bytes moved per rank / β, over the bottleneck of the links a transfer
// crosses, with no contention (Hockney 1994; the ring forms follow Thakur,
// Rabenseifner & Gropp 2005 and nccl-tests' PERFORMANCE.md). It stands in
// for the fabric and NCCL models until those exist, and remains the
// `analytical` network model's closed form.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/engine/time.h"
#include "sim/config/units.h"

namespace gcsim::models::network {

// The two tiers of a cluster as α-β sees them.
struct AlphaBetaFabric {
  int gpus_per_node = 8;
  sim::Bandwidth scale_up_bandwidth;   // per GPU, each direction (NVLink)
  sim::Duration scale_up_latency;      // one NVLink/NVSwitch hop
  sim::Bandwidth scale_out_bandwidth;  // per GPU NIC, each direction
  sim::Duration scale_out_latency;     // NIC to NIC through the fabric
  bool has_scale_out = true;           // false: a single node, no NICs

  int node_of(int rank) const { return rank / gpus_per_node; }
  bool same_node(int a, int b) const { return node_of(a) == node_of(b); }
  // Bandwidth and latency of the tier a group spans (scale-out if any two
  // members sit on different nodes).
  sim::Bandwidth bandwidth_for(const std::vector<int>& ranks) const;
  sim::Duration latency_for(const std::vector<int>& ranks) const;
};

enum class CollectiveAlgo { all_reduce, all_gather, reduce_scatter, broadcast, reduce, all_to_all };

// Point-to-point: α + S/β over the tier joining src and dst.
sim::Duration p2p_time(const AlphaBetaFabric& f, int src, int dst, sim::Bytes bytes);

// Ring collectives over `ranks` with per-rank buffer `bytes` (nccl-tests'
// size: the output for all-gather, the input for reduce-scatter):
//   all-reduce      2(n−1)·α + 2(n−1)/n · S/β
//   all-gather      (n−1)·α + (n−1)/n · S/β
//   reduce-scatter  (n−1)·α + (n−1)/n · S/β
//   broadcast/reduce (pipelined ring) (n−1)·α + S/β
//   all-to-all      (n−1)·α + (n−1)/n · S/β   (pairwise exchange)
// A group of one rank costs nothing.
sim::Duration collective_time(const AlphaBetaFabric& f, CollectiveAlgo algo,
                              const std::vector<int>& ranks, sim::Bytes bytes);

// The wire traffic a closed-form collective stands for: what each rank
// sends to another, in the algorithm the formula above times, so that a
// model timing it in closed form can still count its bytes on links.
//   all-reduce      ring in `ranks` order, each rank to the next 2(n−1)/n · S
//   all-gather, reduce-scatter   the same ring, (n−1)/n · S
//   broadcast       pipelined chain from ranks[root] along the ring, S per hop (n−1 hops)
//   reduce          the same chain reversed, toward ranks[root]
//   all-to-all      pairwise exchange: every rank to every other, S/n
struct RankTraffic {
  int src = 0;
  int dst = 0;
  double bytes = 0.0;
  uint32_t qp = 0;  // ECMP key (a collective's channel), as a Transfer's
};
std::vector<RankTraffic> collective_traffic(CollectiveAlgo algo, const std::vector<int>& ranks,
                                            sim::Bytes bytes, int root = 0);

// An uneven all-to-all (all_to_all_single with split sizes): `pair_bytes`
// is n x n row-major in `ranks` order, what ranks[i] sends ranks[j] (the
// diagonal stays local). Every pair at once, each GPU sending and receiving
// in each direction over NVLink to peers on its node (β_up) and over its
// NIC to the others (β_out) at the same time, so the busiest endpoint and
// tier decide:
//   (n−1)·α + max over i of max(up_i / β_up, out_i / β_out),
//   up_i = max(sent, received) within the node, out_i across nodes.
// With S/n to every rank of one node this is the even form above; across
// nodes the even form charges the intra-node bytes at β_out too.
sim::Duration all_to_all_v_time(const AlphaBetaFabric& f, const std::vector<int>& ranks,
                                const std::vector<int64_t>& pair_bytes);
// Its wire traffic: one entry per pair with bytes (the diagonal left out).
std::vector<RankTraffic> all_to_all_v_traffic(const std::vector<int>& ranks,
                                              const std::vector<int64_t>& pair_bytes);

// nccl-tests' bus-bandwidth factor: busbw = algbw × factor(n).
double bus_bandwidth_factor(CollectiveAlgo algo, int n);

}  // namespace gcsim::models::network
