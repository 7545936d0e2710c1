#include "workloads/failures/failure_process.h"

#include <cmath>
#include <queue>
#include <string>

#include "sim/engine/random.h"

namespace gcsim::workloads::failures {

double weibull_scale_for_mean(double mean, double shape) {
  return mean / std::tgamma(1.0 + 1.0 / shape);
}

namespace {

struct Pending {
  int64_t at_ps;  // next failure, picoseconds; beyond the horizon = never
  int cls;
  int64_t index;
  bool operator>(const Pending& o) const {
    if (at_ps != o.at_ps) return at_ps > o.at_ps;
    if (cls != o.cls) return cls > o.cls;
    return index > o.index;
  }
};

class LifetimeDraw {
 public:
  LifetimeDraw(const FailureRates& r, ComponentClass c)
      : mean_s_(r.per_hour[c] > 0 ? 3600.0 / r.per_hour[c] : 0.0),
        weibull_(r.lifetime == Lifetime::weibull),
        shape_(r.weibull_shape),
        scale_s_(weibull_ ? weibull_scale_for_mean(mean_s_, shape_) : 0.0) {}
  bool fails() const { return mean_s_ > 0; }
  // Seconds until the next failure of a new component.
  double draw(sim::RandomStream& rng) const {
    if (!weibull_) return rng.exponential(mean_s_);
    // Inverse CDF: eta (-ln(1 - U))^(1/k).
    return scale_s_ * std::pow(-std::log1p(-rng.uniform()), 1.0 / shape_);
  }

 private:
  double mean_s_;
  bool weibull_;
  double shape_;
  double scale_s_;
};

}  // namespace

std::vector<FailureEvent> draw_failures(const FailureRates& rates, const ComponentCounts& counts,
                                        sim::Duration horizon, uint64_t seed) {
  const int64_t end_ps = horizon.ps();
  const double end_s = horizon.seconds();
  std::vector<LifetimeDraw> draws;
  std::vector<sim::RandomStream> streams;
  for (ComponentClass c : kAllComponentClasses) {
    draws.emplace_back(rates, c);
    streams.emplace_back(seed, std::string("failures/") + component_class_name(c));
  }
  // A lifetime past the horizon never fires; clamping first keeps the
  // picosecond conversion inside int64 (a link's mean life is ~1e21 ps).
  auto next_at = [&](int cls, double from_s) -> int64_t {
    const double at_s = from_s + draws[cls].draw(streams[cls]);
    if (at_s >= end_s) return end_ps;
    return std::min(end_ps, sim::Duration::from_seconds(at_s).ps());
  };

  std::priority_queue<Pending, std::vector<Pending>, std::greater<>> heap;
  for (int cls = 0; cls < kComponentClasses; ++cls) {
    if (!draws[cls].fails()) continue;
    const int64_t n = counts.count.v[cls];
    for (int64_t i = 0; i < n; ++i) {
      const int64_t at = next_at(cls, 0.0);
      if (at < end_ps) heap.push({at, cls, i});
    }
  }
  const int switch_cls = static_cast<int>(ComponentClass::switch_);
  const int64_t links = counts.count[ComponentClass::link];
  std::vector<FailureEvent> out;
  while (!heap.empty()) {
    const Pending p = heap.top();
    heap.pop();
    FailureEvent e;
    e.when = sim::Time::from_ps(p.at_ps);
    e.component = static_cast<ComponentClass>(p.cls);
    e.index = p.index;
    if (p.cls == switch_cls && links > 0) {
      // The switch's rail: links [index x L, index x L + L) modulo the pool.
      // They go down and come back with the switch; a link's own pending
      // failure stays in the heap (memoryless for exponential lifetimes; for
      // Weibull this keeps the link's age, a small approximation).
      e.correlated_links = static_cast<int>(std::min<int64_t>(counts.links_per_switch, links));
    }
    out.push_back(e);
    const double from_s = static_cast<double>(p.at_ps) * 1e-12;
    const int64_t at = next_at(p.cls, from_s);
    if (at < end_ps) heap.push({at, p.cls, p.index});
  }
  return out;
}

}  // namespace gcsim::workloads::failures
