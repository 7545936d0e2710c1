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

  // Identical transfers (same route, same size, started at the same
  // instant: the two queue pairs of a pair under one leaf, a rail's
  // all-to-all) ride one weighted flow of the solver whose drain delivers
  // them all (on by default). Max-min gives identical flows the same rate,
  // so the times are the same in exact arithmetic; in doubles k x rate and
  // a sum of k rates round differently, which may move a completion by a
  // picosecond, and members complete in one event in start order.
  // tests/unit/test_flow_aggregation.cpp measures it against `false`.
  void set_aggregation(bool on) { aggregate_ = on; }
  // Transfers that joined another's flow so far.
  int64_t aggregated() const { return aggregated_; }

  // Flows still sending (not yet drained); an aggregate counts once.
  size_t sending() const { return solver_.num_flows(); }
  // Rates, loads and work counters (for tests and benchmarks).
  const MaxMinSolver& solver() const { return solver_; }

 private:
  // Event kinds in the low two bits of a tag; the rest is the payload (a
  // slot for kDeliver, a batch for kDeliverBatch).
  enum Kind : uint64_t { kWake = 0, kRecompute = 1, kDeliver = 2, kDeliverBatch = 3 };
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
    // Transfers riding this flow besides the first (aggregation), in
    // start order; each keeps its key for a reroute.
    struct Member {
      FlowKey key;
      TransferDone done;
    };
    std::vector<Member> joined;
    double members() const { return 1.0 + static_cast<double>(joined.size()); }
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
  // Queues `slot`'s delivery one path latency from now in this wake's
  // batch for that latency (see wake()).
  void batch_delivery(int32_t slot);
  void deliver_batch(int32_t batch);
  void deliver(int32_t slot);
  void reroute(int32_t slot);
  // Joins `t` to an identical flow started at this instant; false if none.
  bool join_identical(const FlowKey& key, const RouteCache::Route& route, const Transfer& t,
                      TransferDone& done);
  // Gives each joined member of `slot` its own flow (before a reroute).
  void split(int32_t slot);

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
  // Delivery batches (slots in drain order) by id, the free ids, and this
  // wake's open batch per path latency.
  std::vector<std::vector<int32_t>> batches_;
  std::vector<int32_t> free_batches_;
  std::vector<std::pair<sim::Duration, int32_t>> wake_batches_;
  // Emptied member lists, kept for their memory (an aggregate of two queue
  // pairs allocated one list per flow: 5% of a DeepSeek-V3 run).
  std::vector<std::vector<ActiveFlow::Member>> spare_members_;
  bool aggregate_ = true;
  int64_t aggregated_ = 0;
  // Per route id: the flow started on it at this instant and not yet
  // solved (valid while its epoch is open_epoch_), the one a new identical
  // transfer may join. Each recompute (and each new route cache) opens a
  // new epoch.
  struct OpenFlow {
    uint64_t epoch = 0;
    int32_t slot = -1;
  };
  std::vector<OpenFlow> open_;
  uint64_t open_epoch_ = 1;
  bool recompute_pending_ = false;
  sim::Time wake_at_ = sim::Time::max();
  uint64_t wake_generation_ = 0;
};

}  // namespace gcsim::models::network
