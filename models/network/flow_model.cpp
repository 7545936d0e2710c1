#include "models/network/flow_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace gcsim::models::network {

namespace {
// The rate recomputation of an instant runs after its ordinary events
// (priority 0), so that every flow started or drained at that instant is
// solved in one batch, and before the cluster model's hold requests
// (999'999) and the GPUs' scheduling pass (1'000'000).
constexpr int32_t kRecomputePriority = 500'000;
// A flow with less than this many bytes left (rounding residue of
// remaining -= rate × dt) has drained.
constexpr double kDrainedBytes = 1e-6;
// Routes kept at most; past it the cache starts over (a run's distinct
// (src, dst, qp) keys are usually far fewer: 122K for DeepSeek-V3's EP 64
// all-to-alls over 16 stages, ~10 MB).
constexpr size_t kMaxCachedRoutes = 1u << 20;

uint64_t tag(uint64_t kind, uint64_t payload) { return payload << 2 | kind; }
}  // namespace

FlowModel::FlowModel(sim::Simulator& sim, Fabric& fabric, const Routing& routing,
                     RoutingPolicy policy)
    : sim_(sim),
      fabric_(fabric),
      routing_(routing),
      policy_(policy),
      solver_(fabric.num_links()),
      ledger_(fabric) {
  totals_.model = "flow";
  for (size_t l = 0; l < fabric.num_links(); ++l) {
    solver_.set_capacity(static_cast<LinkId>(l), capacity_of(static_cast<LinkId>(l)));
  }
}

double FlowModel::capacity_of(LinkId l) const {
  const Link& link = fabric_.link(l);
  return link.usable() ? link.effective_bandwidth().bytes_per_s() : 0.0;
}

std::vector<WeightedLink> FlowModel::route_for(const FlowKey& key) const {
  std::vector<WeightedLink> route;
  switch (policy_) {
    case RoutingPolicy::ecmp:
      for (LinkId l : routing_.ecmp_path(key)) route.push_back({l, 1.0});
      break;
    case RoutingPolicy::spray:
      route = routing_.spray_weights(key.src_rank, key.dst_rank);
      break;
    case RoutingPolicy::adaptive: {
      // Least loaded first: fewest flows (which sees flows started at this
      // instant, not yet given a rate), then the lowest allocated share of
      // capacity; remaining ties by the flow's hash at that switch, so that
      // equal links are not always taken in id order.
      auto choose = [&](NodeId at, const std::vector<LinkId>& c) {
        std::vector<size_t> best;
        size_t best_count = 0;
        double best_share = 0.0;
        for (size_t i = 0; i < c.size(); ++i) {
          const size_t count = solver_.flow_count(c[i]);
          const double cap = solver_.capacity(c[i]);
          const double share = cap > 0.0 ? solver_.load(c[i]) / cap : 1.0;
          if (best.empty() || count < best_count ||
              (count == best_count && share < best_share)) {
            best.assign(1, i);
            best_count = count;
            best_share = share;
          } else if (count == best_count && share == best_share) {
            best.push_back(i);
          }
        }
        return best[routing_.hash_at(at, key) % best.size()];
      };
      for (LinkId l : routing_.path_with(key.src_rank, key.dst_rank, choose)) {
        route.push_back({l, 1.0});
      }
      break;
    }
  }
  return route;
}

RouteCache::Route FlowModel::route_of(const FlowKey& key) {
  if (policy_ == RoutingPolicy::adaptive) {
    adaptive_route_ = route_for(key);
    return {adaptive_route_, latency_of(adaptive_route_)};
  }
  if (routes_version_ != fabric_.version() || routes_.size() >= kMaxCachedRoutes) {
    routes_.clear();
    ++open_epoch_;  // route ids start over
    routes_version_ = fabric_.version();
  }
  RouteCache::Route r;
  if (routes_.find(key, r)) return r;
  const std::vector<WeightedLink> links = route_for(key);
  return routes_.insert(key, links, latency_of(links));
}

sim::Duration FlowModel::latency_of(const std::vector<WeightedLink>& route) const {
  // A sprayed byte crosses each link with probability equal to its weight,
  // so the weighted sum is the mean path latency; for one path it is the
  // plain sum (weights 1: exact in double below 2^53 ps, about 2.5 hours).
  double ps = 0.0;
  for (const WeightedLink& wl : route) {
    ps += wl.weight * static_cast<double>(fabric_.link(wl.link).latency.ps());
  }
  return sim::Duration::from_ps(std::llround(ps));
}

