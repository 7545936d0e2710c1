// One GPU: an SM array and an HBM stack shared by the kernels running on it,
// and an HBM capacity ledger. Kernels run as waves of tiles over the SMs that
// are free when each wave starts, so wave quantization and the slowdown of a
// GEMM beside an SM-holding communication kernel both appear. SMs go to
// kernels and holds in launch order, as the CUDA work distributor
// dispatches equal-priority grids: a persistent kernel
// (KernelDesc::persistent: Hopper cuBLAS GEMMs) keeps its SMs between waves
// and grows into SMs that come free, and a communication kernel asking for
// SMs waits for the last wave of the kernels launched before it.
//
// Identical consecutive waves of a kernel (same SMs, same HBM share, nothing
// else changing on the GPU) are coalesced into one simulator event, a batch;
// anything that could change the schedule splits the batches exactly at the
// wave in flight, so results equal the one-event-per-wave schedule to the
// picosecond (GpuOptions).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "models/gpu/clock_governor.h"
#include "models/gpu/gpu_spec.h"
#include "models/gpu/interference.h"
#include "models/gpu/kernel.h"
#include "sim/engine/simulator.h"

namespace gcsim::models::gpu {

// Called when a kernel finishes: the time its first tile started on an SM
// and the time its last tile finished.
using KernelDone = std::function<void(sim::Time start, sim::Time end)>;

struct GpuOptions {
  // One event per batch of identical waves instead of one per wave. Kernel
  // spans, the order in which kernels complete, the SMs granted at every
  // wave boundary and the HBM shares are the same either way; off is the
  // plain one-event-per-wave schedule, kept to check that. With it on:
  //  - a batch split short leaves its original end event pending, to fire
  //    as a no-op: Simulator::events_executed() counts it, and
  //    Simulator::now() after run() may lie past the last kernel's end;
  //  - free_sms()/busy_sms()/held_sms() read at the very picosecond of a
  //    coalesced wave boundary, before that instant's scheduling pass, see
  //    the ending wave as still running (after the pass they agree);
  //  - launch, hold_sms and release_sms must be called from events that run
  //    before the GPU's scheduling pass of their instant (priority below
  //    1'000'000; the default 0 is, as in the cluster model), or from a
  //    `granted` callback of a hold served in a pass.
  bool coalesce_waves = true;
  // Runs the power cap's clock governor (clock_governor.h; needs
  // spec.power): each kernel's arithmetic at the clock it starts with,
  // relative to the clock the spec's efficiencies stand for (the sustained
  // clock when spec.at_sustained_clocks, else f_max).
  bool clock_model = false;
  // The governor's averages at time zero (zero: a rested GPU).
  GovernorState initial_state;
  // > 0: the governor holds the SM clock at this fraction of f_max (the
  // power fit reads the runtime's activity at a measured clock).
  double pinned_clock = 0.0;
  // How collectives streaming on this GPU (add_hbm_load) slow the kernel
  // waves that start meanwhile (interference.h).
  InterferenceParams interference;
};

// What ran on a GPU, integrated over simulated time since its start: SM
// seconds of compute tiles, and the HBM bytes the kernel waves would move at
// their own pace (each wave's bytes over its length without interference),
// for averages over an interval (two samples).
struct GpuActivityIntegral {
  double busy_sm_seconds = 0.0;
  double hbm_demand_bytes = 0.0;
};

// Called when the board power or the SM clock the governor would give
// changes: simulated time, SM clock (MHz), board power (W).
using PowerListener = std::function<void(sim::Time when, double sm_clock_mhz, double power_w)>;

// The simulator's pending events point into a Gpu: it must outlive the run
// of the simulator it was built with.
class Gpu {
 public:
  Gpu(sim::Simulator& sim, const GpuSpec& spec, int rank, GpuOptions options = {});
  ~Gpu();
  Gpu(const Gpu&) = delete;
  Gpu& operator=(const Gpu&) = delete;

  const GpuSpec& spec() const { return spec_; }
  int rank() const { return rank_; }

  // Starts `kernel` now (after the launch latency); `done` fires at its end.
  void launch(const KernelDesc& kernel, KernelDone done);

  // Communication kernels hold SMs (one per NCCL channel) for their whole
  // duration; GEMMs launched meanwhile see fewer free SMs. `granted` is
  // called, from a simulator event at the instant it happens, once all
  // `count` SMs are held (count 0: at once). A hold is served:
  //  - at once if no compute kernel launched on this GPU before it has
  //    tiles left to start (or is still in its launch latency): it takes
  //    the free SMs now;
  //  - otherwise in the scheduling pass in which the last of those kernels
  //    has landed and started its last wave, after they have taken their
  //    SMs and before the kernels launched after the hold take theirs
  //    (CTAs of equal-priority grids are dispatched in launch order; while
  //    the older kernels still have tiles left, all waiting kernels share
  //    the free SMs as usual). Measured on 2x H100 (calibration/measurements/h100-x2/
  //    attention_beside_nccl_2026-11-26): an NCCL all-reduce launched 1-1.5
  //    ms before the end of an 8192^3 cuBLAS GEMM started at that GEMM's
  //    last round, 103-121 us before its end.
  // SMs not free when it is served are owed: repaid, holds first come first
  // served, from the next SMs that come free (a compute wave's end, a
  // persistent kernel's last wave or end, a release), before any waiting
  // kernel gets them. A persistent kernel's SMs come free only when its
  // last wave leaves them idle or it ends. Throws
  // std::invalid_argument if holds would exceed the GPU's SMs.
  void hold_sms(int count, std::function<void()> granted);
  void hold_sms(int count) { hold_sms(count, nullptr); }
  // Gives back `count` SMs of earlier holds. SMs already held go first to
  // the holds still owed SMs (oldest first), the rest come free; releasing
  // more than are held cancels the parts not yet held of the newest holds,
  // whose `granted` is then never called (meant for giving back a hold
  // before it was granted; a hold released so is indistinguishable from
  // another, so release only what was granted when callbacks matter).
  void release_sms(int count);
  int free_sms() const;      // neither running tiles, kept nor held
  int held_sms() const;      // held by communication kernels (granted so far)
  int promised_sms() const;  // held, owed and deferred: what holds asked for and keep
  int busy_sms() const;      // running compute tiles
  int reserved_sms() const;  // kept idle by persistent kernels (between waves, last wave)

  // Collectives streaming through this GPU's HBM: `bytes_per_s` more while
  // one moves data (add), the same amount back at its end (remove). Kernel
  // waves that start meanwhile get the HBM left (interference.h), and their
  // arithmetic stretches; waves in flight keep their length. Under the
  // clock model the load adds to the governor's HBM activity.
  void add_hbm_load(double bytes_per_s);
  void remove_hbm_load(double bytes_per_s);
  double hbm_load() const;  // bytes/s streamed by collectives now
  GpuActivityIntegral activity_integral() const;  // up to now

  // HBM capacity ledger (bytes). allocate() returns false when the request
  // would exceed capacity; the caller reports the OOM.
  bool allocate(sim::Bytes bytes);
  void free(sim::Bytes bytes);
  sim::Bytes memory_used() const;
  sim::Bytes memory_peak() const;

  // The clock governor (null without GpuOptions::clock_model): energy,
  // power and averaged activity.
  const ClockGovernor* governor() const;
  void set_power_listener(PowerListener listener);

 private:
  class Impl;
  GpuSpec spec_;
  int rank_;
  std::unique_ptr<Impl> impl_;  // after spec_: it keeps a reference to it
};

}  // namespace gcsim::models::gpu
