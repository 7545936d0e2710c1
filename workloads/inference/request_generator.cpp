#include "workloads/inference/request_generator.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "sim/engine/random.h"

namespace gcsim::workloads::inference {

const char* arrival_name(ArrivalKind k) {
  switch (k) {
    case ArrivalKind::poisson: return "poisson";
    case ArrivalKind::gamma: return "gamma";
    case ArrivalKind::burst: return "burst";
    case ArrivalKind::trace: return "trace";
  }
  return "?";
}

const char* length_name(LengthKind k) {
  switch (k) {
    case LengthKind::fixed: return "fixed";
    case LengthKind::uniform: return "uniform";
    case LengthKind::normal: return "normal";
    case LengthKind::zipf: return "zipf";
    case LengthKind::trace: return "trace";
  }
  return "?";
}

namespace {

// Standard normal by Box-Muller (one of the pair; the stream stays simple).
double normal(sim::RandomStream& r) {
  const double u1 = 1.0 - r.uniform();  // (0, 1]
  const double u2 = r.uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

// Gamma(shape k, scale theta) by Marsaglia and Tsang (2000), "A simple
// method for generating gamma variables"; shape < 1 through the boost
// Gamma(k) = Gamma(k + 1) * U^(1/k).
double gamma(sim::RandomStream& r, double k, double theta) {
  double boost = 1.0;
  if (k < 1.0) {
    boost = std::pow(1.0 - r.uniform(), 1.0 / k);
    k += 1.0;
  }
  const double d = k - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    const double x = normal(r);
    double v = 1.0 + c * x;
    if (v <= 0.0) continue;
    v = v * v * v;
    const double u = 1.0 - r.uniform();
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v * theta * boost;
  }
}

// Draws from one LengthDist; `trace_value` is this request's trace column.
class LengthSampler {
 public:
  LengthSampler(const LengthDist& d, sim::RandomStream stream) : d_(d), r_(stream) {
    if (d.kind == LengthKind::zipf) {
      // Inverse-CDF table over [min, max].
      double sum = 0;
      for (int64_t k = d.min; k <= d.max; ++k) {
        sum += 1.0 / std::pow(static_cast<double>(k - d.min + 1), d.zipf_s);
        cdf_.push_back(sum);
      }
      for (double& x : cdf_) x /= sum;
    }
  }
  int64_t draw(int64_t trace_value) {
    int64_t v = 0;
    switch (d_.kind) {
      case LengthKind::fixed: v = d_.value; break;
      case LengthKind::uniform:
        v = d_.min + static_cast<int64_t>(r_.uniform_int(static_cast<uint64_t>(d_.max - d_.min + 1)));
        break;
      case LengthKind::normal:
        v = std::llround(d_.mean + d_.stddev * normal(r_));
        v = std::clamp(v, d_.min, d_.max);
        break;
      case LengthKind::zipf: {
        const double u = r_.uniform();
        const auto it = std::upper_bound(cdf_.begin(), cdf_.end(), u);
        v = d_.min + std::min<int64_t>(it - cdf_.begin(), static_cast<int64_t>(cdf_.size()) - 1);
        break;
      }
      case LengthKind::trace: v = trace_value; break;
    }
    return std::max<int64_t>(v, 1);
  }

 private:
  LengthDist d_;
  sim::RandomStream r_;
  std::vector<double> cdf_;
};

}  // namespace

std::vector<Request> generate_requests(const RequestsConfig& c, uint64_t seed) {
  sim::RandomStream arrivals(seed, "requests/arrival");
  sim::RandomStream prefixes(seed, "requests/prefix");
  LengthSampler prompt(c.prompt, sim::RandomStream(seed, "requests/prompt"));
  LengthSampler output(c.output, sim::RandomStream(seed, "requests/output"));
  std::vector<Request> out;
  out.reserve(static_cast<size_t>(c.count));
  double t = 0.0;
  for (int64_t i = 0; i < c.count; ++i) {
    const TraceRow* row = i < static_cast<int64_t>(c.trace.size()) ? &c.trace[static_cast<size_t>(i)]
                                                                   : nullptr;
    Request r;
    r.id = i;
    switch (c.arrival) {
      case ArrivalKind::poisson: t += arrivals.exponential(1.0 / c.rate); break;
      case ArrivalKind::gamma: {
        // Shape 1/cv^2 and mean 1/rate: the inter-arrival times have
        // coefficient of variation cv (vLLM benchmark_serving's burstiness
        // is 1/cv^2).
        const double k = 1.0 / (c.cv * c.cv);
        t += gamma(arrivals, k, 1.0 / (c.rate * k));
        break;
      }
      case ArrivalKind::burst: t = 0.0; break;
      case ArrivalKind::trace: t = row ? row->arrival_s : t; break;
    }
    r.arrival = sim::Time::zero() + sim::Duration::from_seconds(t);
    r.prompt_len = prompt.draw(row ? row->prompt : 1);
    r.output_len = output.draw(row ? row->output : 1);
    if (row && row->prefix_id >= 0) {
      r.prefix_id = row->prefix_id;
    } else if (c.prefix_groups > 0) {
      r.prefix_id = static_cast<int64_t>(prefixes.uniform_int(static_cast<uint64_t>(c.prefix_groups)));
    }
    if (r.prefix_id >= 0) r.prefix_len = std::min(c.prefix_len, r.prompt_len);
    out.push_back(r);
  }
  // A trace need not be sorted; the run needs arrival order.
  std::stable_sort(out.begin(), out.end(),
                   [](const Request& a, const Request& b) { return a.arrival < b.arrival; });
  for (size_t i = 0; i < out.size(); ++i) out[i].id = static_cast<int64_t>(i);
  return out;
}

}  // namespace gcsim::workloads::inference