int32_t FlowModel::allocate() {
  if (!free_.empty()) {
    const int32_t s = free_.back();
    free_.pop_back();
    return s;
  }
  flows_.emplace_back();
  return static_cast<int32_t>(flows_.size() - 1);
}

void FlowModel::release(int32_t slot) {
  ActiveFlow& f = flows_[static_cast<size_t>(slot)];
  f.done = nullptr;
  f.joined.clear();
  f.route.clear();
  f.in_use = false;
  f.sending = false;
  free_.push_back(slot);
}

void FlowModel::start(const Transfer& t, TransferDone done) {
  if (t.src_rank == t.dst_rank) {
    sim_.call_in(sim::Duration::zero(), std::move(done));
    return;
  }
  const FlowKey key{t.src_rank, t.dst_rank, t.qp};
  const RouteCache::Route route = route_of(key);
  if (route.links.empty()) {
    unroutable_.record(fabric_, t.src_rank, t.dst_rank, t.bytes, sim_.now());
    return;
  }
  if (t.bytes.count() > 0 && join_identical(key, route, t, done)) return;
  const int32_t slot = allocate();
  ActiveFlow& f = flows_[static_cast<size_t>(slot)];
  f.done = std::move(done);
  f.key = key;
  f.bytes = t.bytes;
  f.route.assign(route.links.begin(), route.links.end());  // keeps the slot's buffer
  f.latency = route.latency;
  f.remaining = t.bytes.as_double();
  f.route_start = f.remaining;
  f.last = sim_.now();
  f.in_use = true;
  if (t.bytes.count() <= 0) {  // nothing to send: only the path's latency
    f.sending = false;
    sim_.schedule_in(f.latency, events_, tag(kDeliver, static_cast<uint64_t>(slot)));
    return;
  }
  f.sending = true;
  solver_.add_flow(slot, f.route);
  if (aggregate_ && route.id >= 0) {
    if (static_cast<size_t>(route.id) >= open_.size()) open_.resize(routes_.num_routes());
    OpenFlow& o = open_[static_cast<size_t>(route.id)];
    if (o.epoch != open_epoch_) o = {open_epoch_, slot};
  }
  request_recompute();
}

bool FlowModel::join_identical(const FlowKey& key, const RouteCache::Route& route,
                               const Transfer& t, TransferDone& done) {
  // Adaptive routes read the links' flow counts: a joined transfer would
  // not count, so the next one could pick differently. Not aggregated.
  if (!aggregate_ || route.id < 0 || static_cast<size_t>(route.id) >= open_.size()) return false;
  const OpenFlow& o = open_[static_cast<size_t>(route.id)];
  if (o.epoch != open_epoch_) return false;
  const int32_t slot = o.slot;
  ActiveFlow& f = flows_[static_cast<size_t>(slot)];
  // Same route id: same links, weights and latency. Also the same size,
  // and still waiting for its first rate.
  const bool same = f.in_use && f.sending && f.bytes == t.bytes && f.latency == route.latency &&
                    f.route.size() == route.links.size() &&
                    std::equal(f.route.begin(), f.route.end(), route.links.begin(),
                               [](const WeightedLink& a, const WeightedLink& b) {
                                 return a.link == b.link && a.weight == b.weight;
                               }) &&
                    solver_.rate(slot) == 0.0 && solver_.bottleneck(slot) == kNoLink;
  if (!same) return false;
  if (f.joined.capacity() == 0 && !spare_members_.empty()) {
    f.joined = std::move(spare_members_.back());
    spare_members_.pop_back();
  }
  f.joined.push_back({key, std::move(done)});
  solver_.set_multiplicity(slot, f.members());
  ++aggregated_;
  return true;
}

void FlowModel::handle(uint64_t t) {
  const uint64_t payload = t >> 2;
  switch (t & 3) {
    case kWake: wake(payload); break;
    case kRecompute: recompute(); break;
    case kDeliver: deliver(static_cast<int32_t>(payload)); break;
    case kDeliverBatch: deliver_batch(static_cast<int32_t>(payload)); break;
    default: break;
  }
}

void FlowModel::request_recompute() {
  if (recompute_pending_) return;
  recompute_pending_ = true;
  sim_.schedule_in(sim::Duration::zero(), events_, tag(kRecompute, 0), kRecomputePriority);
}

void FlowModel::advance(ActiveFlow& f, double rate) {
  const sim::Time now = sim_.now();
  if (now != f.last) {
    f.remaining = std::max(0.0, f.remaining - rate * (now - f.last).seconds());
    f.last = now;
  }
}

