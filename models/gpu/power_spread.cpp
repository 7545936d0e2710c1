#include "models/gpu/power_spread.h"

#include <cmath>
#include <numeric>
#include <stdexcept>

#include "sim/engine/random.h"

namespace gcsim::models::gpu {

double normal_quantile(double p) {
  if (!(p > 0.0 && p < 1.0)) throw std::invalid_argument("normal_quantile: p outside (0, 1)");
  // Bisection on Phi(z) = erfc(-z / sqrt 2) / 2, monotone in z: 200 halvings
  // of [-40, 40] reach double precision.
  double lo = -40.0, hi = 40.0;
  for (int i = 0; i < 200 && hi - lo > 1e-15; ++i) {
    const double mid = 0.5 * (lo + hi);
    if (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p) lo = mid;
    else hi = mid;
  }
  return 0.5 * (lo + hi);
}

std::vector<double> power_spread_factors(int gpus, double sigma, uint64_t seed) {
  if (gpus <= 0) return {};
  std::vector<int> order(static_cast<size_t>(gpus));
  std::iota(order.begin(), order.end(), 0);
  sim::RandomStream(seed, "power spread").shuffle(order);
  std::vector<double> factors(order.size());
  for (size_t g = 0; g < order.size(); ++g) {
    const double p = (static_cast<double>(order[g]) + 0.5) / static_cast<double>(gpus);
    factors[g] = 1.0 + sigma * normal_quantile(p);
  }
  return factors;
}

PowerParams with_power_factor(PowerParams p, double factor) {
  p.tensor_w *= factor;
  p.vector_w *= factor;
  return p;
}

}  // namespace gcsim::models::gpu
