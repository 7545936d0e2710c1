#include "catch.h"
#include "sim/engine/time.h"
#include "sim/config/units.h"

using namespace gcsim::sim;

TEST_CASE("durations are exact integer picoseconds") {
  CHECK(ns(int64_t{3}).ps() == 3000);
  CHECK(us(2.5).ps() == 2'500'000);
  CHECK((Time::zero() + ms(int64_t{1})) - Time::zero() == us(int64_t{1000}));
}

TEST_CASE("time arithmetic detects overflow instead of wrapping") {
  CHECK_THROWS_AS(Time::max() + ps(1), TimeOverflow);
  CHECK_THROWS_AS(seconds(int64_t{10'000'000}), TimeOverflow);  // 1e19 ps > int64
  CHECK_THROWS_AS(Duration::from_seconds(1e10), TimeOverflow);
}

TEST_CASE("transfer_time rounds once per transfer") {
  // 1 GiB at 50 GB/s = 1073741824 / 50e9 s = 21.47483648 ms exactly.
  CHECK(transfer_time(GiB(1), Bandwidth::gb_per_s(50)).ps() == 21'474'836'480);
  // One byte at 14.4 Tb/s = 8 / 14.4e12 s = 0.5556 ps: rounds to 1 ps, not 0.
  CHECK(transfer_time(Bytes(1), Bandwidth::gbps(14400)).ps() == 1);
  // 1 MB at 400 Gb/s = 1e6 / 50e9 = 20 us.
  CHECK(transfer_time(Bytes(1'000'000), Bandwidth::gbps(400)) == us(int64_t{20}));
}
