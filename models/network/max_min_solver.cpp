#include "models/network/max_min_solver.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace gcsim::models::network {

namespace {
// Relative tolerance of the checks: rates and loads are sums of a few
// doubles, exact to ~1e-15, so 1e-9 never mistakes a real difference of a
// max-min allocation (whose rates differ by whole link shares) for noise.
constexpr double kEps = 1e-9;
// Exact load sums are redone after this many incremental updates of a link,
// so rounding in load -= old, load += new cannot accumulate.
constexpr uint32_t kRefreshEvery = 256;
// See solve(): how often dense traffic retries the incremental way.
constexpr int64_t kRetryEvery = 16;
// A recomputed rate this close to the old one (relative) is the old one:
// refilling the same system in another order differs in the last bits, and
// each reported change costs the caller a rescheduled completion.
constexpr double kSameRate = 1e-12;
}  // namespace

MaxMinSolver::MaxMinSolver(size_t num_links) { resize_links(num_links); }

void MaxMinSolver::resize_links(size_t num_links) {
  if (num_links < links_.size()) throw std::logic_error("max-min solver: links only grow");
  links_.resize(num_links);
  link_epoch_.resize(num_links, 0);
  link_local_.resize(num_links, -1);
}

void MaxMinSolver::set_capacity(LinkId l, double bytes_per_s) {
  if (!(bytes_per_s >= 0.0)) throw std::logic_error("max-min solver: negative capacity");
  LinkState& ls = links_.at(idx(l));
  if (ls.capacity == bytes_per_s) return;
  ls.capacity = bytes_per_s;
  // A lower capacity can leave held flows over it, a higher one frees room
  // for flows bottlenecked here: re-solve everything on the link.
  for (const Use& u : ls.uses) seed(u.flow);
}

void MaxMinSolver::add_flow(FlowId f, std::span<const WeightedLink> links) {
  if (f < 0) throw std::logic_error("max-min solver: negative flow id");
  if (idx(f) >= flows_.size()) flows_.resize(idx(f) + 1);
  FlowState& fs = flows_[idx(f)];
  if (fs.active) throw std::logic_error("max-min solver: flow id already in use");
  if (links.empty()) throw std::logic_error("max-min solver: a flow needs at least one link");
  fs.hops.clear();
  for (const WeightedLink& wl : links) {
    if (!(wl.weight > 0.0)) throw std::logic_error("max-min solver: link weights must be > 0");
    if (wl.link < 0 || idx(wl.link) >= links_.size()) {
      throw std::logic_error("max-min solver: unknown link");
    }
    auto same = std::find_if(fs.hops.begin(), fs.hops.end(),
                             [&](const Hop& h) { return h.link == wl.link; });
    if (same != fs.hops.end()) {
      same->weight += wl.weight;
      same->base = same->weight;
    } else {
      fs.hops.push_back({wl.link, -1, wl.weight, wl.weight});
    }
  }
  for (size_t h = 0; h < fs.hops.size(); ++h) {
    LinkState& ls = links_[idx(fs.hops[h].link)];
    fs.hops[h].use = static_cast<int32_t>(ls.uses.size());
    ls.uses.push_back({f, static_cast<int32_t>(h)});
  }
  fs.rate = 0.0;
  fs.bottleneck = kNoLink;
  fs.bneck_index = -1;
  fs.active = true;
  fs.in_s = 0;
  ++active_flows_;
  seed(f);
}

void MaxMinSolver::remove_flow(FlowId f) {
  if (!contains(f)) throw std::logic_error("max-min solver: removing an unknown flow");
  set_bottleneck(f, kNoLink);
  FlowState& fs = flows_[idx(f)];
  for (const Hop& h : fs.hops) {
    LinkState& ls = links_[idx(h.link)];
    const Use moved = ls.uses.back();
    ls.uses[idx(h.use)] = moved;
    flows_[idx(moved.flow)].hops[idx(moved.hop)].use = h.use;
    ls.uses.pop_back();
    if (ls.uses.empty()) {
      ls.load = 0.0;
      ls.updates = 0;
      ls.rate_bound = 0.0;
    } else {
      ls.load -= h.weight * fs.rate;
      if (++ls.updates >= kRefreshEvery) refresh_load(ls);
    }
    // The flows this link held back may now go faster. Seeding them once
    // per solve is enough: until the next solve this list only loses flows
    // (bottlenecks are set in commit()), so a second seeding adds nothing,
    // and the first fixes the order in which they enter S. (Seeding on every
    // removal made an all-to-all's drain quadratic: 112 flows x 112 removals
    // per NIC link.)
    if (ls.seeded_epoch != seed_epoch_) {
      ls.seeded_epoch = seed_epoch_;
      for (FlowId g : ls.bottlenecked) seed(g);
    }
    if (fs.rate != 0.0) unloaded_.push_back(h.link);
  }
  fs.hops.clear();
  fs.rate = 0.0;
  fs.active = false;
  --active_flows_;
}

