// Runs collectives as NCCL does, on the simulated fabric: the tuner picks
// an algorithm and protocol by NCCL's cost model (latency + bytes over
// bandwidth per algorithm/protocol) unless the request names them; the
// schedule (schedule.h) turns the choice into phases of long-lived flows;
// each flow moves over the NetworkModel (analytical, flow or packet), the
// only way bytes move. On top of the network's time a phase pays NCCL's
// per-step latencies, the pipeline fill of its first slice, and never runs
// faster than its channels' SMs can copy (the protocol's ceilings).
//
// A flow carries wire bytes: payload / protocol wire efficiency (LL's flag
// words double the bytes on the wire). Link headers (the tier's payload
// share) and an algorithm's shortfall (tree, NVLS) are time, not bytes: a
// phase ends no sooner than its busiest GPU's payload over its links'
// payload rate, so a collective takes only its fair share of a shared link.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "models/collectives/collective.h"
#include "models/collectives/collective_params.h"
#include "models/collectives/group_layout.h"
#include "models/collectives/schedule.h"
#include "models/network/fabric.h"
#include "models/network/network_model.h"
#include "models/network/routing.h"
#include "sim/engine/simulator.h"

namespace gcsim::models::collectives {

// What the tuner chose for one request.
struct Plan {
  Algorithm algorithm = Algorithm::ring;
  Protocol protocol = Protocol::simple;
  int channels = 1;
  sim::Duration estimate;  // the cost model's time for this choice
};

class CollectiveEngine {
 public:
  CollectiveEngine(sim::Simulator& sim, network::NetworkModel& network,
                   const network::Fabric& fabric, CollectiveParams params, uint64_t seed = 1);

  // "" when `req` can run, else why not: an algorithm that does not
  // implement the op or does not fit the group, a root outside the group,
  // a rank that is not a GPU, a repeated rank.
  std::string check(const CollectiveRequest& req) const;

  // The tuner's choice: the cheapest (algorithm, protocol) by the cost
  // model among those the request allows. `req` must pass check().
  Plan plan(const CollectiveRequest& req);

  // The cost model's time for one choice (what the tuner compares).
  sim::Duration estimate(const CollectiveRequest& req, Algorithm a, Protocol p);

  // Runs `req` from now; `done` runs when its last byte has arrived
  // everywhere, with the plan that ran.
  using Done = std::function<void(const Plan&)>;
  void run(const CollectiveRequest& req, Done done);

  // Rings run as 2(n-1) (or n-1) dependent rounds of one transfer per rank
  // per channel instead of one long-lived flow per edge: the reference the
  // shortcut is proven against (tests). No pipeline fill or SM ceilings in
  // this mode; PXN must be off for groups spanning hosts.
  void set_stepwise_rings(bool on) { stepwise_rings_ = on; }

  const CollectiveParams& params() const { return params_; }
  const network::Fabric& fabric() const { return fabric_; }
  // The transfers run() makes for `req` under `plan`, every phase's, as
  // wire bytes per (source, destination, channel): what a run puts on the
  // links, for counting a run whose time is already known. Not for
  // stepwise rings.
  std::vector<network::RankTraffic> wire_traffic(const CollectiveRequest& req, const Plan& plan);

  // How much of one run of `req` under `plan` a call issued right after it
  // on every rank's stream overlaps: a chain's (broadcast, reduce) hops and
  // pipeline fill, which its downstream ranks trail the root by while the
  // root, waiting on no one, starts the next call (the buffer ahead of each
  // rank absorbs the offset). Zero for rings, trees and grouped send/recv,
  // whose ranks wait on one another in every call. What a loop of N
  // back-to-back calls takes per call is run time - lag (1 - 1/N).
  sim::Duration back_to_back_overlap(const CollectiveRequest& req, const Plan& plan);

  // Transfers started so far (what the network model had to carry).
  int64_t transfers_started() const { return transfers_started_; }

