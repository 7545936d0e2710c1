// network.model: analytical. Each transfer takes the latency of its ECMP
// path plus bytes over the path's bottleneck bandwidth, as if it were alone
// on the fabric (α-β, Hockney 1994). No contention, so it is exact for one
// flow and optimistic whenever flows share a link; use it for sweeps of
// thousands of points.
#pragma once

#include <optional>

#include "models/network/link_ledger.h"
#include "models/network/network_model.h"

namespace gcsim::models::network {

class AnalyticalModel : public NetworkModel {
 public:
  AnalyticalModel(sim::Simulator& sim, Fabric& fabric, const Routing& routing);

  void start(const Transfer& t, TransferDone done) override;
  void on_link_state_changed(LinkId) override {}  // paths are chosen per transfer
  NetworkStats stats(sim::Duration elapsed) const override;

  // The time `t` would take, without starting it; nullopt when unroutable.
  std::optional<sim::Duration> transfer_time(const Transfer& t) const;

 private:
  sim::Simulator& sim_;
  Fabric& fabric_;
  const Routing& routing_;
  LinkLedger ledger_;
  NetworkStats totals_;
};

}  // namespace gcsim::models::network