void MaxMinSolver::set_multiplicity(FlowId f, double k) {
  if (!contains(f)) throw std::logic_error("max-min solver: scaling an unknown flow");
  if (!(k >= 1.0)) throw std::logic_error("max-min solver: multiplicity must be >= 1");
  FlowState& fs = flows_[idx(f)];
  // Rate 0 and no bottleneck: the flow has put nothing on any link yet, so
  // no load or bottleneck list needs to change.
  if (fs.rate != 0.0 || fs.bottleneck != kNoLink) {
    throw std::logic_error("max-min solver: multiplicity changes only before the first solve");
  }
  for (Hop& h : fs.hops) h.weight = h.base * k;
}

std::vector<MaxMinSolver::FlowId> MaxMinSolver::flows_on(LinkId l) const {
  std::vector<FlowId> v;
  for (const Use& u : links_.at(idx(l)).uses) v.push_back(u.flow);
  return v;
}

std::vector<WeightedLink> MaxMinSolver::links_of(FlowId f) const {
  std::vector<WeightedLink> v;
  for (const Hop& h : flows_.at(idx(f)).hops) v.push_back({h.link, h.weight});
  return v;
}

void MaxMinSolver::begin_solve() {
  if (++seed_epoch_ == 0) {  // wrapped: forget every stamp
    for (LinkState& ls : links_) ls.seeded_epoch = 0;
    seed_epoch_ = 1;
  }
  changes_.clear();
  changed_links_.clear();
  if (++change_epoch_ == 0) {  // wrapped: forget every stamp
    for (LinkState& ls : links_) ls.changed_epoch = 0;
    change_epoch_ = 1;
  }
  for (LinkId l : unloaded_) mark_changed(l);
  unloaded_.clear();
  if (++s_epoch_ == 0) {
    for (FlowState& fs : flows_) fs.in_s = 0;
    s_epoch_ = 1;
  }
  s_.clear();
}

void MaxMinSolver::mark_changed(LinkId l) {
  LinkState& ls = links_[idx(l)];
  if (ls.changed_epoch == change_epoch_) return;
  ls.changed_epoch = change_epoch_;
  changed_links_.push_back(l);
}

const std::vector<MaxMinSolver::RateChange>& MaxMinSolver::solve() {
  begin_solve();
  if (pending_.empty()) return changes_;
  // Densely coupled traffic (every change reaches most flows) widens S to
  // all flows solve after solve; then start from all of them, and try the
  // incremental way again every kRetryEvery solves in case the traffic
  // thinned out.
  if (widened_in_a_row_ >= 2 && counters_.solves % kRetryEvery != 0) {
    add_all_to_s();
  } else {
    for (FlowId f : pending_) {
      if (contains(f) && flows_[idx(f)].in_s != s_epoch_) add_to_s(f);
    }
  }
  pending_.clear();
  if (!s_.empty()) run();
  return changes_;
}

const std::vector<MaxMinSolver::RateChange>& MaxMinSolver::solve_full() {
  begin_solve();
  pending_.clear();
  add_all_to_s();
  if (!s_.empty()) run();
  return changes_;
}

void MaxMinSolver::add_to_s(FlowId f) {
  flows_[idx(f)].in_s = s_epoch_;
  s_.push_back(f);
}

void MaxMinSolver::add_all_to_s() {
  for (size_t f = 0; f < flows_.size(); ++f) {
    if (flows_[f].active && flows_[f].in_s != s_epoch_) add_to_s(static_cast<FlowId>(f));
  }
}

void MaxMinSolver::run() {
  ++counters_.solves;
  for (;;) {
    fill();
    ++counters_.rounds;
    counters_.flows_recomputed += static_cast<int64_t>(s_.size());
    if (!expand()) break;
    // Once S holds a quarter of the flows, one more round over all of them
    // costs less than the rounds a densely coupled system would still need
    // (random traffic at 10 flows per NIC: 1.1x a full solve's work this way,
    // 2.9x with no limit; at 1 flow per NIC the limit is never reached).
    if (s_.size() * 4 > active_flows_) add_all_to_s();
  }
  widened_in_a_row_ = s_.size() == active_flows_ ? widened_in_a_row_ + 1 : 0;
  commit();
}

