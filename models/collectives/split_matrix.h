// The bytes each member of a group sends each other member in one uneven
// all-to-all: PyTorch's all_to_all_single with input/output split sizes
// (NCCL grouped ncclSend/ncclRecv, one pair per peer with its own count).
// Rows are sources, columns destinations, both in the communicator's order;
// the diagonal is what a rank keeps (a local copy, no transfer).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gcsim::models::collectives {

class SplitMatrix {
 public:
  // `bytes` is n x n, row-major, every entry >= 0.
  SplitMatrix(int n, std::vector<int64_t> bytes);

  int size() const { return n_; }
  const std::vector<int64_t>& bytes() const { return bytes_; }
  int64_t at(int src, int dst) const {
    return bytes_[static_cast<size_t>(src) * static_cast<size_t>(n_) + static_cast<size_t>(dst)];
  }
  // Bytes a member sends to / receives from the others (the diagonal left out).
  int64_t sent(int src) const;
  int64_t received(int dst) const;
  // The largest send buffer of any member, its own share included
  // (nccl-tests' size of that member's all-to-all).
  int64_t max_send_buffer() const;
  // The member that receives the most from the others (lowest index on ties).
  int hottest_receiver() const;
  // The same exchange run backwards (combine after dispatch): the transpose.
  SplitMatrix transposed() const;
  // Equal matrices have equal fingerprints (FNV-1a over n and the entries):
  // what caches of schedules and plans key on.
  uint64_t fingerprint() const { return fingerprint_; }
  bool operator==(const SplitMatrix& o) const { return n_ == o.n_ && bytes_ == o.bytes_; }

 private:
  int n_ = 0;
  std::vector<int64_t> bytes_;
  uint64_t fingerprint_ = 0;
};

using SplitMatrixPtr = std::shared_ptr<const SplitMatrix>;

// "" when `m` fits a group of `n` members, else why not.
std::string check_split_matrix(const SplitMatrix& m, int n);

}  // namespace gcsim::models::collectives
