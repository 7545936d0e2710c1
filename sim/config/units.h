// Bytes, bandwidth and arithmetic rate as types, and the one place that
// turns an amount of work into time (ns-3's CalculateBytesTxTime): every
// transfer or kernel rounds once, never through a stored per-byte time, which
// at 14.4 Tb/s would truncate to zero picoseconds.
#pragma once

#include <compare>
#include <cstdint>
#include <stdexcept>

#include "sim/engine/time.h"

namespace gcsim::sim {

// A byte count. Signed so that a free (negative allocation) can be expressed;
// quantities that must be non-negative are validated where they are parsed.
class Bytes {
 public:
  constexpr Bytes() = default;
  constexpr explicit Bytes(int64_t n) : n_(n) {}
  constexpr int64_t count() const { return n_; }
  double as_double() const { return static_cast<double>(n_); }
  Bytes operator+(Bytes o) const {
    int64_t r;
    if (__builtin_add_overflow(n_, o.n_, &r)) throw std::overflow_error("byte count overflow");
    return Bytes(r);
  }
  Bytes operator-(Bytes o) const {
    int64_t r;
    if (__builtin_sub_overflow(n_, o.n_, &r)) throw std::overflow_error("byte count overflow");
    return Bytes(r);
  }
  Bytes& operator+=(Bytes o) { return *this = *this + o; }
  Bytes& operator-=(Bytes o) { return *this = *this - o; }
  constexpr auto operator<=>(const Bytes&) const = default;

 private:
  int64_t n_ = 0;
};

constexpr Bytes KiB(int64_t n) { return Bytes(n << 10); }
constexpr Bytes MiB(int64_t n) { return Bytes(n << 20); }
constexpr Bytes GiB(int64_t n) { return Bytes(n << 30); }

// Data rate in bytes per second. 400 Gb/s = 50e9 B/s.
class Bandwidth {
 public:
  constexpr Bandwidth() = default;
  static constexpr Bandwidth bytes_per_s(double v) { return Bandwidth(v); }
  static constexpr Bandwidth bits_per_s(double v) { return Bandwidth(v / 8.0); }
  static constexpr Bandwidth gbps(double gigabits) { return Bandwidth(gigabits * 1e9 / 8.0); }
  static constexpr Bandwidth gb_per_s(double gigabytes) { return Bandwidth(gigabytes * 1e9); }
  constexpr double bytes_per_s() const { return bps_; }
  constexpr double gb_per_s() const { return bps_ * 1e-9; }
  Bandwidth scaled(double f) const { return Bandwidth(bps_ * f); }
  constexpr auto operator<=>(const Bandwidth&) const = default;

 private:
  constexpr explicit Bandwidth(double v) : bps_(v) {}
  double bps_ = 0.0;
};

// Arithmetic throughput in floating-point operations per second.
class FlopRate {
 public:
  constexpr FlopRate() = default;
  static constexpr FlopRate flops_per_s(double v) { return FlopRate(v); }
  static constexpr FlopRate tflops(double v) { return FlopRate(v * 1e12); }
  constexpr double flops_per_s() const { return fps_; }
  constexpr double tflops() const { return fps_ * 1e-12; }
  FlopRate scaled(double f) const { return FlopRate(fps_ * f); }
  constexpr auto operator<=>(const FlopRate&) const = default;

 private:
  constexpr explicit FlopRate(double v) : fps_(v) {}
  double fps_ = 0.0;
};

// Time to move `amount` at `rate`, rounded once to the nearest picosecond.
// A zero or negative rate is a model bug, not user input: it throws.
Duration transfer_time(Bytes amount, Bandwidth rate);
// Same for a real byte count (a share of a tile's traffic, say).
Duration transfer_time(double bytes, Bandwidth rate);
// Time to execute `flops` operations at `rate`, rounded once.
Duration compute_time(double flops, FlopRate rate);

}  // namespace gcsim::sim
