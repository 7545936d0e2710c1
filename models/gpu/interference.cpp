#include "models/gpu/interference.h"

#include <algorithm>
#include <stdexcept>

namespace gcsim::models::gpu {

namespace {
void require_rates(double achieved, double demand, double collective) {
  if (!(achieved > 0.0) || demand < 0.0 || collective < 0.0) {
    throw std::invalid_argument("interference: HBM bandwidth must be > 0 and rates >= 0");
  }
}
}  // namespace

double collective_hbm_share(double achieved, double kernel_sms, double kernel_demand,
                            int collective_sms, double collective_rate) {
  require_rates(achieved, kernel_demand, collective_rate);
  if (kernel_sms < 0.0 || collective_sms < 0) {
    throw std::invalid_argument("interference: SM counts must be >= 0");
  }
  const double c = std::max(1, collective_sms);  // a collective streams from at least one SM
  const double fair = c * achieved / (std::max(0.0, kernel_sms) + c);
  return std::min(collective_rate, std::max(fair, achieved - kernel_demand));
}

double kernel_hbm_fraction(double achieved, double kernel_sms, double kernel_demand,
                           int collective_sms, double collective_rate) {
  if (collective_rate == 0.0) return 1.0;
  return 1.0 - collective_hbm_share(achieved, kernel_sms, kernel_demand, collective_sms,
                                    collective_rate) /
                   achieved;
}

double kernel_compute_stretch(double achieved, double collective_rate, double sensitivity) {
  require_rates(achieved, 0.0, collective_rate);
  return 1.0 + sensitivity * std::min(1.0, collective_rate / achieved);
}

double collective_stretch(double achieved, double kernel_sms, double kernel_demand,
                          int collective_sms, double collective_rate, double busy_fraction,
                          double sensitivity) {
  if (collective_rate == 0.0) return 1.0;
  const double share =
      collective_hbm_share(achieved, kernel_sms, kernel_demand, collective_sms, collective_rate);
  return std::max(1.0, collective_rate / share) *
         (1.0 + sensitivity * std::clamp(busy_fraction, 0.0, 1.0));
}

}  // namespace gcsim::models::gpu
