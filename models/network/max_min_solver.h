// Max-min fair rates for fluid flows sharing links, by progressive filling
// (water-filling; Bertsekas & Gallager, Data Networks, 1992, §6.5.2), with
// the weighted link use of SimGrid's LMM solver: flow f puts w(f,l) × r(f)
// bytes/s on link l, and every link keeps Σ_f w(f,l) × r(f) <= capacity(l).
//
// Changes (a flow added or removed, a capacity changed) are collected and
// solve() recomputes only a subset S of the flows, holding the others at
// their rates. Why that is exact: a feasible rate vector is max-min fair iff
// every flow has a bottleneck — a saturated link on which no flow is faster
// (ibid., §6.5.2, the bottleneck lemma; it holds for positive weights). S
// starts with the new flows, every flow on a link whose capacity changed,
// and the flows whose recorded bottleneck lost a flow. After filling S over
// the capacity the others leave free, two checks find the held flows that
// could break the lemma:
//  (A) a flow of S froze at link l, and a held flow on l is faster;
//  (B) a held flow's recorded bottleneck was touched by S and is no longer
//      saturated, or now carries a flow of S faster than it.
// Those join S and S is filled again, until neither check finds any. Then
// every flow of S has a bottleneck by construction and (A); a held flow
// whose bottleneck S did not touch keeps it unchanged (same flows, rates and
// capacity), one whose bottleneck S touched passed (B); feasibility holds
// because S only used what the held flows left. By the lemma the result is
// the unique max-min allocation, the one solve_full() computes from scratch.
// tests/unit/test_max_min_solver.cpp checks that on seeded random systems.
//
// Cost: a filling of S takes O(H log L) for H links crossed by S's flows
// and L links touched. Where flows meet few others (one flow per NIC) S
// stays at a few dozen flows; under dense random traffic a single change
// genuinely moves the rates of 20-75% of all flows (exact max-min is that
// global), so once S passes a quarter of the flows the solver refills all
// of them, and after two such solves in a row starts from all of them
// (retrying the incremental way every 16 solves).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "models/network/fabric.h"
#include "models/network/routing.h"

namespace gcsim::models::network {

class MaxMinSolver {
 public:
  using FlowId = int32_t;

  struct RateChange {
    FlowId flow = -1;
    double old_rate = 0.0;  // bytes/s before the solve; the new one is rate(flow)
  };

  // Work done so far, for benchmarks and the report.
  struct Counters {
    int64_t solves = 0;            // solve() / solve_full() calls that had work
    int64_t rounds = 0;            // fillings run (1 per solve + 1 per expansion of S)
    int64_t flows_recomputed = 0;  // flow rates computed, summed over rounds
    int64_t rates_changed = 0;     // flow rates that differed when committed
  };

  explicit MaxMinSolver(size_t num_links = 0);

  // Links are dense ids 0..num_links-1; capacities start at 0.
  void resize_links(size_t num_links);
  size_t num_links() const { return links_.size(); }
  // bytes/s. A change re-solves every flow on the link.
  void set_capacity(LinkId l, double bytes_per_s);
  double capacity(LinkId l) const { return links_[idx(l)].capacity; }

  // Adds flow `f` (a caller-chosen dense id, not in use) over `links`;
  // duplicate links are merged, weights must be > 0. Its rate is 0 until the
  // next solve.
  void add_flow(FlowId f, std::span<const WeightedLink> links);
  void remove_flow(FlowId f);
  // Makes flow `f` stand for `k` >= 1 identical flows (same links, same
  // start, same size): its weights become k x those it was added with, so
  // its rate is each member's (max-min gives identical flows one rate).
  // Only before the flow's first solve, while its rate is 0.
  void set_multiplicity(FlowId f, double k);
  bool contains(FlowId f) const {
    return f >= 0 && static_cast<size_t>(f) < flows_.size() && flows_[idx(f)].active;
  }
  size_t num_flows() const { return active_flows_; }

  // Brings the rates up to date with the changes since the last solve.
  // Returns the flows whose rate changed (valid until the next call).
  const std::vector<RateChange>& solve();
  // The same result from scratch: every flow refilled.
  const std::vector<RateChange>& solve_full();

  double rate(FlowId f) const { return flows_[idx(f)].rate; }
  // The saturated link the flow's rate was set by (kNoLink before a solve).
  LinkId bottleneck(FlowId f) const { return flows_[idx(f)].bottleneck; }
  // Σ weight × rate over the link's flows, bytes/s.
  double load(LinkId l) const { return links_[idx(l)].load; }
  size_t flow_count(LinkId l) const { return links_[idx(l)].uses.size(); }
  std::vector<FlowId> flows_on(LinkId l) const;
  // The links of a flow with their weights.
  std::vector<WeightedLink> links_of(FlowId f) const;
  // Links whose load the last solve changed (valid until the next call).
  const std::vector<LinkId>& changed_links() const { return changed_links_; }

