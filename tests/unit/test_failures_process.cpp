// Failure processes: job MTTF from per-component rates, the Llama 3 preset
// against the published interruption count, Weibull parameters.
#include <cmath>

#include "catch.h"
#include "workloads/failures/component_failures.h"
#include "workloads/failures/failure_process.h"

using namespace gcsim::workloads::failures;
using gcsim::sim::Duration;

TEST_CASE("failures: job MTTF is 1 / (components x rate) for exponential lifetimes",
          "[failures]") {
  // 1,000 nodes, each failing once per 1,000 h: the job fails once an hour
  // (REFERENCE.md: MTTF of a job ~ 1 / (nodes x rate)). Over 100 days and 5
  // seeds ~12,000 failures: the mean gap is within 3% (1 sigma = 0.9%).
  FailureRates r;
  r.per_hour[ComponentClass::node] = 1.0 / 1000.0;
  ComponentCounts k;
  k.count[ComponentClass::node] = 1000;
  CHECK(k.total_rate_per_hour(r) == Approx(1.0));
  const Duration horizon = Duration::from_seconds(100 * 86400.0);
  int64_t failures = 0;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    failures += static_cast<int64_t>(draw_failures(r, k, horizon, seed).size());
  }
  const double mttf_h = 5 * 100 * 24.0 / static_cast<double>(failures);
  CHECK(mttf_h == Approx(1.0).epsilon(0.03));
}

TEST_CASE("failures: traces are time-ordered and the same seed gives the same trace",
          "[failures]") {
  FailureRates r;
  r.per_hour[ComponentClass::gpu] = 1.0 / 5000.0;
  r.per_hour[ComponentClass::switch_] = 1.0 / 2000.0;
  const ComponentCounts k = cluster_component_counts(64, 8, 2, true);
  const Duration horizon = Duration::from_seconds(30 * 86400.0);
  const auto a = draw_failures(r, k, horizon, 7);
  const auto b = draw_failures(r, k, horizon, 7);
  REQUIRE(a.size() == b.size());
  REQUIRE(!a.empty());
  bool ordered = true;
  int64_t correlated = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].when == b[i].when);
    if (i > 0 && a[i].when < a[i - 1].when) ordered = false;
    if (a[i].component == ComponentClass::switch_) CHECK(a[i].correlated_links == 64);
    correlated += a[i].correlated_links;
  }
  CHECK(ordered);
  CHECK(correlated > 0);  // a switch failure takes its rail's 64 links with it
}

TEST_CASE("failures: component counts of a fat-tree cluster", "[failures]") {
  // 2,048 nodes x 8 GPUs, 3 tiers, radix 64: 16,384 NICs; links 3 x 16,384;
  // switches 2 x 16,384 / 32 + 16,384 / 64 = 1,024 + 256 = 1,280.
  const ComponentCounts k = cluster_component_counts(2048, 8, 3, true);
  CHECK(k.count[ComponentClass::gpu] == 16384);
  CHECK(k.count[ComponentClass::link] == 49152);
  CHECK(k.count[ComponentClass::switch_] == 1280);
  CHECK(k.count[ComponentClass::node] == 2048);
  const ComponentCounts none = cluster_component_counts(1, 8, 2, false);
  CHECK(none.count[ComponentClass::nic] == 0);
}

TEST_CASE("failures: the Llama 3 preset gives about 419 interruptions in 54 days", "[failures]") {
  // Dubey et al. 2024, Table 5: 419 unexpected interruptions, 54 days,
  // 16,384 H100 (2,048 nodes x 8, 3-tier fabric).
  const FailureRates r = llama3_rates();
  const ComponentCounts k = cluster_component_counts(2048, 8, 3, true);
  // By construction the expected count is exact: 419 / 1296 h = one per 3.09 h.
  CHECK(k.total_rate_per_hour(r) * kLlama3Hours == Approx(419.0));
  CHECK(1.0 / k.total_rate_per_hour(r) == Approx(3.093).epsilon(0.001));
  // Simulated: 10 seeds, mean within 5% (1 sigma of the mean = sqrt(419/10) = 6.5 = 1.5%).
  const Duration horizon = Duration::from_seconds(54 * 86400.0);
  double total = 0;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    total += static_cast<double>(draw_failures(r, k, horizon, seed).size());
  }
  CHECK(total / 10 == Approx(419.0).epsilon(0.05));
}

TEST_CASE("failures: Weibull scale for a given mean", "[failures]") {
  // Mean = eta Gamma(1 + 1/k): k = 1 is exponential (eta = mean); k = 2,
  // Gamma(1.5) = sqrt(pi)/2 = 0.886227.
  CHECK(weibull_scale_for_mean(100.0, 1.0) == Approx(100.0));
  CHECK(weibull_scale_for_mean(100.0, 2.0) == Approx(100.0 / 0.886227));
  // A Weibull renewal process keeps the long-run rate 1 / mean (renewal
  // theorem): 1,000 nodes at 1/1000 h with shape 2, 100 days, ~2,400 failures.
  FailureRates r;
  r.per_hour[ComponentClass::node] = 1.0 / 1000.0;
  r.lifetime = Lifetime::weibull;
  r.weibull_shape = 2.0;
  ComponentCounts k;
  k.count[ComponentClass::node] = 1000;
  // Wear-out (k = 2) components start new, so the first ~1,000 h are quiet:
  // over 100 days (2,400 h) fewer failures than the stationary 2,400.
  const auto f = draw_failures(r, k, Duration::from_seconds(100 * 86400.0), 3);
  CHECK(f.size() < 2400);
  CHECK(f.size() > 1200);
}
