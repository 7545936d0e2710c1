#include "sim/config/units.h"

#include <string>

namespace gcsim::sim {

namespace {
// Work / rate in picoseconds, computed in long double so that a 1 TiB
// transfer at 14.4 Tb/s keeps all of its digits before the single rounding.
Duration ratio_to_duration(long double work, long double rate, const char* what) {
  if (!(rate > 0.0L)) {
    throw std::invalid_argument(std::string(what) + " rate must be positive");
  }
  if (work < 0.0L) throw std::invalid_argument(std::string(what) + " amount must be >= 0");
  return Duration::from_ps(detail::round_ps(static_cast<double>(work * 1e12L / rate)));
}
}  // namespace

Duration transfer_time(Bytes amount, Bandwidth rate) {
  return ratio_to_duration(static_cast<long double>(amount.count()), rate.bytes_per_s(),
                           "bandwidth");
}

Duration transfer_time(double bytes, Bandwidth rate) {
  return ratio_to_duration(bytes, rate.bytes_per_s(), "bandwidth");
}

Duration compute_time(double flops, FlopRate rate) {
  return ratio_to_duration(flops, rate.flops_per_s(), "flop");
}

}  // namespace gcsim::sim
