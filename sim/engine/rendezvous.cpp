#include "sim/engine/rendezvous.h"

namespace gcsim::sim::replay {

using workloads::CollectiveOp;
using workloads::P2pOp;

bool same_communication(const workloads::Op& first, const workloads::Op& op) {
  if (const auto* a = std::get_if<CollectiveOp>(&first.payload)) {
    const auto* b = std::get_if<CollectiveOp>(&op.payload);
    if (b == nullptr) return false;
    const bool same_splits = a->splits == b->splits ||
                             (a->splits && b->splits && *a->splits == *b->splits);
    return a->kind == b->kind && a->bytes == b->bytes && a->root == b->root && same_splits;
  }
  const auto* b = std::get_if<P2pOp>(&op.payload);
  return b && std::get<P2pOp>(first.payload).bytes == b->bytes;
}

std::string communication_summary(const workloads::Op& op) {
  if (const auto* c = std::get_if<CollectiveOp>(&op.payload)) {
    return std::string(workloads::collective_name(c->kind)) + " of " +
           std::to_string(c->bytes.count()) + " B";
  }
  return "p2p of " + std::to_string(std::get<P2pOp>(op.payload).bytes.count()) + " B";
}

}  // namespace gcsim::sim::replay
