// The requests a serving run receives: arrival times (Poisson, gamma with a
// chosen burstiness, all at once, or replayed from a trace) and prompt and
// output lengths (fixed, uniform, normal, Zipf, or from the trace), with
// optional shared prefixes. Pure functions of the config and the seed, drawn
// from per-purpose random streams so that changing one distribution never
// perturbs another's numbers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "workloads/inference/request.h"
#include "workloads/inference/trace_parser.h"

namespace gcsim::workloads::inference {

enum class ArrivalKind { poisson, gamma, burst, trace };
enum class LengthKind { fixed, uniform, normal, zipf, trace };

const char* arrival_name(ArrivalKind k);
const char* length_name(LengthKind k);

// A token-count distribution. Draws are clamped to [min, max] and rounded.
struct LengthDist {
  LengthKind kind = LengthKind::fixed;
  int64_t value = 0;     // fixed
  int64_t min = 1;       // uniform, normal and zipf: smallest value
  int64_t max = 0;       // uniform, normal and zipf: largest value
  double mean = 0;       // normal
  double stddev = 0;     // normal
  double zipf_s = 1.1;   // zipf: P(k) proportional to 1 / (k - min + 1)^s on [min, max]
};

struct RequestsConfig {
  int64_t count = 100;
  ArrivalKind arrival = ArrivalKind::poisson;
  double rate = 1.0;  // requests per second (poisson, gamma)
  double cv = 1.0;    // gamma: coefficient of variation of inter-arrival times (1 = Poisson)
  LengthDist prompt;
  LengthDist output;
  int64_t prefix_groups = 0;  // > 0: each request draws one of this many shared prefixes
  int64_t prefix_len = 0;     // tokens of a shared prefix
  std::vector<TraceRow> trace;  // rows of requests.trace, when given
};

// The requests in arrival order (ties keep generation order), ids 0..n-1.
// Lengths are at least 1 token.
std::vector<Request> generate_requests(const RequestsConfig& c, uint64_t seed);

}  // namespace gcsim::workloads::inference
