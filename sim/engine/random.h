// Seeded random streams, one per component, so that adding a component or
// drawing more numbers in one place never perturbs another's sequence.
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace gcsim::sim {

// SplitMix64 (Steele et al. 2014): a bijective mixer, used to derive stream
// seeds and as the stream generator itself. Fast, 2^64 period, and its
// output does not depend on the standard library's implementation.
constexpr uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// FNV-1a over a component name: the stream's identity.
constexpr uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

class RandomStream {
 public:
  RandomStream(uint64_t run_seed, std::string_view component)
      : state_(splitmix64(run_seed ^ fnv1a(component))) {}

  uint64_t next_u64() {
    state_ += 0x9e3779b97f4a7c15ULL;
    return splitmix64(state_ - 0x9e3779b97f4a7c15ULL);
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
  // Uniform integer in [0, n). Lemire's multiply-shift; bias < n / 2^64.
  uint64_t uniform_int(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(next_u64()) * n) >> 64);
  }
  // Exponential with the given mean (inter-arrival times, failure times).
  double exponential(double mean) { return -mean * std::log1p(-uniform()); }
  // Shuffles `v` in place (Fisher-Yates, from the back).
  template <typename T>
  void shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[static_cast<size_t>(uniform_int(i))]);
  }

 private:
  uint64_t state_;
};

}  // namespace gcsim::sim