void FlowModel::recompute() {
  recompute_pending_ = false;
  ++open_epoch_;  // solved flows have a rate: nothing joins them any more
  for (const MaxMinSolver::RateChange& c : solver_.solve()) {
    advance(flows_[static_cast<size_t>(c.flow)], c.old_rate);
    schedule_drain(c.flow);
  }
  arm_wake();
  if (counters_) {
    for (LinkId l : solver_.changed_links()) {
      const double nominal = fabric_.link(l).bandwidth.bytes_per_s();
      counters_({l, sim_.now(), nominal > 0.0 ? solver_.load(l) / nominal : 0.0, 0});
    }
  }
}

void FlowModel::schedule_drain(int32_t slot) {
  const ActiveFlow& f = flows_[static_cast<size_t>(slot)];
  const double rate = solver_.rate(slot);
  const sim::Time now = sim_.now();
  if (f.remaining <= kDrainedBytes) {
    drains_.set(slot, now);
    return;
  }
  // Rounded once from the bytes left (sim::transfer_time), never from a
  // stored per-byte time. A rate so low that the drain lies past the end of
  // representable time never drains (a starved flow on a zero-capacity link).
  const double ps = rate > 0.0 ? f.remaining / rate * 1e12 : HUGE_VAL;
  if (!(ps < static_cast<double>((sim::Time::max() - now).ps()) * 0.5)) {
    drains_.erase(slot);
    return;
  }
  drains_.set(slot, now + sim::transfer_time(f.remaining, sim::Bandwidth::bytes_per_s(rate)));
}

void FlowModel::arm_wake() {
  if (drains_.empty()) return;
  const sim::Time t = drains_.top_time();
  if (t >= wake_at_) return;  // an earlier wake is already pending
  wake_at_ = t;
  ++wake_generation_;
  sim_.schedule_at(t, events_, tag(kWake, wake_generation_));
}

void FlowModel::wake(uint64_t generation) {
  if (generation != wake_generation_) return;  // superseded by an earlier wake
  wake_at_ = sim::Time::max();
  bool any = false;
  wake_batches_.clear();
  while (!drains_.empty() && drains_.top_time() <= sim_.now()) {
    const int32_t slot = drains_.pop();
    drained(slot);
    batch_delivery(slot);
    any = true;
  }
  // One event per path latency instead of one per flow, scheduled only
  // now: the events this loop would have scheduled one by one were
  // consecutive in the queue's (time, priority, sequence) order within each
  // latency (nothing else is scheduled in between), so delivering them
  // together in drain order runs the same callbacks in the same order.
  for (const auto& [latency, batch] : wake_batches_) {
    sim_.schedule_in(latency, events_, tag(kDeliverBatch, static_cast<uint64_t>(batch)));
  }
  if (any) request_recompute();
  arm_wake();
}

void FlowModel::batch_delivery(int32_t slot) {
  const sim::Duration latency = flows_[static_cast<size_t>(slot)].latency;
  for (const auto& [l, batch] : wake_batches_) {
    if (l == latency) {
      batches_[static_cast<size_t>(batch)].push_back(slot);
      return;
    }
  }
  int32_t batch = 0;
  if (!free_batches_.empty()) {
    batch = free_batches_.back();
    free_batches_.pop_back();
  } else {
    batch = static_cast<int32_t>(batches_.size());
    batches_.emplace_back();
  }
  batches_[static_cast<size_t>(batch)].push_back(slot);
  wake_batches_.push_back({latency, batch});
}

void FlowModel::deliver_batch(int32_t batch) {
  // Taken out first: a completion may start transfers, and their drains
  // open batches of their own.
  std::vector<int32_t> slots;
  slots.swap(batches_[static_cast<size_t>(batch)]);
  for (int32_t slot : slots) deliver(slot);
  slots.clear();
  batches_[static_cast<size_t>(batch)].swap(slots);  // keeps the memory
  free_batches_.push_back(batch);
}

void FlowModel::book_route_bytes(ActiveFlow& f) {
  const double moved = f.route_start - f.remaining;
  if (moved <= 0.0) return;
  const double k = f.members();
  for (const WeightedLink& wl : f.route) ledger_.add(wl.link, wl.weight * moved * k);
  f.route_start = f.remaining;
}

