// What a collective is, independent of how it runs: the operation (NCCL's
// functions plus send/recv), the algorithms and protocols NCCL implements
// them with, and nccl-tests' bus-bandwidth definitions
// (nccl-tests doc/PERFORMANCE.md; ../shared/REFERENCE.md).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "models/collectives/split_matrix.h"
#include "sim/config/units.h"

namespace gcsim::models::collectives {

enum class CollectiveOp : uint8_t {
  all_reduce,
  all_gather,      // bytes = the output (n × each rank's input), as nccl-tests counts
  reduce_scatter,  // bytes = the input (n × each rank's output)
  broadcast,
  reduce,
  all_to_all,      // bytes = each rank's send buffer (S/n to every rank)
  send_recv,       // every rank sends `bytes` to the next rank of the group (a ring shift)
};
inline constexpr std::array kAllOps{CollectiveOp::all_reduce, CollectiveOp::all_gather,
                                    CollectiveOp::reduce_scatter, CollectiveOp::broadcast,
                                    CollectiveOp::reduce, CollectiveOp::all_to_all,
                                    CollectiveOp::send_recv};

enum class Algorithm : uint8_t {
  ring,          // channels of rings, NCCL order (intra-node neighbours, nodes joined by a rail)
  tree,          // NCCL's double binary tree over nodes, a chain inside each node
  direct,        // every pair at once (all-to-all, send/recv)
  pairwise,      // n-1 rounds, round k pairs rank i with i+k (all-to-all)
  hierarchical,  // reduce-scatter in the node, all-reduce across nodes per rail, all-gather
  nvls,          // NVLink SHARP: reduction in the NVSwitch (H100/H200 presets)
};
inline constexpr int kNumAlgorithms = 6;
inline constexpr std::array kAllAlgorithms{Algorithm::ring,     Algorithm::tree,
                                           Algorithm::direct,   Algorithm::pairwise,
                                           Algorithm::hierarchical, Algorithm::nvls};

// NCCL's three wire protocols (NCCL 2.x): LL sends 8-byte lines of 4 data
// bytes and a 4-byte flag, LL128 128-byte lines with 8 flag bytes (120/128
// payload), Simple whole buffers behind a memory fence.
enum class Protocol : uint8_t { ll, ll128, simple };
inline constexpr int kNumProtocols = 3;
inline constexpr std::array kAllProtocols{Protocol::ll, Protocol::ll128, Protocol::simple};

std::string_view op_name(CollectiveOp op);
std::string_view algorithm_name(Algorithm a);
std::string_view protocol_name(Protocol p);
std::optional<CollectiveOp> parse_op(std::string_view s);
std::optional<Algorithm> parse_algorithm(std::string_view s);
std::optional<Protocol> parse_protocol(std::string_view s);

// Whether `a` implements `op` at all (NVLS and hierarchical are all-reduce
// only; direct and pairwise are all-to-all and send/recv).
bool algorithm_supports(Algorithm a, CollectiveOp op);
// The algorithms that implement `op`, in kAllAlgorithms order.
std::vector<Algorithm> algorithms_for(CollectiveOp op);

// nccl-tests: busbw = algbw × factor(n); algbw = bytes / time.
//   all-reduce 2(n-1)/n; all-gather, reduce-scatter, all-to-all (n-1)/n;
//   broadcast, reduce, send/recv 1.
double bus_bandwidth_factor(CollectiveOp op, int n);

// One collective on a group. `ranks` are global GPU ranks, distinct, in the
// communicator's order (ring and tree orders follow the hosts, not this).
struct CollectiveRequest {
  CollectiveOp op = CollectiveOp::all_reduce;
  std::vector<int> ranks;
  sim::Bytes bytes;
  int root = 0;  // broadcast / reduce: an index into `ranks`
  // send_recv: only ranks[0] sends, to ranks[1] (one ncclSend/ncclRecv
  // pair) instead of every rank to the next.
  bool one_way = false;
  std::optional<Algorithm> algorithm;  // nullopt: the tuner chooses
  std::optional<Protocol> protocol;    // nullopt: the tuner chooses
  // all_to_all only: the bytes of each (source, destination) pair in group
  // order (all_to_all_single with split sizes); null: `bytes`/n to each.
  // `bytes` is then the largest send buffer (SplitMatrix::max_send_buffer).
  SplitMatrixPtr splits;
};

}  // namespace gcsim::models::collectives
