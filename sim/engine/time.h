// Simulated time as a type: int64 picoseconds, no implicit conversions,
// overflow detected rather than wrapped (ns-3's Time, SST's SimTime_t).
//
// Duration is a signed span; Time is a point since the start of the run.
// Time - Time = Duration, Time + Duration = Time; other mixes do not compile.
// At 1 ps resolution int64 covers ±106 days of simulated time, enough for a
// training run of months only through the failure model's coarser clock.
#pragma once

#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

namespace gcsim::sim {

// Thrown when time arithmetic would leave the int64 picosecond range.
class TimeOverflow : public std::overflow_error {
 public:
  using std::overflow_error::overflow_error;
};

namespace detail {
inline int64_t checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) throw TimeOverflow("simulated time overflow in addition");
  return r;
}
inline int64_t checked_sub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) throw TimeOverflow("simulated time overflow in subtraction");
  return r;
}
inline int64_t checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) throw TimeOverflow("simulated time overflow in multiplication");
  return r;
}
// Rounds a real picosecond count to the nearest integer, refusing NaN and
// values outside int64.
inline int64_t round_ps(double ps) {
  if (!std::isfinite(ps) || std::fabs(ps) >= 9.2e18) {
    throw TimeOverflow("duration of " + std::to_string(ps) + " ps is not representable");
  }
  return std::llround(ps);
}
}  // namespace detail

class Duration {
 public:
  constexpr Duration() = default;
  static constexpr Duration from_ps(int64_t ps) { return Duration(ps); }
  static Duration from_seconds(double s) { return Duration(detail::round_ps(s * 1e12)); }
  static constexpr Duration zero() { return Duration(0); }
  static constexpr Duration max() { return Duration(std::numeric_limits<int64_t>::max()); }

  constexpr int64_t ps() const { return ps_; }
  double seconds() const { return static_cast<double>(ps_) * 1e-12; }
  double microseconds() const { return static_cast<double>(ps_) * 1e-6; }

  Duration operator+(Duration o) const { return Duration(detail::checked_add(ps_, o.ps_)); }
  Duration operator-(Duration o) const { return Duration(detail::checked_sub(ps_, o.ps_)); }
  Duration operator*(int64_t k) const { return Duration(detail::checked_mul(ps_, k)); }
  Duration& operator+=(Duration o) { return *this = *this + o; }
  Duration& operator-=(Duration o) { return *this = *this - o; }
  // Scales by a real factor, rounding once to the nearest picosecond.
  Duration scaled(double factor) const {
    return Duration(detail::round_ps(static_cast<double>(ps_) * factor));
  }
  constexpr auto operator<=>(const Duration&) const = default;

 private:
  constexpr explicit Duration(int64_t ps) : ps_(ps) {}
  int64_t ps_ = 0;
};

class Time {
 public:
  constexpr Time() = default;
  static constexpr Time zero() { return Time(0); }
  static constexpr Time from_ps(int64_t ps) { return Time(ps); }
  static constexpr Time max() { return Time(std::numeric_limits<int64_t>::max()); }

  constexpr int64_t ps() const { return ps_; }
  double seconds() const { return static_cast<double>(ps_) * 1e-12; }
  double microseconds() const { return static_cast<double>(ps_) * 1e-6; }

  Time operator+(Duration d) const { return Time(detail::checked_add(ps_, d.ps())); }
  Time operator-(Duration d) const { return Time(detail::checked_sub(ps_, d.ps())); }
  Duration operator-(Time o) const { return Duration::from_ps(detail::checked_sub(ps_, o.ps_)); }
  Time& operator+=(Duration d) { return *this = *this + d; }
  constexpr auto operator<=>(const Time&) const = default;

 private:
  constexpr explicit Time(int64_t ps) : ps_(ps) {}
  int64_t ps_ = 0;
};

// Factories. Integer forms are exact; real forms round once to 1 ps.
constexpr Duration ps(int64_t v) { return Duration::from_ps(v); }
inline Duration ns(int64_t v) { return Duration::from_ps(detail::checked_mul(v, 1'000)); }
inline Duration us(int64_t v) { return Duration::from_ps(detail::checked_mul(v, 1'000'000)); }
inline Duration ms(int64_t v) { return Duration::from_ps(detail::checked_mul(v, 1'000'000'000)); }
inline Duration seconds(int64_t v) {
  return Duration::from_ps(detail::checked_mul(v, 1'000'000'000'000));
}
inline Duration ns(double v) { return Duration::from_ps(detail::round_ps(v * 1e3)); }
inline Duration us(double v) { return Duration::from_ps(detail::round_ps(v * 1e6)); }
inline Duration ms(double v) { return Duration::from_ps(detail::round_ps(v * 1e9)); }

inline Duration max(Duration a, Duration b) { return a < b ? b : a; }
inline Duration min(Duration a, Duration b) { return a < b ? a : b; }

}  // namespace gcsim::sim
