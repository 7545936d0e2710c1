#include "models/cluster/scale_up_ports.h"

#include <algorithm>
#include <stdexcept>

namespace gcsim::models::cluster {

ScaleUpPorts::ScaleUpPorts(int num_ranks, double payload_bytes_per_s)
    : payload_(payload_bytes_per_s),
      out_(static_cast<size_t>(std::max(num_ranks, 0))),
      in_(static_cast<size_t>(std::max(num_ranks, 0))) {
  if (!(payload_bytes_per_s > 0.0)) {
    throw std::invalid_argument("ScaleUpPorts: the payload rate must be positive");
  }
}

void ScaleUpPorts::advance(Direction& d, sim::Time now) const {
  if (now > d.last) {
    d.integral += d.load * (now - d.last).seconds();
    d.last = now;
  }
}

std::shared_ptr<ScaleUpPorts::Use> ScaleUpPorts::begin(std::vector<PortLoad> loads, sim::Time now) {
  auto use = std::make_shared<Use>();
  use->began = now;
  for (const PortLoad& l : loads) {
    Direction& o = out_.at(static_cast<size_t>(l.rank));
    Direction& i = in_.at(static_cast<size_t>(l.rank));
    advance(o, now);
    advance(i, now);
    use->at_begin.emplace_back(o.integral, i.integral);
    o.load += l.out_bytes_per_s;
    i.load += l.in_bytes_per_s;
  }
  use->loads = std::move(loads);
  return use;
}

double ScaleUpPorts::stretch(const Use& use, sim::Time now) {
  const double dt = (now - use.began).seconds();
  if (dt <= 0.0) return 1.0;
  double worst = 1.0;
  for (size_t k = 0; k < use.loads.size(); ++k) {
    const PortLoad& l = use.loads[k];
    Direction& o = out_[static_cast<size_t>(l.rank)];
    Direction& i = in_[static_cast<size_t>(l.rank)];
    advance(o, now);
    advance(i, now);
    // The whole direction's mean offered rate over the interval, its own
    // included (it was registered throughout).
    const double out_mean = (o.integral - use.at_begin[k].first) / dt;
    const double in_mean = (i.integral - use.at_begin[k].second) / dt;
    if (l.out_bytes_per_s > 0.0) worst = std::max(worst, out_mean / payload_);
    if (l.in_bytes_per_s > 0.0) worst = std::max(worst, in_mean / payload_);
  }
  return worst;
}

void ScaleUpPorts::end(const Use& use, sim::Time now) {
  for (const PortLoad& l : use.loads) {
    Direction& o = out_[static_cast<size_t>(l.rank)];
    Direction& i = in_[static_cast<size_t>(l.rank)];
    advance(o, now);
    advance(i, now);
    o.load = std::max(0.0, o.load - l.out_bytes_per_s);
    i.load = std::max(0.0, i.load - l.in_bytes_per_s);
  }
}

}  // namespace gcsim::models::cluster
