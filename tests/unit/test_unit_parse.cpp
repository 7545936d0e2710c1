// Quantities with units: the one table-driven parser and its printers.
#include <cmath>
#include <string>

#include "catch.h"
#include "sim/engine/random.h"
#include "sim/config/unit_parse.h"

using namespace gcsim::sim;

namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("parse bandwidth in bits and bytes per second", "[engine]") {
  std::string err;
  // 400 Gb/s = 400e9 / 8 = 50e9 B/s exactly.
  auto v = parse_bandwidth("400Gbps", &err);
  REQUIRE(v);
  CHECK(v->bytes_per_s() == 50e9);
  CHECK(parse_bandwidth("50GB/s", &err)->bytes_per_s() == 50e9);
  // 14.4 Tb/s (a GB200 NVLink switch tray) = 1.8e12 B/s.
  CHECK(parse_bandwidth("14.4Tbps", &err)->bytes_per_s() == Approx(1.8e12).epsilon(1e-15));
  // Binary: 1 GiB/s = 1073741824 B/s.
  CHECK(parse_bandwidth("1GiB/s", &err)->bytes_per_s() == 1073741824.0);
  CHECK(parse_bandwidth("100 Mbps", &err)->bytes_per_s() == 12.5e6);
}

TEST_CASE("parse durations to exact picoseconds", "[engine]") {
  std::string err;
  CHECK(parse_duration("2us", &err)->ps() == 2'000'000);
  CHECK(parse_duration("1.5ms", &err)->ps() == 1'500'000'000);
  CHECK(parse_duration("700ps", &err)->ps() == 700);
  CHECK(parse_duration("3.25ns", &err)->ps() == 3'250);
  CHECK(parse_duration("2s", &err)->ps() == 2'000'000'000'000);
  // 1.5 min = 90 s = 9e13 ps; 1 h = 3.6e15 ps.
  CHECK(parse_duration("1.5min", &err)->ps() == 90'000'000'000'000);
  CHECK(parse_duration("1h", &err)->ps() == 3'600'000'000'000'000);
  CHECK(parse_duration("0s", &err)->ps() == 0);
}

TEST_CASE("parse byte sizes, decimal and binary", "[engine]") {
  std::string err;
  // 80 GiB = 80 * 2^30 = 85,899,345,920 bytes (an H100's HBM).
  CHECK(parse_bytes("80GiB", &err)->count() == 85'899'345'920);
  CHECK(parse_bytes("80GB", &err)->count() == 80'000'000'000);
  CHECK(parse_bytes("4KiB", &err)->count() == 4096);
  CHECK(parse_bytes("1B", &err)->count() == 1);
  // A space between number and unit is allowed, as is trailing space.
  CHECK(parse_bytes("12 GB", &err)->count() == 12'000'000'000);
  CHECK(parse_bytes("12 GB  ", &err)->count() == 12'000'000'000);
}

TEST_CASE("parse flop rates", "[engine]") {
  std::string err;
  // H100 SXM dense BF16: 989 TFLOP/s = 9.89e14 flop/s.
  CHECK(parse_flop_rate("989TF/s", &err)->flops_per_s() == 989e12);
  CHECK(parse_flop_rate("989 TFLOP/s", &err)->flops_per_s() == 989e12);
  CHECK(parse_flop_rate("2.25PF/s", &err)->flops_per_s() == Approx(2.25e15).epsilon(1e-15));
  CHECK(parse_flop_rate("19.5 GFLOP/s", &err)->flops_per_s() == Approx(19.5e9).epsilon(1e-15));
}

TEST_CASE("unknown unit is an error that lists the units", "[engine]") {
  std::string err;
  CHECK_FALSE(parse_bandwidth("400Gbit", &err));
  CHECK(contains(err, "unknown unit 'Gbit'"));
  CHECK(contains(err, "400Gbit"));
  CHECK(contains(err, "Gbps"));
  CHECK(contains(err, "GB/s"));
  // Units are case-sensitive: "gb" is not "GB".
  CHECK_FALSE(parse_bytes("12 gb", &err));
  CHECK(contains(err, "unknown unit 'gb'"));
  CHECK(contains(err, "GiB"));
  // A bandwidth unit is not a byte size.
  CHECK_FALSE(parse_bytes("50GB/s", &err));
  CHECK(contains(err, "unknown unit 'GB/s'"));
  // A duration unit is not a flop rate.
  CHECK_FALSE(parse_flop_rate("5 ms", &err));
  CHECK(contains(err, "TFLOP/s"));
}

TEST_CASE("a number without a unit is an error that lists the units", "[engine]") {
  std::string err;
  CHECK_FALSE(parse_duration("15", &err));
  CHECK(contains(err, "has no unit"));
  CHECK(contains(err, "ps, ns, us, ms, s"));
  CHECK_FALSE(parse_bytes("1024 ", &err));
  CHECK(contains(err, "has no unit"));
  CHECK(contains(err, "KiB"));
}

TEST_CASE("text that is not a number is an error that lists the units", "[engine]") {
  std::string err;
  CHECK_FALSE(parse_duration("fast", &err));
  CHECK(contains(err, "'fast' is not a duration"));
  CHECK(contains(err, "us"));
  CHECK_FALSE(parse_bandwidth("", &err));
  CHECK(contains(err, "is not a bandwidth"));
  CHECK(contains(err, "Gbps"));
  CHECK_FALSE(parse_bytes("GB", &err));
  CHECK(contains(err, "is not a byte size"));
  // NaN and infinity are numbers to strtod but not quantities.
  CHECK_FALSE(parse_duration("nan ms", &err));
  CHECK(contains(err, "not finite"));
  CHECK_FALSE(parse_bandwidth("inf Gbps", &err));
  CHECK(contains(err, "not finite"));
}

TEST_CASE("format_* prints canonical spellings", "[engine]") {
  CHECK(format_bytes(Bytes(85'899'345'920)) == "80GiB");
  CHECK(format_bytes(Bytes(4096)) == "4KiB");
  CHECK(format_bytes(Bytes(1500)) == "1500B");
  CHECK(format_bytes(Bytes(0)) == "0B");
  // The largest exact unit of either family: 12e9 = 12 GB (1024 divides it
  // too, but 11718750KiB would be a poor spelling); 1e12 = 1 TB; 2^40 = 1 TiB.
  CHECK(format_bytes(Bytes(12'000'000'000)) == "12GB");
  CHECK(format_bytes(Bytes(1'000'000'000'000)) == "1TB");
  CHECK(format_bytes(Bytes(int64_t{1} << 40)) == "1TiB");
  CHECK(format_bytes(Bytes(3'000)) == "3KB");
  CHECK(format_duration(Duration::from_ps(2'000'000)) == "2us");
  // Whole numbers of the largest unit that divides exactly: 1.5 ms is 1500us.
  CHECK(format_duration(Duration::from_ps(1'500'000'000)) == "1500us");
  // Otherwise a decimal in the largest unit reached: 1234567 ps = 1.234567 us.
  CHECK(format_duration(Duration::from_ps(1'234'567)) == "1.234567us");
  CHECK(format_duration(Duration::from_ps(700)) == "700ps");
  CHECK(format_duration(Duration::zero()) == "0s");
  CHECK(format_bandwidth(Bandwidth::gbps(400)) == "50GB/s");
  CHECK(format_flop_rate(FlopRate::tflops(989)) == "989TFLOP/s");
  CHECK(format_bandwidth(Bandwidth::gbps(14400)) == "1800GB/s");
}

TEST_CASE("format_* round-trips through parse_*", "[engine]") {
  std::string err;
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{1500}, int64_t{4096}, int64_t{12'000'000'000},
                    int64_t{85'899'345'920}, int64_t{1'000'000'000'000}, int64_t{123'456'789},
                    int64_t{-2048}}) {
    auto back = parse_bytes(format_bytes(Bytes(n)), &err);
    INFO(format_bytes(Bytes(n)));
    REQUIRE(back);
    CHECK(back->count() == n);
  }
  for (int64_t p :
       {int64_t{0}, int64_t{1}, int64_t{700}, int64_t{1500}, int64_t{2'000'000}, int64_t{1'234'567},
        int64_t{1'500'000'000}, int64_t{3'600'000'000'000'000}, int64_t{-250}}) {
    auto back = parse_duration(format_duration(Duration::from_ps(p)), &err);
    INFO(format_duration(Duration::from_ps(p)));
    REQUIRE(back);
    CHECK(back->ps() == p);
  }
  for (double bps : {50e9, 12.5e9, 900e9, 1.8e12, 25e6, 3.2e12 / 8}) {
    auto back = parse_bandwidth(format_bandwidth(Bandwidth::bytes_per_s(bps)), &err);
    INFO(format_bandwidth(Bandwidth::bytes_per_s(bps)));
    REQUIRE(back);
    CHECK(back->bytes_per_s() == bps);
  }
  for (double f : {989e12, 1979e12, 312e12, 67e12, 2.25e15}) {
    auto back = parse_flop_rate(format_flop_rate(FlopRate::flops_per_s(f)), &err);
    INFO(format_flop_rate(FlopRate::flops_per_s(f)));
    REQUIRE(back);
    CHECK(back->flops_per_s() == f);
  }
}

TEST_CASE("format_duration round-trips random durations up to 2^53 ps", "[engine]") {
  // Parsing goes through a double, so durations are exact up to 2^53 ps
  // (about 2.5 hours); within that range every value must come back.
  std::string err;
  RandomStream rng(8, "test/unit_parse");
  for (int i = 0; i < 20'000; ++i) {
    // Log-uniform magnitudes from 1 ps to 2^53 ps.
    const int bits = 1 + static_cast<int>(rng.uniform_int(53));
    const auto p = static_cast<int64_t>(rng.uniform_int(uint64_t{1} << bits));
    const std::string text = format_duration(Duration::from_ps(p));
    auto back = parse_duration(text, &err);
    INFO(p << " -> " << text);
    REQUIRE(back);
    REQUIRE(back->ps() == p);
  }
}

TEST_CASE("format_bytes round-trips random sizes up to 2^53 bytes", "[engine]") {
  std::string err;
  RandomStream rng(9, "test/unit_parse");
  for (int i = 0; i < 20'000; ++i) {
    const int bits = 1 + static_cast<int>(rng.uniform_int(53));
    // Half the draws are multiples of 1000 or 1024 to exercise the units.
    auto n = static_cast<int64_t>(rng.uniform_int(uint64_t{1} << bits));
    if (i % 4 == 1) n -= n % 1000;
    if (i % 4 == 2) n -= n % 1024;
    const std::string text = format_bytes(Bytes(n));
    auto back = parse_bytes(text, &err);
    INFO(n << " -> " << text);
    REQUIRE(back);
    REQUIRE(back->count() == n);
  }
}

TEST_CASE("format_bandwidth and format_flop_rate round-trip any rate exactly", "[engine]") {
  // Rates are doubles; a derived one (a link shared three ways, say) has no
  // short decimal form, and the printed config must still reproduce it.
  std::string err;
  RandomStream rng(10, "test/unit_parse");
  for (int i = 0; i < 20'000; ++i) {
    // Log-uniform from 1 B/s to ~1e15 B/s.
    const double bps = std::exp(rng.uniform() * 34.5);
    const std::string text = format_bandwidth(Bandwidth::bytes_per_s(bps));
    auto back = parse_bandwidth(text, &err);
    INFO(bps << " -> " << text);
    REQUIRE(back);
    REQUIRE(back->bytes_per_s() == bps);
    const std::string ftext = format_flop_rate(FlopRate::flops_per_s(bps * 1e3));
    auto fback = parse_flop_rate(ftext, &err);
    INFO(bps * 1e3 << " -> " << ftext);
    REQUIRE(fback);
    REQUIRE(fback->flops_per_s() == bps * 1e3);
  }
  // A third of 50 GB/s prints as GB/s with 17 digits or falls back to B/s.
  const std::string third = format_bandwidth(Bandwidth::gb_per_s(50).scaled(1.0 / 3.0));
  CHECK(parse_bandwidth(third, &err)->bytes_per_s() == 50e9 / 3.0);
}
