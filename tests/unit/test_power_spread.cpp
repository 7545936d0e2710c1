// The chip-to-chip spread of power (models/gpu/power_spread.h): its normal
// quantiles and the factors dealt to the GPUs, by hand.
#include <algorithm>
#include <numeric>

#include "catch.h"
#include "models/gpu/power_spread.h"

using namespace gcsim::models::gpu;

TEST_CASE("power spread: the standard normal's quantiles", "[power][spread]") {
  // Tables of the standard normal: Phi(1.959964) = 0.975, Phi(1.15034938) =
  // 0.875, Phi(0.318639) = 0.625.
  CHECK(normal_quantile(0.5) == Approx(0.0).margin(1e-12));
  CHECK(normal_quantile(0.975) == Approx(1.959964).epsilon(1e-6));
  CHECK(normal_quantile(0.125) == Approx(-1.15034938).epsilon(1e-6));
  CHECK(normal_quantile(0.375) == Approx(-0.318639).epsilon(1e-5));
  CHECK_THROWS(normal_quantile(0.0));
  CHECK_THROWS(normal_quantile(1.0));
}

TEST_CASE("power spread: four GPUs get the four quartile midpoints, dealt by the seed",
          "[power][spread]") {
  const double sigma = 0.014;
  const auto f = power_spread_factors(4, sigma, 1);
  REQUIRE(f.size() == 4);
  std::vector<double> sorted = f;
  std::sort(sorted.begin(), sorted.end());
  // z at 1/8, 3/8, 5/8, 7/8: -1.150349, -0.318639, +0.318639, +1.150349.
  CHECK(sorted[0] == Approx(1 - sigma * 1.15034938).epsilon(1e-9));
  CHECK(sorted[1] == Approx(1 - sigma * 0.31863936).epsilon(1e-9));
  CHECK(sorted[2] == Approx(1 + sigma * 0.31863936).epsilon(1e-9));
  CHECK(sorted[3] == Approx(1 + sigma * 1.15034938).epsilon(1e-9));
  CHECK(std::accumulate(f.begin(), f.end(), 0.0) / 4 == Approx(1.0).epsilon(1e-12));
  // The same seed deals the same; some other seed deals them otherwise.
  CHECK(power_spread_factors(4, sigma, 1) == f);
  bool other = false;
  for (uint64_t seed = 2; seed < 20 && !other; ++seed) other = power_spread_factors(4, sigma, seed) != f;
  CHECK(other);
  // One GPU, or no spread: the nominal chip.
  CHECK(power_spread_factors(1, sigma, 1).at(0) == Approx(1.0).margin(1e-12));
  for (double x : power_spread_factors(8, 0.0, 3)) CHECK(x == 1.0);
}

TEST_CASE("power spread: a factor scales the arithmetic's power only", "[power][spread]") {
  PowerParams p;
  p.cap_w = 700;
  p.idle_w = 100;
  p.tensor_w = 900;
  p.vector_w = 200;
  p.hbm_w = 150;
  const PowerParams q = with_power_factor(p, 1.02);
  CHECK(q.tensor_w == Approx(918.0));
  CHECK(q.vector_w == Approx(204.0));
  CHECK(q.cap_w == p.cap_w);
  CHECK(q.idle_w == p.idle_w);
  CHECK(q.hbm_w == p.hbm_w);
  // More power for the same work: a lower clock under the same cap.
  Activity gemm;
  gemm.tensor = 0.9;
  gemm.hbm = 0.2;
  gemm = with_unshared(gemm);
  CHECK(cap_clock(q, gemm) < cap_clock(p, gemm));
}
