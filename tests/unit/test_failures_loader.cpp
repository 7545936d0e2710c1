// The unit strings of the failures config: rates as COUNT/DURATION and
// durations with days, bounded by the int64-picosecond clock.
#include <string>

#include "catch.h"
#include "sim/scenario/failures_loader.h"
#include "sim/config/unit_parse.h"

using gcsim::cli::parse_failure_rate;
using gcsim::sim::parse_duration;

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
  // Days are a unit of every duration key (one table, sim/config/unit_parse.cpp).
  CHECK(parse_duration("14d", &err)->seconds() == Approx(14 * 86400.0));
  CHECK(parse_duration("54d", &err)->seconds() == Approx(54 * 86400.0));
  CHECK(parse_duration("90min", &err)->seconds() == Approx(5400.0));
  // 106 days is accepted however it is written (it was refused as 106d
  // while 2544h ran); 2^63 ps = 106.75 days, so 107 days is refused, not wrapped.
  CHECK(parse_duration("106d", &err)->ps() == 106LL * 86400 * 1'000'000'000'000LL);
  CHECK(parse_duration("2544h", &err)->ps() == parse_duration("106d", &err)->ps());
  CHECK_FALSE(parse_duration("107d", &err));
  CHECK(err.find("time range (106 days)") != std::string::npos);
  CHECK_FALSE(parse_duration("2568h", &err));
  CHECK_FALSE(parse_duration("200d", &err));
  CHECK_FALSE(parse_duration("xd", &err));
}
