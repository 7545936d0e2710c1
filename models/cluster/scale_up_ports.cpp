#include "models/cluster/scale_up_ports.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace gcsim::models::cluster {

namespace {
// Work left below this (seconds of time alone, 1 ps) is done: what rounding
// of the simulator's picoseconds leaves behind.
constexpr double kDoneS = 1e-12;
}  // namespace

ScaleUpPorts::ScaleUpPorts(sim::Simulator& sim, int num_ranks, double link_bytes_per_s)
    : sim_(sim),
      link_(link_bytes_per_s),
      out_(static_cast<size_t>(std::max(num_ranks, 0)), 0.0),
      in_(static_cast<size_t>(std::max(num_ranks, 0)), 0.0) {
  if (!(link_bytes_per_s > 0.0)) {
    throw std::invalid_argument("ScaleUpPorts: the link rate must be positive");
  }
}

double ScaleUpPorts::pace(const Use& use) const {
  // 1 + the others' occupancy of its busiest direction.
  double worst = 1.0;
  for (const PortLoad& l : use.loads) {
    const auto r = static_cast<size_t>(l.rank);
    if (l.out_bytes_per_s > 0.0) {
      worst = std::max(worst, 1.0 + std::max(0.0, out_[r] - l.out_bytes_per_s) / link_);
    }
    if (l.in_bytes_per_s > 0.0) {
      worst = std::max(worst, 1.0 + std::max(0.0, in_[r] - l.in_bytes_per_s) / link_);
    }
  }
  return 1.0 / worst;
}

void ScaleUpPorts::advance_all() {
  const sim::Time now = sim_.now();
  for (const auto& u : active_) {
    if (now > u->last) u->progress_s += (now - u->last).seconds() * pace(*u);
    u->last = now;
  }
}

std::shared_ptr<ScaleUpPorts::Use> ScaleUpPorts::begin(std::vector<PortLoad> loads) {
  advance_all();
  auto use = std::make_shared<Use>();
  use->began = use->last = sim_.now();
  for (const PortLoad& l : loads) {
    out_.at(static_cast<size_t>(l.rank)) += l.out_bytes_per_s;
    in_.at(static_cast<size_t>(l.rank)) += l.in_bytes_per_s;
  }
  use->loads = std::move(loads);
  active_.push_back(use);
  schedule_ends();
  return use;
}

void ScaleUpPorts::moved(const std::shared_ptr<Use>& use, std::function<void()> done) {
  advance_all();
  use->work_s = (sim_.now() - use->began).seconds();
  use->done = std::move(done);
  if (use->work_s - use->progress_s <= kDoneS) {
    finish(use);
    return;
  }
  schedule_ends();
}

void ScaleUpPorts::schedule_ends() {
  for (const auto& u : active_) {
    if (u->work_s < 0.0) continue;  // still moving at the engine's pace alone
    const uint64_t stamp = ++u->generation;
    const double left = std::max(0.0, u->work_s - u->progress_s) / pace(*u);
    sim_.call_in(sim::Duration::from_seconds(left), [this, u, stamp] {
      if (u->generation != stamp) return;  // its pace changed since: a later event ends it
      advance_all();
      finish(u);
    });
  }
}

void ScaleUpPorts::finish(const std::shared_ptr<Use>& use) {
  for (const PortLoad& l : use->loads) {
    const auto r = static_cast<size_t>(l.rank);
    out_[r] = std::max(0.0, out_[r] - l.out_bytes_per_s);
    in_[r] = std::max(0.0, in_[r] - l.in_bytes_per_s);
  }
  active_.erase(std::remove(active_.begin(), active_.end(), use), active_.end());
  ++use->generation;  // no pending end of its own fires after this
  auto done = std::move(use->done);
  schedule_ends();  // the others speed up
  if (done) done();
}

}  // namespace gcsim::models::cluster
