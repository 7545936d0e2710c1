// network.model: analytical. Each transfer takes the latency of its ECMP
// path plus bytes over the path's bottleneck bandwidth, as if it were alone
// on the fabric (α-β, Hockney 1994). No contention, so it is exact for one
// flow and optimistic whenever flows share a link; use it for sweeps of
// thousands of points.
//
// Link faults are honoured transfer by transfer: when a link on a
// transfer's path changes, the bytes it has not yet sent continue at the
// new bottleneck (degraded or restored) or, if the link went down, over a
// new ECMP path, or nowhere (unroutable) when none is left. Bytes already
// sent arrive one path latency after they left, as before.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "models/network/link_ledger.h"
#include "models/network/network_model.h"
#include "models/network/unroutable_log.h"

namespace gcsim::models::network {

class AnalyticalModel : public NetworkModel {
 public:
  AnalyticalModel(sim::Simulator& sim, Fabric& fabric, const Routing& routing);

  void start(const Transfer& t, TransferDone done) override;
  void on_link_state_changed(LinkId link) override;
  NetworkStats stats(sim::Duration elapsed) const override;
  LinkFootprint closed_form_footprint(const std::vector<RankTraffic>& traffic) const override {
    return footprint_of(routing_, traffic);
  }
  void count_closed_form(const LinkFootprint& footprint, double scale) override;

  // The time `t` would take, without starting it; nullopt when unroutable.
  std::optional<sim::Duration> transfer_time(const Transfer& t) const;

 private:
  struct InFlight {
    TransferDone done;
    FlowKey key;
    sim::Bytes bytes;
    std::vector<LinkId> path;
    sim::Duration latency;  // of `path`
    double rate = 0.0;       // bytes/s: the path's bottleneck
    double remaining = 0.0;  // bytes not yet sent, as of `last`
    sim::Time last;
    uint64_t generation = 0;  // bumped when re-timed: older arrival events are void
    bool in_use = false;
  };

  // Schedules the arrival of `slot` `remaining / rate + latency` from now.
  void schedule_arrival(int32_t slot);
  void arrive(int32_t slot, uint64_t generation);

  sim::Simulator& sim_;
  Fabric& fabric_;
  const Routing& routing_;
  LinkLedger ledger_;
  NetworkStats totals_;
  UnroutableLog unroutable_;
  std::vector<InFlight> flights_;
  std::vector<int32_t> free_;
};

}  // namespace gcsim::models::network
