// Seeded per-component random streams: reproducible, independent by name,
// and with the distributions they claim.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "catch.h"
#include "sim/engine/random.h"
#include "sim/engine/simulator.h"

using namespace gcsim::sim;

namespace {

std::vector<uint64_t> draws(RandomStream s, int n) {
  std::vector<uint64_t> v;
  for (int i = 0; i < n; ++i) v.push_back(s.next_u64());
  return v;
}

}  // namespace

TEST_CASE("splitmix64 and fnv1a match their published values", "[engine]") {
  // SplitMix64 seeded with 0 first returns 0xE220A8397B1DCDAF (Vigna's
  // reference splitmix64.c); the function here is one step from state x.
  static_assert(splitmix64(0) == 0xe220a8397b1dcdafULL);
  // FNV-1a 64: the empty string is the offset basis; "a" is 0xaf63dc4c8601ec8c.
  static_assert(fnv1a("") == 0xcbf29ce484222325ULL);
  static_assert(fnv1a("a") == 0xaf63dc4c8601ec8cULL);
  // A stream continues the SplitMix64 sequence from its derived state s0:
  // the k-th draw is splitmix64(s0 + k * gamma), k = 0, 1, ...
  const uint64_t s0 = splitmix64(7 ^ fnv1a("gpu0"));
  RandomStream s(7, "gpu0");
  CHECK(s.next_u64() == splitmix64(s0));
  CHECK(s.next_u64() == splitmix64(s0 + 0x9e3779b97f4a7c15ULL));
}

TEST_CASE("same seed and name give the same sequence", "[engine]") {
  CHECK(draws(RandomStream(42, "gpu3/sm"), 1000) == draws(RandomStream(42, "gpu3/sm"), 1000));
  // The simulator hands out the same stream for the same (seed, name).
  Simulator sim(42);
  CHECK(draws(sim.random_stream("gpu3/sm"), 1000) == draws(RandomStream(42, "gpu3/sm"), 1000));
}

TEST_CASE("different names or seeds give different streams", "[engine]") {
  const auto base = draws(RandomStream(42, "gpu3/sm"), 1000);
  const auto other_name = draws(RandomStream(42, "gpu4/sm"), 1000);
  const auto other_seed = draws(RandomStream(43, "gpu3/sm"), 1000);
  CHECK(base != other_name);
  CHECK(base != other_seed);
  // Not merely shifted copies: no draw of one appears in the other (for
  // independent 64-bit streams a single collision has probability ~5e-14).
  for (uint64_t x : base) {
    REQUIRE(std::find(other_name.begin(), other_name.end(), x) == other_name.end());
  }
  // Drawing from one stream does not disturb another.
  RandomStream a(1, "a");
  RandomStream b(1, "b");
  const uint64_t b_first = RandomStream(1, "b").next_u64();
  for (int i = 0; i < 100; ++i) a.next_u64();
  CHECK(b.next_u64() == b_first);
}

TEST_CASE("uniform() lies in [0, 1) with mean 1/2", "[engine]") {
  RandomStream s(3, "uniform");
  constexpr int kN = 1'000'000;
  double sum = 0, lo = 1, hi = 0;
  for (int i = 0; i < kN; ++i) {
    double u = s.uniform();
    REQUIRE(u >= 0.0);
    REQUIRE(u < 1.0);
    sum += u;
    lo = std::min(lo, u);
    hi = std::max(hi, u);
  }
  // Uniform[0,1): sd = 1/sqrt(12) = 0.2887, so the mean of 1e6 draws has
  // standard error 2.887e-4; allow 5 sigma = 1.44e-3.
  CHECK(std::fabs(sum / kN - 0.5) < 1.44e-3);
  // With 1e6 draws the extremes come within ~1e-6 of the ends; 1e-4 is safe.
  CHECK(lo < 1e-4);
  CHECK(hi > 1 - 1e-4);
  // The largest possible value is (2^53 - 1) / 2^53, strictly below 1.
  CHECK((0x1.0p53 - 1) * 0x1.0p-53 < 1.0);
}

TEST_CASE("uniform_int(n) stays in [0, n) and covers it evenly", "[engine]") {
  RandomStream s(4, "uniform_int");
  for (int i = 0; i < 1000; ++i) REQUIRE(s.uniform_int(1) == 0);
  // n = 7 over 700k draws: each count is Binomial(700k, 1/7), mean 100k,
  // sd = sqrt(700k * 1/7 * 6/7) = 292.8; allow 5 sd = 1464.
  std::vector<int> count(7, 0);
  for (int i = 0; i < 700'000; ++i) {
    uint64_t v = s.uniform_int(7);
    REQUIRE(v < 7);
    ++count[v];
  }
  for (int c : count) CHECK(std::abs(c - 100'000) < 1464);
  // Huge n: still below n, and reaching the upper half.
  const uint64_t big = (uint64_t{1} << 63) + 12345;
  bool upper = false;
  for (int i = 0; i < 1000; ++i) {
    uint64_t v = s.uniform_int(big);
    REQUIRE(v < big);
    upper = upper || v >= big / 2;
  }
  CHECK(upper);
}

TEST_CASE("exponential(mean) has the requested mean", "[engine]") {
  RandomStream s(5, "exponential");
  constexpr int kN = 1'000'000;
  constexpr double kMean = 2.5;
  double sum = 0, sum_sq = 0;
  for (int i = 0; i < kN; ++i) {
    double x = s.exponential(kMean);
    REQUIRE(x >= 0.0);
    REQUIRE(std::isfinite(x));
    sum += x;
    sum_sq += x * x;
  }
  const double mean = sum / kN;
  // Exponential: sd = mean = 2.5, so the sample mean of 1e6 draws has
  // standard error 2.5 / 1000 = 0.0025; allow 5 sigma = 0.0125 (0.5 %).
  CHECK(std::fabs(mean - kMean) < 0.0125);
  // Its variance is mean^2 = 6.25; the sample variance's standard error is
  // about sqrt((mu4 - sigma^4) / n) = sqrt((9 - 1) * 6.25^2 / 1e6) = 0.0177;
  // allow 5 sigma = 0.09.
  const double var = sum_sq / kN - mean * mean;
  CHECK(std::fabs(var - kMean * kMean) < 0.09);
}
