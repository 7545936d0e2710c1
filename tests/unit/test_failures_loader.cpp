// The unit strings of the failures config: rates as COUNT/DURATION and
// durations with days, bounded by the int64-picosecond clock.
#include <string>

#include "catch.h"
#include "sim/cli/failures_loader.h"

using gcsim::cli::parse_failure_rate;
using gcsim::cli::parse_long_duration;

TEST_CASE("failures: rates written as COUNT/DURATION", "[failures]") {
  std::string err;
  // The example: one failure per 3,692 h per node.
  CHECK(*parse_failure_rate("1/3692h", &err) == Approx(1.0 / 3692));
  CHECK(*parse_failure_rate("2/1d", &err) == Approx(2.0 / 24));
  // Periods beyond the 106-day clock are fine for a rate (1/200000h = 22.8 years).
  CHECK(*parse_failure_rate("1/200000h", &err) == Approx(5e-6));
  CHECK(*parse_failure_rate("3/90min", &err) == Approx(2.0));
  CHECK(*parse_failure_rate("0", &err) == 0.0);
  CHECK_FALSE(parse_failure_rate("-1/10h", &err));
  CHECK(err.find("negative") != std::string::npos);
  CHECK_FALSE(parse_failure_rate("1/0h", &err));
  CHECK_FALSE(parse_failure_rate("often", &err));
}

TEST_CASE("failures: durations with days, within the simulated time range", "[failures]") {
  std::string err;
  CHECK(parse_long_duration("14d", &err)->seconds() == Approx(14 * 86400.0));
  CHECK(parse_long_duration("54d", &err)->seconds() == Approx(54 * 86400.0));
  CHECK(parse_long_duration("90min", &err)->seconds() == Approx(5400.0));
  // 2^63 ps = 106.75 days: 200 days is refused, not wrapped.
  CHECK_FALSE(parse_long_duration("200d", &err));
  CHECK(err.find("time range") != std::string::npos);
  CHECK_FALSE(parse_long_duration("xd", &err));
}