int32_t MaxMinSolver::local_of(LinkId l) {
  if (link_epoch_[idx(l)] != round_epoch_) {
    link_epoch_[idx(l)] = round_epoch_;
    link_local_[idx(l)] = static_cast<int32_t>(locals_.size());
    Local lc;
    lc.link = l;
    locals_.push_back(lc);
  }
  return link_local_[idx(l)];
}

void MaxMinSolver::fill() {
  if (++round_epoch_ == 0) {
    std::fill(link_epoch_.begin(), link_epoch_.end(), 0u);
    round_epoch_ = 1;
  }
  locals_.clear();
  s_hops_.clear();
  sflows_.resize(s_.size());
  // The links S touches, what S used there, and S's weight on each.
  for (size_t i = 0; i < s_.size(); ++i) {
    const FlowState& fs = flows_[idx(s_[i])];
    SFlow& sf = sflows_[i];
    sf = SFlow{};
    sf.id = s_[i];
    sf.old_rate = fs.rate;
    sf.hop_begin = static_cast<int32_t>(s_hops_.size());
    for (const Hop& h : fs.hops) {
      const int32_t local = local_of(h.link);
      Local& lc = locals_[idx(local)];
      lc.s_old_load += h.weight * fs.rate;
      lc.weight += h.weight;
      ++lc.s_count;
      if (fs.bottleneck == h.link) ++lc.s_old_bneck;
      s_hops_.push_back({local, h.weight});
    }
    sf.hop_end = static_cast<int32_t>(s_hops_.size());
  }
  // S's flows per link, contiguous (CSR).
  int32_t offset = 0;
  for (Local& lc : locals_) {
    lc.begin = offset;
    offset += lc.s_count;
  }
  members_.resize(idx(offset));
  for (size_t i = 0; i < sflows_.size(); ++i) {
    for (int32_t k = sflows_[i].hop_begin; k < sflows_[i].hop_end; ++k) {
      Local& lc = locals_[idx(s_hops_[idx(k)].local)];
      members_[idx(lc.begin + lc.unfrozen++)] = static_cast<int32_t>(i);
    }
  }
  // Min-heap on the level at which each link would saturate if every
  // unfrozen flow of S ran at that level; ties by local index (deterministic).
  auto later = [](const HeapEntry& a, const HeapEntry& b) {
    return a.level != b.level ? a.level > b.level : a.local > b.local;
  };
  auto key = [](const Local& lc) {
    return std::max(lc.rem, 0.0) / std::max(lc.weight, std::numeric_limits<double>::min());
  };
  heap_.clear();
  for (size_t i = 0; i < locals_.size(); ++i) {
    Local& lc = locals_[i];
    const LinkState& ls = links_[idx(lc.link)];
    lc.outside = std::max(0.0, ls.load - lc.s_old_load);
    lc.rem = std::max(0.0, ls.capacity - lc.outside);
    heap_.push_back({key(lc), static_cast<int32_t>(i), 0});
  }
  std::make_heap(heap_.begin(), heap_.end(), later);
  // Progressive filling. Freezing flows at level t on a link whose own
  // saturation level is t' >= t never lowers t' ((rem - w t) / (W - w) >= t'
  // when rem = t' W), so a stale heap entry is a lower bound: re-push it
  // with its current key instead of pushing on every freeze.
  double level = 0.0;
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), later);
    const HeapEntry e = heap_.back();
    heap_.pop_back();
    Local& lc = locals_[idx(e.local)];
    if (lc.unfrozen == 0) continue;
    if (e.version != lc.version) {
      heap_.push_back({key(lc), e.local, lc.version});
      std::push_heap(heap_.begin(), heap_.end(), later);
      continue;
    }
    level = std::max(level, e.level);  // rounding must not move the level back
    lc.froze_here = true;
    lc.level = level;
    for (int32_t k = lc.begin; k < lc.begin + lc.s_count; ++k) {
      const int32_t i = members_[idx(k)];
      if (!sflows_[idx(i)].frozen) freeze(i, level, e.local);
    }
  }
  for (SFlow& sf : sflows_) {
    if (std::fabs(sf.new_rate - sf.old_rate) <= kSameRate * sf.old_rate) sf.new_rate = sf.old_rate;
    for (int32_t k = sf.hop_begin; k < sf.hop_end; ++k) {
      const SHop& h = s_hops_[idx(k)];
      Local& lc = locals_[idx(h.local)];
      lc.s_new_load += h.weight * sf.new_rate;
      lc.max_s_rate = std::max(lc.max_s_rate, sf.new_rate);
    }
  }
}