  const Counters& counters() const { return counters_; }

 private:
  struct Hop {
    LinkId link = kNoLink;
    int32_t use = -1;  // index of this flow in the link's `uses`
    double weight = 1.0;
    double base = 1.0;  // the weight it was added with (weight = base x multiplicity)
  };
  struct FlowState {
    std::vector<Hop> hops;
    double rate = 0.0;
    LinkId bottleneck = kNoLink;
    int32_t bneck_index = -1;  // index in the bottleneck link's `bottlenecked`
    uint32_t in_s = 0;         // == s_epoch_ while the flow is in S
    bool active = false;
  };
  struct Use {
    FlowId flow = -1;
    int32_t hop = -1;  // index of this link in the flow's `hops`
  };
  struct LinkState {
    double capacity = 0.0;
    double load = 0.0;
    double level = 0.0;       // rate of the flows bottlenecked here
    double rate_bound = 0.0;  // >= every rate on the link (a cheap filter for check A)
    std::vector<Use> uses;
    std::vector<FlowId> bottlenecked;  // flows whose recorded bottleneck this is
    uint32_t updates = 0;        // incremental load updates since the last exact sum
    uint32_t changed_epoch = 0;  // == change_epoch_ once listed in changed_links_
    uint32_t seeded_epoch = 0;   // == seed_epoch_ once its bottlenecked flows were seeded
  };
  // A flow of S in the current round, and its links as local indices
  // (s_hops_[hop_begin, hop_end)): the filling touches only these dense
  // arrays, not the flow and link tables.
  struct SFlow {
    FlowId id = -1;
    int32_t hop_begin = 0;
    int32_t hop_end = 0;
    int32_t froze_at = -1;  // local link
    double old_rate = 0.0;
    double new_rate = 0.0;
    bool frozen = false;
  };
  struct SHop {
    int32_t local;
    double weight;
  };
  // A link touched by S in the current round.
  struct Local {
    LinkId link = kNoLink;
    double s_old_load = 0.0;  // Σ w × committed rate over S's flows on it
    double s_new_load = 0.0;  // Σ w × new rate
    double outside = 0.0;     // load of the held flows
    double rem = 0.0;         // capacity left for S's unfrozen flows at the current level
    double weight = 0.0;      // Σ w over S's unfrozen flows
    double level = 0.0;       // where it saturated, if S froze flows here
    double max_s_rate = 0.0;
    int32_t unfrozen = 0;
    int32_t s_count = 0;
    int32_t s_old_bneck = 0;  // S's flows whose committed bottleneck this is
    int32_t begin = 0;        // S's flows on it (indices into sflows_): members_[begin, begin + s_count)
    uint32_t version = 0;
    bool froze_here = false;
  };
  struct HeapEntry {
    double level;
    int32_t local;
    uint32_t version;
  };

  static size_t idx(int32_t i) { return static_cast<size_t>(i); }
  void seed(FlowId f) { pending_.push_back(f); }
  int32_t local_of(LinkId l);
  void run();
  void fill();
  void freeze(int32_t i, double level, int32_t at);
  bool expand();  // checks A and B; adds violators to S; false when none
  void add_to_s(FlowId f);
  void add_all_to_s();
  void commit();
  void set_bottleneck(FlowId f, LinkId l);
  void refresh_load(LinkState& ls);
  void begin_solve();
  void mark_changed(LinkId l);

  std::vector<FlowState> flows_;
  std::vector<LinkState> links_;
  size_t active_flows_ = 0;
  std::vector<FlowId> pending_;  // seeds of the next solve
  // Solve scratch, kept to reuse its memory.
  std::vector<FlowId> s_;
  std::vector<SFlow> sflows_;  // S of the current round, in s_ order
  std::vector<SHop> s_hops_;
  std::vector<Local> locals_;
  std::vector<int32_t> members_;
  // Per link: the local index, valid while link_epoch_[l] == round_epoch_.
  std::vector<uint32_t> link_epoch_;
  std::vector<int32_t> link_local_;
  std::vector<HeapEntry> heap_;
  uint32_t s_epoch_ = 0;
  uint32_t round_epoch_ = 0;
  std::vector<RateChange> changes_;
  std::vector<LinkId> changed_links_;
  std::vector<LinkId> unloaded_;  // links that lost a flow since the last solve
  uint32_t change_epoch_ = 0;
  uint32_t seed_epoch_ = 1;  // counts solves: remove_flow seeds a link once per solve
  int widened_in_a_row_ = 0;  // solves that ended with every flow in S
  Counters counters_;
};

}  // namespace gcsim::models::network
