#include "models/collectives/collective.h"

namespace gcsim::models::collectives {

std::string_view op_name(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::all_reduce: return "all_reduce";
    case CollectiveOp::all_gather: return "all_gather";
    case CollectiveOp::reduce_scatter: return "reduce_scatter";
    case CollectiveOp::broadcast: return "broadcast";
    case CollectiveOp::reduce: return "reduce";
    case CollectiveOp::all_to_all: return "all_to_all";
    case CollectiveOp::send_recv: return "send_recv";
  }
  return "?";
}

std::string_view algorithm_name(Algorithm a) {
  switch (a) {
    case Algorithm::ring: return "ring";
    case Algorithm::tree: return "tree";
    case Algorithm::direct: return "direct";
    case Algorithm::pairwise: return "pairwise";
    case Algorithm::hierarchical: return "hierarchical";
    case Algorithm::nvls: return "nvls";
  }
  return "?";
}

std::string_view protocol_name(Protocol p) {
  switch (p) {
    case Protocol::ll: return "LL";
    case Protocol::ll128: return "LL128";
    case Protocol::simple: return "Simple";
  }
  return "?";
}

std::optional<CollectiveOp> parse_op(std::string_view s) {
  for (CollectiveOp op : kAllOps) {
    if (op_name(op) == s) return op;
  }
  return std::nullopt;
}

std::optional<Algorithm> parse_algorithm(std::string_view s) {
  for (Algorithm a : kAllAlgorithms) {
    if (algorithm_name(a) == s) return a;
  }
  return std::nullopt;
}

std::optional<Protocol> parse_protocol(std::string_view s) {
  // Accepted as NCCL_PROTO spells them and in lower case.
  if (s == "LL" || s == "ll") return Protocol::ll;
  if (s == "LL128" || s == "ll128") return Protocol::ll128;
  if (s == "Simple" || s == "simple" || s == "SIMPLE") return Protocol::simple;
  return std::nullopt;
}

bool algorithm_supports(Algorithm a, CollectiveOp op) {
  switch (a) {
    case Algorithm::ring:
      return op == CollectiveOp::all_reduce || op == CollectiveOp::all_gather ||
             op == CollectiveOp::reduce_scatter || op == CollectiveOp::broadcast ||
             op == CollectiveOp::reduce;
    case Algorithm::tree:
    case Algorithm::hierarchical:
    case Algorithm::nvls: return op == CollectiveOp::all_reduce;
    case Algorithm::direct: return op == CollectiveOp::all_to_all || op == CollectiveOp::send_recv;
    case Algorithm::pairwise: return op == CollectiveOp::all_to_all;
  }
  return false;
}

std::vector<Algorithm> algorithms_for(CollectiveOp op) {
  std::vector<Algorithm> v;
  for (Algorithm a : kAllAlgorithms) {
    if (algorithm_supports(a, op)) v.push_back(a);
  }
  return v;
}

double bus_bandwidth_factor(CollectiveOp op, int n) {
  if (n <= 1) return 1.0;
  const double fraction = static_cast<double>(n - 1) / n;
  switch (op) {
    case CollectiveOp::all_reduce: return 2.0 * fraction;
    case CollectiveOp::all_gather:
    case CollectiveOp::reduce_scatter:
    case CollectiveOp::all_to_all: return fraction;
    case CollectiveOp::broadcast:
    case CollectiveOp::reduce:
    case CollectiveOp::send_recv: return 1.0;
  }
  return 1.0;
}

}  // namespace gcsim::models::collectives
