// DCQCN's reaction point: the rate limiter the sending NIC keeps per queue
// pair (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments",
// SIGCOMM 2015, Algorithm 1). A CNP cuts the current rate by alpha/2 and
// remembers the old rate as the target; rate-increase events, one per
// `byte_counter` bytes sent and one per `rate_increase_period`, first
// recover halfway toward the target (fast recovery), then raise the target
// additively, then hyper-additively once both counters have passed
// `fast_recovery_steps`. Alpha, the congestion estimate, decays by (1 − g)
// every `alpha_period` without a CNP.
//
// Timers are evaluated lazily: advance(now) applies every alpha and
// rate-increase period that has elapsed, in time order, so an idle or
// paused flow costs no events. The model calls it before it reads the rate.
#pragma once

#include <cstdint>

#include "models/network/packet/packet_config.h"
#include "sim/engine/time.h"

namespace gcsim::models::network {

class DcqcnRateControl {
 public:
  DcqcnRateControl() = default;
  // Starts at line rate with alpha = 1 (ConnectX initial_alpha_value 1023/1023).
  DcqcnRateControl(const DcqcnConfig& cfg, double line_rate_bytes_per_s, sim::Time now);

  // A congestion notification arrived.
  void on_cnp(sim::Time now);
  // `bytes` were sent (the byte counter).
  void on_sent(int64_t bytes, sim::Time now);
  // Applies the alpha and rate-increase periods elapsed up to `now`.
  void advance(sim::Time now);

  double rate() const { return current_; }  // bytes/s
  double target() const { return target_; }
  double alpha() const { return alpha_; }
  double line_rate() const { return line_; }
  int64_t cuts() const { return cuts_; }

 private:
  void increase();

  const DcqcnConfig* cfg_ = nullptr;
  double line_ = 0.0;
  double current_ = 0.0;  // Rc
  double target_ = 0.0;   // Rt
  double alpha_ = 1.0;
  int64_t bytes_since_event_ = 0;
  int byte_stage_ = 0;  // byte-counter events since the last cut
  int time_stage_ = 0;  // timer events since the last cut
  sim::Time alpha_base_;  // start of the running alpha period
  sim::Time timer_base_;  // start of the running rate-increase period
  int64_t cuts_ = 0;
};

}  // namespace gcsim::models::network
