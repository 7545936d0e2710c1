// network.model: flow. Transfers are fluid flows sharing link bandwidth
// max-min fairly (progressive filling, Bertsekas & Gallager 1992; the
// weighted form of SimGrid's LMM solver, Velho et al., TOMACS 2013). A flow
// uses its ECMP path (weight 1 per link), its spray split (the share of its
// bytes on each equal-cost link), or an adaptive path picked hop by hop
// toward the link with the fewest flows. Rates change only when a flow
// starts or drains or a link changes; the solver then recomputes only the
// flows that change can reach (max_min_solver.h says why that is exact).
//
// A transfer's last byte leaves the source when its remaining bytes drain
// at the rates it was given, and arrives one path latency later; alone on
// the fabric it takes latency + size / bottleneck, the analytical model's
// time to the picosecond. Fluid sharing has no queues, so there is no
// head-of-line blocking, PFC or loss: a flow is slowed only by links it
// crosses (the packet model shows the rest).
#pragma once

#include <cstdint>
#include <vector>

#include "models/network/completion_queue.h"
#include "models/network/link_ledger.h"
#include "models/network/max_min_solver.h"
#include "models/network/network_model.h"
#include "models/network/route_cache.h"
#include "models/network/unroutable_log.h"

namespace gcsim::models::network {

class FlowModel : public NetworkModel {
 public:
  FlowModel(sim::Simulator& sim, Fabric& fabric, const Routing& routing, RoutingPolicy policy);
  FlowModel(const FlowModel&) = delete;
  FlowModel& operator=(const FlowModel&) = delete;

  void start(const Transfer& t, TransferDone done) override;
  // Reads the link's (and its reverse's) state from the Fabric: a link down
  // moves the flows crossing it to new paths with their remaining bytes
  // (stats.reroutes) or, with no path left, drops them (stats.unroutable);
  // a degraded or restored link changes capacity. Flows do not move back
  // when a link comes up; new flows may use it.
  void on_link_state_changed(LinkId link) override;
  NetworkStats stats(sim::Duration elapsed) const override;
  LinkFootprint closed_form_footprint(const std::vector<RankTraffic>& traffic) const override {
    return footprint_of(routing_, traffic);
  }
  void count_closed_form(const LinkFootprint& footprint, double scale) override;

  // Transfers still sending (not yet drained).
  size_t sending() const { return solver_.num_flows(); }
  // Rates, loads and work counters (for tests and benchmarks).
  const MaxMinSolver& solver() const { return solver_; }

 private:
  // Event kinds in the low two bits of a tag; the rest is the payload.
  enum Kind : uint64_t { kWake = 0, kRecompute = 1, kDeliver = 2 };
  class Events final : public sim::EventHandler {
   public:
    explicit Events(FlowModel& m) : m_(m) {}
    void handle_event(uint64_t tag) override { m_.handle(tag); }

   private:
    FlowModel& m_;
  };
  struct ActiveFlow {
    TransferDone done;
    FlowKey key;
    sim::Bytes bytes;
    std::vector<WeightedLink> route;  // links with the share of bytes on each
    sim::Duration latency;            // of the route (share-weighted for spray)
    double remaining = 0.0;           // bytes not yet sent, as of `last`
    sim::Time last;
    double route_start = 0.0;  // `remaining` when the route was set (ledger)
    bool in_use = false;
    bool sending = false;  // in the solver; false once drained
  };

  void handle(uint64_t tag);
  // The route of `key` now: from the cache for ECMP and spray (a pure
  // function of the key and the links' states, so the cache starts over
  // whenever the Fabric's version moves), computed afresh for adaptive (it
  // reads the loads).
  RouteCache::Route route_of(const FlowKey& key);
  std::vector<WeightedLink> route_for(const FlowKey& key) const;
  sim::Duration latency_of(const std::vector<WeightedLink>& route) const;
  double capacity_of(LinkId l) const;
  int32_t allocate();
  void release(int32_t slot);
  // Brings `remaining` up to now at `rate` bytes/s.
  void advance(ActiveFlow& f, double rate);
  void book_route_bytes(ActiveFlow& f);
  void schedule_drain(int32_t slot);
  void request_recompute();
  void recompute();
  void arm_wake();
  void wake(uint64_t generation);
  void drained(int32_t slot);
  void deliver(int32_t slot);
  void reroute(int32_t slot);

  sim::Simulator& sim_;
  Fabric& fabric_;
  const Routing& routing_;
  RoutingPolicy policy_;
  Events events_{*this};
  MaxMinSolver solver_;
  CompletionQueue drains_;
  LinkLedger ledger_;
  NetworkStats totals_;
  UnroutableLog unroutable_;
  RouteCache routes_;
  uint64_t routes_version_ = 0;  // the Fabric's version the cached routes were found in
  std::vector<WeightedLink> adaptive_route_;  // scratch for the adaptive policy (never cached)
  std::vector<ActiveFlow> flows_;  // by slot, which is also the solver's flow id
  std::vector<int32_t> free_;
  bool recompute_pending_ = false;
  sim::Time wake_at_ = sim::Time::max();
  uint64_t wake_generation_ = 0;
};

}  // namespace gcsim::models::network
