// Latency and throughput figures of a serving run with the definitions of
// vLLM's benchmark_serving (../shared/REFERENCE.md): TTFT per request;
// TPOT = (E2E - TTFT) / (output tokens - 1) per request with at least two
// tokens; ITL = every gap between consecutive token emissions, pooled over
// requests; goodput = requests per second that meet every SLO set.
// Percentiles interpolate linearly between order statistics (numpy's
// default).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "workloads/inference/replica.h"
#include "workloads/inference/request.h"
#include "workloads/inference/serving_config.h"

namespace gcsim::workloads::inference {

struct Percentiles {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0;
  size_t count = 0;
};

// Linear-interpolation percentile q in [0, 100] of sorted values.
double percentile(const std::vector<double>& sorted, double q);
Percentiles summarize(std::vector<double> values);

struct ServingMetrics {
  Percentiles ttft, tpot, itl, e2e;  // seconds
  int64_t completed = 0;
  int64_t rejected = 0;
  int64_t output_tokens = 0;
  int64_t prompt_tokens = 0;
  double duration_s = 0;  // from time 0 to the last completion
  double requests_per_s = 0;
  double output_tokens_per_s = 0;
  std::optional<double> slo_attainment;  // of all requests (rejected ones miss)
  std::optional<double> goodput_requests_per_s;
};

// `itl_s` is the pooled inter-token gaps in seconds.
ServingMetrics compute_metrics(const std::vector<Request>& requests,
                               const std::vector<double>& itl_s, const SloConfig& slo);

// Little's law check: the time-average number of requests in the engines
// (running + waiting as each step's scheduler saw them, held until the
// replica's next step or the step's end, zero while a replica idles) over
// [0, end_s]. At steady state it equals arrival rate x mean E2E.
double mean_requests_in_system(const std::vector<StepRecord>& steps, double end_s);

// Whether one finished request meets every SLO set.
bool meets_slo(const Request& r, const SloConfig& slo);

}  // namespace gcsim::workloads::inference
