#include "models/network/analytical_model.h"

namespace gcsim::models::network {

AnalyticalModel::AnalyticalModel(sim::Simulator& sim, Fabric& fabric, const Routing& routing)
    : sim_(sim), fabric_(fabric), routing_(routing), ledger_(fabric) {
  totals_.model = "analytical";
}

std::optional<sim::Duration> AnalyticalModel::transfer_time(const Transfer& t) const {
  if (t.src_rank == t.dst_rank) return sim::Duration::zero();
  const std::vector<LinkId> path = routing_.ecmp_path({t.src_rank, t.dst_rank, t.qp});
  if (path.empty()) return std::nullopt;
  return routing_.latency(path) + sim::transfer_time(t.bytes, routing_.bottleneck(path));
}

void AnalyticalModel::start(const Transfer& t, TransferDone done) {
  if (t.src_rank == t.dst_rank) {
    sim_.call_in(sim::Duration::zero(), std::move(done));
    return;
  }
  const std::vector<LinkId> path = routing_.ecmp_path({t.src_rank, t.dst_rank, t.qp});
  if (path.empty()) {
    ++totals_.unroutable;
    return;
  }
  const sim::Duration d =
      routing_.latency(path) + sim::transfer_time(t.bytes, routing_.bottleneck(path));
  for (LinkId l : path) ledger_.add(l, t.bytes.as_double());
  sim_.call_in(d, [this, bytes = t.bytes, done = std::move(done)] {
    totals_.bytes_delivered += bytes;
    ++totals_.transfers;
    done();
  });
}

NetworkStats AnalyticalModel::stats(sim::Duration elapsed) const {
  NetworkStats s = totals_;
  ledger_.fill(s, elapsed);
  return s;
}

}  // namespace gcsim::models::network
