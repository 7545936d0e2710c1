// The streaming multiprocessors of one GPU as a pool: how many run tiles,
// how many communication kernels hold, and how many are free.
//
// A communication kernel (NCCL: one CTA per channel) asks for SMs with
// hold(); those not free at once become a debt that is repaid from the next
// SMs that finish their tiles, before any compute wave gets them.
#pragma once

namespace gcsim::models::gpu {

class SmArray {
 public:
  explicit SmArray(int sm_count);

  int total() const { return total_; }
  int busy() const { return busy_; }  // SMs running compute tiles
  int held() const { return held_; }  // SMs held by communication kernels
  int debt() const { return debt_; }  // SMs promised to holders, not yet free
  int free() const { return total_ - busy_ - held_; }

  // A compute wave takes `count` free SMs (precondition: count <= free()).
  void start_tiles(int count);
  // A compute wave ends: its SMs repay the hold debt first, the rest free.
  void finish_tiles(int count);

  // Holds `count` SMs: the free ones at once, the rest as a debt. Returns the
  // number held at once. Throws std::invalid_argument when held + debt would
  // exceed the GPU's SMs (more channels than SMs is a configuration bug).
  int hold(int count);
  // Gives back `count` SMs of earlier holds: outstanding debt is cancelled
  // first, then held SMs become free.
  void release(int count);

 private:
  int total_;
  int busy_ = 0;
  int held_ = 0;
  int debt_ = 0;
};

}  // namespace gcsim::models::gpu
