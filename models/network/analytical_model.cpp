#include "models/network/analytical_model.h"

#include <algorithm>
#include <cmath>

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
  const FlowKey key{t.src_rank, t.dst_rank, t.qp};
  std::vector<LinkId> path = routing_.ecmp_path(key);
  if (path.empty()) {
    unroutable_.record(fabric_, t.src_rank, t.dst_rank, t.bytes, sim_.now());
    return;
  }
  for (LinkId l : path) ledger_.add(l, t.bytes.as_double());
  int32_t slot;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
  } else {
    slot = static_cast<int32_t>(flights_.size());
    flights_.emplace_back();
  }
  InFlight& f = flights_[static_cast<size_t>(slot)];
  f.done = std::move(done);
  f.key = key;
  f.bytes = t.bytes;
  f.latency = routing_.latency(path);
  f.rate = routing_.bottleneck(path).bytes_per_s();
  f.path = std::move(path);
  f.remaining = t.bytes.as_double();
  f.last = sim_.now();
  f.in_use = true;
  schedule_arrival(slot);
}

void AnalyticalModel::schedule_arrival(int32_t slot) {
  InFlight& f = flights_[static_cast<size_t>(slot)];
  // Rounded once from the bytes left (sim::transfer_time), so an untouched
  // transfer ends at latency + size / bottleneck to the picosecond.
  const sim::Duration d =
      f.latency + sim::transfer_time(f.remaining, sim::Bandwidth::bytes_per_s(f.rate));
  sim_.call_in(d, [this, slot, generation = f.generation] { arrive(slot, generation); });
}

void AnalyticalModel::arrive(int32_t slot, uint64_t generation) {
  InFlight& f = flights_[static_cast<size_t>(slot)];
  if (!f.in_use || f.generation != generation) return;  // re-timed since
  totals_.bytes_delivered += f.bytes;
  ++totals_.transfers;
  TransferDone done = std::move(f.done);
  f.in_use = false;
  f.path.clear();
  ++f.generation;
  free_.push_back(slot);
  done();
}

void AnalyticalModel::on_link_state_changed(LinkId link) {
  const sim::Time now = sim_.now();
  for (size_t i = 0; i < flights_.size(); ++i) {
    InFlight& f = flights_[i];
    if (!f.in_use || std::find(f.path.begin(), f.path.end(), link) == f.path.end()) continue;
    f.remaining = std::max(0.0, f.remaining - f.rate * (now - f.last).seconds());
    f.last = now;
    // The last byte has left: it arrives one latency later whatever happens
    // to the link behind it.
    if (f.remaining <= 0.0) continue;
    const bool lost = std::any_of(f.path.begin(), f.path.end(),
                                  [&](LinkId l) { return !fabric_.link(l).usable(); });
    if (lost) {
      // The unsent bytes leave the old path's books for the new one's.
      for (LinkId l : f.path) ledger_.add(l, -f.remaining);
      std::vector<LinkId> path = routing_.ecmp_path(f.key);
      if (path.empty()) {
        unroutable_.record(fabric_, f.key.src_rank, f.key.dst_rank, f.bytes, now);
        f.in_use = false;  // never completes: the replayer reports who waits on it
        f.path.clear();
        f.done = nullptr;
        ++f.generation;
        free_.push_back(static_cast<int32_t>(i));
        continue;
      }
      ++totals_.reroutes;
      for (LinkId l : path) ledger_.add(l, f.remaining);
      f.path = std::move(path);
      f.latency = routing_.latency(f.path);
    }
    f.rate = routing_.bottleneck(f.path).bytes_per_s();
    ++f.generation;
    schedule_arrival(static_cast<int32_t>(i));
  }
}

void AnalyticalModel::count_closed_form(const LinkFootprint& footprint, double scale) {
  ledger_.add(footprint, scale);
  totals_.bytes_delivered += sim::Bytes(std::llround(footprint.delivered * scale));
  totals_.transfers += footprint.transfers;
}

NetworkStats AnalyticalModel::stats(sim::Duration elapsed) const {
  NetworkStats s = totals_;
  unroutable_.fill(s);
  ledger_.fill(s, elapsed);
  return s;
}

}  // namespace gcsim::models::network
