#include "models/collectives/split_matrix.h"

#include <algorithm>
#include <stdexcept>

namespace gcsim::models::collectives {

SplitMatrix::SplitMatrix(int n, std::vector<int64_t> bytes) : n_(n), bytes_(std::move(bytes)) {
  if (n_ < 0 || bytes_.size() != static_cast<size_t>(n_) * static_cast<size_t>(n_)) {
    throw std::invalid_argument("split matrix: " + std::to_string(bytes_.size()) +
                                " entries for " + std::to_string(n_) + " members");
  }
  for (int64_t b : bytes_) {
    if (b < 0) throw std::invalid_argument("split matrix: negative bytes");
  }
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xffu;
      h *= 1099511628211ull;
    }
  };
  mix(static_cast<uint64_t>(n_));
  for (int64_t b : bytes_) mix(static_cast<uint64_t>(b));
  fingerprint_ = h;
}

int64_t SplitMatrix::sent(int src) const {
  int64_t s = 0;
  for (int d = 0; d < n_; ++d) s += d == src ? 0 : at(src, d);
  return s;
}

int64_t SplitMatrix::received(int dst) const {
  int64_t s = 0;
  for (int r = 0; r < n_; ++r) s += r == dst ? 0 : at(r, dst);
  return s;
}

int64_t SplitMatrix::max_send_buffer() const {
  int64_t best = 0;
  for (int r = 0; r < n_; ++r) {
    int64_t row = 0;
    for (int d = 0; d < n_; ++d) row += at(r, d);
    best = std::max(best, row);
  }
  return best;
}

int SplitMatrix::hottest_receiver() const {
  int best = 0;
  for (int d = 1; d < n_; ++d) {
    if (received(d) > received(best)) best = d;
  }
  return best;
}

SplitMatrix SplitMatrix::transposed() const {
  std::vector<int64_t> t(bytes_.size());
  for (int r = 0; r < n_; ++r) {
    for (int d = 0; d < n_; ++d) t[static_cast<size_t>(d * n_ + r)] = at(r, d);
  }
  return SplitMatrix(n_, std::move(t));
}

std::string check_split_matrix(const SplitMatrix& m, int n) {
  if (m.size() != n) {
    return "the split matrix is " + std::to_string(m.size()) + " x " + std::to_string(m.size()) +
           " for a group of " + std::to_string(n);
  }
  return "";
}

}  // namespace gcsim::models::collectives