void MaxMinSolver::freeze(int32_t i, double level, int32_t at) {
  SFlow& sf = sflows_[idx(i)];
  sf.frozen = true;
  sf.new_rate = level;
  sf.froze_at = at;
  for (int32_t k = sf.hop_begin; k < sf.hop_end; ++k) {
    const SHop& h = s_hops_[idx(k)];
    Local& lc = locals_[idx(h.local)];
    lc.rem -= h.weight * level;
    lc.weight -= h.weight;
    --lc.unfrozen;
    ++lc.version;
  }
}

bool MaxMinSolver::expand() {
  const size_t before = s_.size();
  for (Local& lc : locals_) {
    LinkState& ls = links_[idx(lc.link)];
    // (A) S froze flows here at lc.level: a held flow faster than that
    // would make this link no bottleneck for them.
    if (lc.froze_here && idx(lc.s_count) < ls.uses.size() &&
        ls.rate_bound > lc.level * (1.0 + kEps)) {
      double held_max = 0.0;
      for (const Use& u : ls.uses) {
        const FlowState& g = flows_[idx(u.flow)];
        if (g.in_s == s_epoch_) continue;
        held_max = std::max(held_max, g.rate);
        if (g.rate > lc.level * (1.0 + kEps)) {
          // g must slow down, which empties its own bottleneck: the flows
          // held there would fail (B) next round, so take them now.
          add_to_s(u.flow);
          if (g.bottleneck != kNoLink) {
            for (FlowId h : links_[idx(g.bottleneck)].bottlenecked) {
              if (flows_[idx(h)].in_s != s_epoch_) add_to_s(h);
            }
          }
        }
      }
      ls.rate_bound = held_max;  // commit() adds S's new rates
    }
    // (B) held flows bottlenecked here need the link still full and none
    // of S faster than them.
    const auto held_bneck = static_cast<int32_t>(ls.bottlenecked.size()) - lc.s_old_bneck;
    if (held_bneck > 0) {
      const bool saturated = lc.outside + lc.s_new_load >= ls.capacity * (1.0 - kEps);
      if (!saturated || lc.max_s_rate > ls.level * (1.0 + kEps)) {
        for (FlowId g : ls.bottlenecked) {
          if (flows_[idx(g)].in_s != s_epoch_) add_to_s(g);
        }
      }
    }
  }
  return s_.size() > before;
}

void MaxMinSolver::commit() {
  for (const SFlow& sf : sflows_) {
    FlowState& fs = flows_[idx(sf.id)];
    if (sf.new_rate != fs.rate) {
      changes_.push_back({sf.id, fs.rate});
      fs.rate = sf.new_rate;
    }
    const LinkId b = locals_[idx(sf.froze_at)].link;
    if (b != fs.bottleneck) set_bottleneck(sf.id, b);
  }
  counters_.rates_changed += static_cast<int64_t>(changes_.size());
  for (const Local& lc : locals_) {
    LinkState& ls = links_[idx(lc.link)];
    if (lc.s_new_load != lc.s_old_load) mark_changed(lc.link);
    ls.load = lc.outside + lc.s_new_load;
    if (++ls.updates >= kRefreshEvery) refresh_load(ls);
    if (lc.froze_here) ls.level = lc.level;
    ls.rate_bound = std::max(ls.rate_bound, lc.max_s_rate);
  }
}

void MaxMinSolver::set_bottleneck(FlowId f, LinkId l) {
  FlowState& fs = flows_[idx(f)];
  if (fs.bottleneck != kNoLink) {
    std::vector<FlowId>& list = links_[idx(fs.bottleneck)].bottlenecked;
    const FlowId moved = list.back();
    list[idx(fs.bneck_index)] = moved;
    flows_[idx(moved)].bneck_index = fs.bneck_index;
    list.pop_back();
  }
  fs.bottleneck = l;
  fs.bneck_index = -1;
  if (l != kNoLink) {
    std::vector<FlowId>& list = links_[idx(l)].bottlenecked;
    fs.bneck_index = static_cast<int32_t>(list.size());
    list.push_back(f);
  }
}

void MaxMinSolver::refresh_load(LinkState& ls) {
  double sum = 0.0;
  for (const Use& u : ls.uses) {
    const FlowState& fs = flows_[idx(u.flow)];
    sum += fs.hops[idx(u.hop)].weight * fs.rate;
  }
  ls.load = sum;
  ls.updates = 0;
}

}  // namespace gcsim::models::network