 private:
  struct TierSample {
    sim::Duration latency;   // path latency
    sim::Bandwidth bandwidth;  // path bottleneck
    bool known = false;
  };
  // Costs of one phase besides the network's time.
  struct PhaseCost {
    sim::Duration first_latency;  // the path latency a transfer already includes
    sim::Duration extra_latency;  // the other steps' latencies and overheads
    sim::Duration fill;           // pipeline start-up
    sim::Duration turnaround;     // a ring's unhidden per-loop turnaround, over its loops
    sim::Duration sm_time;        // the channels' copy ceiling (and a local copy's time)
    // A chain's hops and fill: how far its last rank trails its root.
    sim::Duration chain_lag;
    // The busiest GPU link's bytes over its bandwidth (for a grouped
    // send/recv, plus its connection windows' round trips).
    sim::Duration endpoint_time;
    // After the transfers (or their floor): what no transfer overlaps.
    sim::Duration tail() const { return extra_latency + fill + turnaround; }
  };
  struct RunState;

  const GroupLayout& layout_for(const std::vector<int>& ranks);
  std::shared_ptr<const Schedule> schedule_for(const CollectiveRequest& req, Algorithm a,
                                               int channels);
  int channels_for(const CollectiveRequest& req, Algorithm a, Protocol p) const;
  TierSample sample(int src, int dst) const;
  TierSample tier(const GroupLayout& layout, bool inter);
  double tier_efficiency(bool inter) const;
  // The algorithm's share of the links (tree, NVLS).
  double algorithm_efficiency(Algorithm a) const;
  sim::Bandwidth gpu_ceiling(Protocol p, int hosts) const;
  PhaseCost phase_cost(const Phase& phase, const GroupLayout& layout, Algorithm a, Protocol p);
  // A grouped send/recv's own costs (phase.p2p_rounds > 0): the p2p
  // channels' ceiling, the local copy, the first step's start-up and the
  // rounds' fixed cost.
  void add_p2p_cost(const Phase& phase, Protocol p, PhaseCost& c) const;
  sim::Bytes wire_bytes(const Flow& f, Protocol p) const;
  void run_phase(std::shared_ptr<RunState> st);
  // One transfer of the run's current phase arrived; the last one ends it.
  void transfer_done(RunState* raw);
  void finish_phase(std::shared_ptr<RunState> st);
  void run_stepwise_ring(std::shared_ptr<RunState> st);

  sim::Simulator& sim_;
  network::NetworkModel& network_;
  const network::Fabric& fabric_;
  CollectiveParams params_;
  network::Routing routing_;
  bool one_flow_per_pair_ = false;
  bool stepwise_rings_ = false;
  int64_t transfers_started_ = 0;

  std::map<std::vector<int>, std::unique_ptr<GroupLayout>> layouts_;
  // Tier samples per layout (by address, layouts live as long as the engine).
  std::map<std::pair<const GroupLayout*, bool>, TierSample> tiers_;
  // Schedules and plans are pure functions of their keys: cached, so that a
  // training step's thousands of identical collectives are planned once.
  // The last element: the split matrix's fingerprint (0 for even splits).
  using Key = std::tuple<const GroupLayout*, uint8_t, int64_t, int, int, int, bool, uint64_t>;
  std::map<Key, std::shared_ptr<const Schedule>> schedules_;
  size_t schedule_flows_ = 0;  // flows held by schedules_, all phases (the cache's bound)
  using PlanKey = std::tuple<const GroupLayout*, uint8_t, int64_t, int, int, int, bool, uint64_t>;
  std::map<PlanKey, Plan> plans_;
  // Per-GPU scratch for phase costs, indexed by global rank.
  std::vector<double> sent_up_, sent_out_, recv_up_, recv_out_;
  std::vector<int> channels_up_, channels_out_;
  std::vector<int> touched_;  // phase_cost's GPUs, reused
  // Runs whose phase has transfers in flight, by address (what their
  // transfers' callbacks carry).
  std::unordered_map<const RunState*, std::shared_ptr<RunState>> running_;
};

}  // namespace gcsim::models::collectives
