#include "workloads/inference/serving_metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace gcsim::workloads::inference {

double percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0.0;
  const double pos = q / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

Percentiles summarize(std::vector<double> v) {
  Percentiles p;
  p.count = v.size();
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  p.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  p.p50 = percentile(v, 50);
  p.p90 = percentile(v, 90);
  p.p99 = percentile(v, 99);
  return p;
}

namespace {
double ttft_of(const Request& r) { return (r.first_token - r.arrival).seconds(); }
double e2e_of(const Request& r) { return (r.finish - r.arrival).seconds(); }
double tpot_of(const Request& r) {
  return (e2e_of(r) - ttft_of(r)) / static_cast<double>(r.num_output - 1);
}
}  // namespace

bool meets_slo(const Request& r, const SloConfig& slo) {
  if (r.state != RequestState::finished) return false;
  if (slo.ttft && ttft_of(r) > slo.ttft->seconds()) return false;
  if (slo.tpot && r.num_output > 1 && tpot_of(r) > slo.tpot->seconds()) return false;
  if (slo.e2e && e2e_of(r) > slo.e2e->seconds()) return false;
  return true;
}

ServingMetrics compute_metrics(const std::vector<Request>& requests,
                               const std::vector<double>& itl_s, const SloConfig& slo) {
  ServingMetrics m;
  std::vector<double> ttft, tpot, e2e;
  int64_t good = 0;
  double end = 0;
  for (const Request& r : requests) {
    if (r.state == RequestState::rejected) {
      ++m.rejected;
      continue;
    }
    if (r.state != RequestState::finished) continue;
    ++m.completed;
    m.output_tokens += r.num_output;
    m.prompt_tokens += r.prompt_len;
    ttft.push_back(ttft_of(r));
    e2e.push_back(e2e_of(r));
    if (r.num_output > 1) tpot.push_back(tpot_of(r));
    end = std::max(end, r.finish.seconds());
    if (meets_slo(r, slo)) ++good;
  }
  m.ttft = summarize(ttft);
  m.tpot = summarize(tpot);
  m.e2e = summarize(e2e);
  m.itl = summarize(itl_s);
  m.duration_s = end;
  if (end > 0) {
    m.requests_per_s = static_cast<double>(m.completed) / end;
    m.output_tokens_per_s = static_cast<double>(m.output_tokens) / end;
  }
  if (slo.any()) {
    const auto all = static_cast<double>(m.completed + m.rejected);
    m.slo_attainment = all > 0 ? static_cast<double>(good) / all : 0.0;
    m.goodput_requests_per_s = end > 0 ? static_cast<double>(good) / end : 0.0;
  }
  return m;
}

double mean_requests_in_system(const std::vector<StepRecord>& steps, double end_s) {
  if (end_s <= 0) return 0.0;
  std::vector<const StepRecord*> order;
  order.reserve(steps.size());
  for (const auto& s : steps) order.push_back(&s);
  std::stable_sort(order.begin(), order.end(), [](const StepRecord* a, const StepRecord* b) {
    return a->replica != b->replica ? a->replica < b->replica : a->start < b->start;
  });
  double area = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    const StepRecord& s = *order[i];
    sim::Time until = s.end;
    if (i + 1 < order.size() && order[i + 1]->replica == s.replica) {
      until = std::min(until, order[i + 1]->start);
    }
    area += static_cast<double>(s.running + s.waiting) * (until - s.start).seconds();
  }
  return area / end_s;
}

}  // namespace gcsim::workloads::inference
