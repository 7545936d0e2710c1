#include "models/cluster/collective_hbm.h"

#include <stdexcept>

namespace gcsim::models::cluster {

double collective_hbm_bytes(collectives::CollectiveOp op, double bytes, int ranks,
                            double staging_in_hbm) {
  if (ranks < 1 || bytes < 0.0 || !(staging_in_hbm >= 0.0 && staging_in_hbm <= 1.0)) {
    throw std::invalid_argument(
        "collective HBM bytes need >= 1 rank, >= 0 bytes and a staging fraction in [0, 1]");
  }
  if (ranks == 1) return 0.0;
  const double n = ranks, s = bytes;
  // Bytes received into staging, one pass, the part of them that reaches HBM.
  const double staged = (n - 1.0) / n * s * staging_in_hbm;
  using collectives::CollectiveOp;
  switch (op) {
    case CollectiveOp::all_reduce: return 2.0 * s + 2.0 * (2.0 * staged);
    case CollectiveOp::reduce_scatter:
    case CollectiveOp::all_gather: return s + s / n + 2.0 * staged;
    case CollectiveOp::all_to_all: return 2.0 * s + 2.0 * staged;
    case CollectiveOp::broadcast:
    case CollectiveOp::reduce:
    case CollectiveOp::send_recv: return s + 2.0 * s * staging_in_hbm;
  }
  throw std::invalid_argument("unknown collective op");
}

}  // namespace gcsim::models::cluster