void FlowModel::drained(int32_t slot) {
  ActiveFlow& f = flows_[static_cast<size_t>(slot)];
  f.remaining = 0.0;
  f.last = sim_.now();
  book_route_bytes(f);
  solver_.remove_flow(slot);
  f.sending = false;
}

void FlowModel::deliver(int32_t slot) {
  ActiveFlow& f = flows_[static_cast<size_t>(slot)];
  const auto members = static_cast<int64_t>(1 + f.joined.size());
  totals_.bytes_delivered += sim::Bytes(f.bytes.count() * members);
  totals_.transfers += members;
  TransferDone done = std::move(f.done);
  if (members == 1) {
    release(slot);  // before `done`, which may start transfers that reuse it
    if (done) done();
    return;
  }
  std::vector<ActiveFlow::Member> joined = std::move(f.joined);
  release(slot);
  if (done) done();
  for (ActiveFlow::Member& m : joined) {
    if (m.done) m.done();
  }
  joined.clear();
  spare_members_.push_back(std::move(joined));
}

void FlowModel::on_link_state_changed(LinkId link) {
  bool changed = false;
  for (LinkId l : {link, Fabric::reverse(link)}) {
    if (l < 0 || static_cast<size_t>(l) >= fabric_.num_links()) continue;
    solver_.set_capacity(l, capacity_of(l));
    if (!fabric_.link(l).usable()) {
      for (MaxMinSolver::FlowId f : solver_.flows_on(l)) reroute(f);
    }
    changed = true;
  }
  if (changed) request_recompute();
}

void FlowModel::split(int32_t slot) {
  std::vector<ActiveFlow::Member> joined = std::move(flows_[static_cast<size_t>(slot)].joined);
  flows_[static_cast<size_t>(slot)].joined.clear();
  for (ActiveFlow::Member& m : joined) {
    const int32_t s = allocate();  // may move flows_: index afresh
    ActiveFlow& from = flows_[static_cast<size_t>(slot)];
    ActiveFlow& to = flows_[static_cast<size_t>(s)];
    to.done = std::move(m.done);
    to.key = m.key;
    to.bytes = from.bytes;
    to.route = from.route;
    to.latency = from.latency;
    to.remaining = from.remaining;
    to.last = from.last;
    to.route_start = from.route_start;
    to.in_use = true;
    to.sending = true;
    // Same links and rate as the aggregate's per-member share; reroute()
    // then moves it to its own key's path.
    solver_.add_flow(s, to.route);
    reroute(s);
  }
}

void FlowModel::reroute(int32_t slot) {
  advance(flows_[static_cast<size_t>(slot)], solver_.rate(slot));
  book_route_bytes(flows_[static_cast<size_t>(slot)]);
  // Members have their own keys, which may hash to different paths now.
  if (!flows_[static_cast<size_t>(slot)].joined.empty()) split(slot);
  ActiveFlow& f = flows_[static_cast<size_t>(slot)];
  solver_.remove_flow(slot);
  drains_.erase(slot);
  const RouteCache::Route route = route_of(f.key);
  if (route.links.empty()) {
    // Partitioned: the transfer never completes.
    unroutable_.record(fabric_, f.key.src_rank, f.key.dst_rank, f.bytes, sim_.now());
    release(slot);
    return;
  }
  ++totals_.reroutes;
  f.route.assign(route.links.begin(), route.links.end());
  f.latency = route.latency;
  f.route_start = f.remaining;
  solver_.add_flow(slot, f.route);
}

void FlowModel::count_closed_form(const LinkFootprint& footprint, double scale) {
  ledger_.add(footprint, scale);
  totals_.bytes_delivered += sim::Bytes(std::llround(footprint.delivered * scale));
  totals_.transfers += footprint.transfers;
}

NetworkStats FlowModel::stats(sim::Duration elapsed) const {
  NetworkStats s = totals_;
  unroutable_.fill(s);
  // Bytes of flows still sending count up to now.
  LinkLedger ledger = ledger_;
  const sim::Time now = sim_.now();
  for (size_t slot = 0; slot < flows_.size(); ++slot) {
    const ActiveFlow& f = flows_[slot];
    if (!f.in_use || !f.sending) continue;
    const double rate = solver_.rate(static_cast<int32_t>(slot));
    const double remaining = std::max(0.0, f.remaining - rate * (now - f.last).seconds());
    const double moved = (f.route_start - remaining) * f.members();
    for (const WeightedLink& wl : f.route) ledger.add(wl.link, wl.weight * moved);
  }
  ledger.fill(s, elapsed);
  return s;
}

}  // namespace gcsim::models::network
