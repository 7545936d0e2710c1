// The streaming multiprocessors of one GPU as a pool: how many run tiles,
// how many a persistent kernel keeps between its tiles, how many
// communication kernels hold, and how many are free.
//
// A communication kernel (NCCL: one CTA per channel) asks for SMs with
// hold(); those not free at once become a debt that is repaid from the next
// SMs that come free (a compute wave's end, a persistent kernel's end),
// before any compute wave gets them. The pool counts SMs only; which hold
// a repaid SM goes to is the Gpu's business (FIFO).
#pragma once

namespace gcsim::models::gpu {

class SmArray {
 public:
  explicit SmArray(int sm_count);

  int total() const { return total_; }
  int busy() const { return busy_; }          // SMs running compute tiles
  int reserved() const { return reserved_; }  // kept idle by persistent kernels
  int held() const { return held_; }          // SMs held by communication kernels
  int debt() const { return debt_; }          // SMs promised to holders, not yet free
  int free() const { return total_ - busy_ - reserved_ - held_; }

  // A compute wave takes `count` free SMs (precondition: count <= free()).
  void start_tiles(int count);
  // A compute wave ends and gives its SMs back: they repay the hold debt
  // first, the rest are free. Returns the number that repaid debt.
  int finish_tiles(int count);

  // A persistent kernel's wave ends and the kernel keeps its SMs for its
  // next wave (busy -> reserved), or its next wave starts on SMs it kept
  // (reserved -> busy). Neither repays debt: the SMs never come free.
  void keep_tiles(int count);
  void resume_tiles(int count);
  // A persistent kernel ends: `count` SMs it kept idle come free, repaying
  // the hold debt first. Returns the number that repaid debt.
  int release_kept(int count);

  // Holds `count` SMs: the free ones at once, the rest as a debt. Returns the
  // number held at once. Throws std::invalid_argument when held + debt would
  // exceed the GPU's SMs (more channels than SMs is a configuration bug).
  int hold(int count);
  // Gives back `count` SMs of earlier holds: outstanding debt is cancelled
  // first, then held SMs become free.
  void release(int count);
  // The same in two steps, for a caller that tracks which hold is which:
  // `count` held SMs are given back (precondition: count <= held()) and go
  // to the debt first, staying held; the rest come free. Returns the number
  // that repaid debt.
  int release_held(int count);
  // Cancels `count` SMs of debt (precondition: count <= debt()).
  void cancel_debt(int count);

 private:
  int repay(int count);  // up to `count` SMs coming free repay the debt

  int total_;
  int busy_ = 0;
  int reserved_ = 0;
  int held_ = 0;
  int debt_ = 0;
};

}  // namespace gcsim::models::gpu
