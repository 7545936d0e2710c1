// Request generation: Poisson and gamma arrivals have the rate and the
// burstiness asked for; lengths follow their distributions; the same seed
// gives the same requests; traces parse with line-numbered errors.
#include <cmath>
#include <numeric>

#include "catch.h"
#include "workloads/inference/request_generator.h"

using namespace gcsim;
using namespace gcsim::workloads::inference;

namespace {

// Coefficient of variation of the inter-arrival gaps.
double gap_cv(const std::vector<Request>& rs, double* mean_out) {
  std::vector<double> gaps;
  double prev = 0;
  for (const auto& r : rs) {
    gaps.push_back(r.arrival.seconds() - prev);
    prev = r.arrival.seconds();
  }
  const double mean = std::accumulate(gaps.begin(), gaps.end(), 0.0) / gaps.size();
  double var = 0;
  for (double g : gaps) var += (g - mean) * (g - mean);
  var /= gaps.size();
  if (mean_out) *mean_out = mean;
  return std::sqrt(var) / mean;
}

RequestsConfig base(int64_t n) {
  RequestsConfig c;
  c.count = n;
  c.prompt.value = 100;
  c.output.value = 10;
  return c;
}

}  // namespace

TEST_CASE("Poisson arrivals: mean gap 1/rate, coefficient of variation 1", "[inference][requests]") {
  RequestsConfig c = base(50'000);
  c.rate = 5.0;
  const auto rs = generate_requests(c, 7);
  double mean = 0;
  const double cv = gap_cv(rs, &mean);
  // 50,000 exponential gaps: the sample mean is within 1% of 0.2 s (its
  // standard error is 0.2 / sqrt(50,000) = 0.45%), the CV within 2% of 1.
  CHECK(mean == Approx(0.2).epsilon(0.015));
  CHECK(cv == Approx(1.0).epsilon(0.02));
  for (size_t i = 1; i < rs.size(); ++i) CHECK(rs[i].arrival >= rs[i - 1].arrival);
}

TEST_CASE("gamma arrivals: the configured burstiness at the same mean rate", "[inference][requests]") {
  for (double want : {0.5, 3.0}) {
    RequestsConfig c = base(200'000);
    c.arrival = ArrivalKind::gamma;
    c.rate = 10.0;
    c.cv = want;
    double mean = 0;
    const double cv = gap_cv(generate_requests(c, 3), &mean);
    INFO("cv " << want);
    CHECK(mean == Approx(0.1).epsilon(0.03));
    CHECK(cv == Approx(want).epsilon(0.06));
  }
}

TEST_CASE("burst, determinism and seeds", "[inference][requests]") {
  RequestsConfig c = base(100);
  c.arrival = ArrivalKind::burst;
  for (const auto& r : generate_requests(c, 1)) CHECK(r.arrival == sim::Time::zero());
  c.arrival = ArrivalKind::poisson;
  c.prompt = {LengthKind::uniform, 0, 10, 1000};
  const auto a = generate_requests(c, 11), b = generate_requests(c, 11), d = generate_requests(c, 12);
  bool same = true, differ = false;
  for (size_t i = 0; i < a.size(); ++i) {
    same = same && a[i].arrival == b[i].arrival && a[i].prompt_len == b[i].prompt_len;
    differ = differ || a[i].arrival != d[i].arrival;
  }
  CHECK(same);
  CHECK(differ);
}

TEST_CASE("length distributions", "[inference][requests]") {
  RequestsConfig c = base(40'000);
  c.prompt = {LengthKind::uniform, 0, 100, 300};
  c.output.kind = LengthKind::normal;
  c.output.mean = 200;
  c.output.stddev = 50;
  c.output.min = 150;
  c.output.max = 10'000;
  const auto rs = generate_requests(c, 5);
  double sum = 0, out = 0;
  int64_t lo = 1'000'000, hi = 0, below = 0;
  for (const auto& r : rs) {
    sum += r.prompt_len;
    lo = std::min(lo, r.prompt_len);
    hi = std::max(hi, r.prompt_len);
    out += r.output_len;
    below += r.output_len < 150;
  }
  CHECK(lo == 100);
  CHECK(hi == 300);
  CHECK(sum / rs.size() == Approx(200).epsilon(0.01));
  CHECK(below == 0);  // clamped at min
  // Normal(200, 50) clamped below at 150: mean 200 + 50 x (phi(-1) - ... );
  // E[max(X, 150)] = 150 x 0.1587 + (200 x 0.8413 + 50 x 0.2420) = 204.17.
  CHECK(out / rs.size() == Approx(204.17).epsilon(0.01));

  // Zipf on [1, 4] with s = 1: P(k) = (1/k) / (1 + 1/2 + 1/3 + 1/4) = 0.48, 0.24, 0.16, 0.12.
  RequestsConfig z = base(100'000);
  z.prompt = {LengthKind::zipf, 0, 1, 4, 0, 0, 1.0};
  std::vector<int> counts(5, 0);
  for (const auto& r : generate_requests(z, 9)) ++counts[static_cast<size_t>(r.prompt_len)];
  CHECK(counts[1] / 1e5 == Approx(0.48).epsilon(0.02));
  CHECK(counts[2] / 1e5 == Approx(0.24).epsilon(0.03));
  CHECK(counts[4] / 1e5 == Approx(0.12).epsilon(0.04));
}

TEST_CASE("shared prefixes", "[inference][requests]") {
  RequestsConfig c = base(1000);
  c.prefix_groups = 4;
  c.prefix_len = 64;
  c.prompt = {LengthKind::uniform, 0, 32, 128};
  std::vector<int> seen(4, 0);
  for (const auto& r : generate_requests(c, 2)) {
    REQUIRE(r.prefix_id >= 0);
    REQUIRE(r.prefix_id < 4);
    ++seen[static_cast<size_t>(r.prefix_id)];
    CHECK(r.prefix_len == std::min<int64_t>(64, r.prompt_len));
  }
  for (int s : seen) CHECK(s > 150);
}

TEST_CASE("traces: CSV with or without a header, JSONL, and line-numbered errors",
          "[inference][requests]") {
  const auto rows = parse_trace("# a comment\n0.5,100,20\n\n1.25,200,30,7\n", false);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].arrival_s == 0.5);
  CHECK(rows[0].prefix_id == -1);
  CHECK(rows[1].prompt == 200);
  CHECK(rows[1].prefix_id == 7);
  CHECK(rows[1].line == 4);
  const auto header = parse_trace("output_tokens,prompt_tokens,arrival_s\n5,50,0.1\n", false);
  CHECK(header[0].output == 5);
  CHECK(header[0].prompt == 50);
  const auto json = parse_trace("{\"arrival_s\": 2, \"prompt_tokens\": 9, \"output_tokens\": 3}\n",
                                true);
  CHECK(json[0].prompt == 9);

  const auto error_line = [](const std::string& text, bool jsonl) {
    try {
      parse_trace(text, jsonl);
    } catch (const TraceError& e) {
      return e.line;
    }
    return -1;
  };
  CHECK(error_line("0,10,10\n1,abc,10\n", false) == 2);
  CHECK(error_line("0,10,10\n\n# x\n1,10\n", false) == 4);        // two fields
  CHECK(error_line("-1,10,10\n", false) == 1);                     // negative time
  CHECK(error_line("0,10.5,10\n", false) == 1);                    // fractional tokens
  CHECK(error_line("{\"arrival_s\": 0, \"prompt_tokens\": 3}\n", true) == 1);  // no output
  CHECK(error_line("{\"arrival_s\": 0,\n", true) == 1);
  CHECK(error_line("# nothing\n", false) == 0);
}

TEST_CASE("requests replay a trace's arrivals and lengths", "[inference][requests]") {
  RequestsConfig c;
  c.trace = parse_trace("2.0,300,40,1\n0.5,100,20\n", false);
  c.count = 2;
  c.arrival = ArrivalKind::trace;
  c.prompt.kind = LengthKind::trace;
  c.output.kind = LengthKind::trace;
  c.prefix_len = 64;
  const auto rs = generate_requests(c, 1);
  // Sorted by arrival; ids follow that order.
  CHECK(rs[0].arrival.seconds() == 0.5);
  CHECK(rs[0].prompt_len == 100);
  CHECK(rs[0].prefix_id == -1);
  CHECK(rs[1].prompt_len == 300);
  CHECK(rs[1].output_len == 40);
  CHECK(rs[1].prefix_id == 1);
  CHECK(rs[1].prefix_len == 64);
  CHECK(rs[1].id == 1);
}
