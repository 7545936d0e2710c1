// One serving replica: a vLLM engine on tp x pp GPUs. It runs the engine
// loop as events: when its first pipeline stage is free (and fewer than pp
// steps are in flight, vLLM's max_concurrent_batches) and its scheduler has
// work, it asks the scheduler for a step, costs it (IterationCost: kernels
// on the GPU model, collectives on the fabric; plus draft-model passes for
// speculative decoding and PCIe copies for swapping), and at the step's end
// hands the tokens it produced to the serving system.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "models/gpu/clock_governor.h"
#include "sim/engine/random.h"
#include "sim/engine/simulator.h"
#include "workloads/inference/iteration_cost.h"
#include "workloads/inference/kv_cache_manager.h"
#include "workloads/inference/scheduler.h"
#include "workloads/inference/serving_config.h"

namespace gcsim::workloads::inference {

enum class ReplicaRole { unified, prefill, decode };
const char* role_name(ReplicaRole r);

// One engine step as it ran, for the trace and the report.
struct StepRecord {
  int replica = 0;
  sim::Time start, end;
  int prefills = 0;
  int decodes = 0;
  int64_t tokens = 0;
  int64_t prefill_tokens = 0;
  int64_t kv_used_blocks = 0;  // after scheduling
  int64_t running = 0;
  int64_t waiting = 0;
  int preempted = 0;
  int64_t swap_blocks = 0;
  sim::Duration compute, communication;
  sim::Duration host_wait;              // GPUs idle waiting for the host's issue
  training::KernelClassTimes classes;   // kernel time per class, all stages (iteration_cost.h)
  // Under the clock model (ReplicaClocks): the SM clock the step ran at
  // (MHz) and the board energy of the replica's GPUs over the step (J,
  // from its start for the step's duration); both 0 without it.
  double sm_clock_mhz = 0.0;
  double energy_j = 0.0;
  // What one of its GPUs did over the step (StepCost::activity_s, draft
  // passes included): activity-seconds the governor saw.
  models::gpu::Activity activity_s;
};

// SM clocks of a replica's steps under cluster.clocks: model (clock_governor.h).
// One governor per replica: its GPUs run the same kernels (TP ranks are
// symmetric; with pp > 1 each stage's GPUs are taken as busy 1/pp of the
// step). A step gets the clock the governor gives at its start, runs all its
// kernels at it (IterationCost::cost(shape, clock)), and the governor sees
// the step's mean activity for its duration, then nothing until the next.
struct ReplicaClocks {
  bool model = false;         // off: steps at the spec's clocks (rested or sustained)
  models::gpu::PowerParams power;
  double f_max_mhz = 0.0;     // the spec's SM clock
  // Where the governor starts at time zero (rest: zeros), or, `steady`,
  // every step from the periodic state of that step repeated back to back
  // (a server whose neighbouring steps look like this one; the measured
  // serving steps ran so), searched from `start`.
  models::gpu::GovernorState start;
  bool steady = false;
};

struct ReplicaHooks {
  // `tokens` emitted by `r` now; `finished`: its last (or, prefill_only, its first).
  std::function<void(Request& r, int64_t tokens, bool finished)> on_tokens;
  // A disaggregated request got its decode-side blocks (called inside
  // scheduling: defer any call back into the replica).
  std::function<void(Request* r)> on_remote_admit;
  // A step was scheduled (start time, its cost), before it runs.
  std::function<void(const StepPlan& plan, sim::Time start, const StepCost& cost)> on_step_start;
  std::function<void(const StepRecord&)> on_step;
};

struct ReplicaSetup {
  int index = 0;
  ReplicaRole role = ReplicaRole::unified;
  SchedulerConfig scheduler;
  int64_t num_blocks = 0;
  int64_t block_bytes = 0;   // per GPU, for swap copies
  sim::Bandwidth pcie;       // host link each way, for swap copies
  SpeculativeConfig speculative;
  uint64_t seed = 1;
  ReplicaClocks clocks;
};

class Replica {
 public:
  Replica(sim::Simulator& sim, const ReplicaSetup& setup, std::unique_ptr<IterationCost> cost,
          std::unique_ptr<IterationCost> draft_cost, ReplicaHooks hooks);
  Replica(const Replica&) = delete;
  Replica& operator=(const Replica&) = delete;

  void submit(Request* r);
  void submit_remote(Request* r);
  // The KV of a remote request has arrived (decode side).
  void remote_kv_arrived(Request* r);
  // A prefill_only request's KV has been sent: its blocks can go.
  void release(Request* r);
  // Starts a step if the first stage is free and there is work.
  void kick();
  // kick() after every other event of this instant: requests arriving
  // together are scheduled together, as vLLM's engine drains its input
  // queue before it schedules.
  void kick_soon();

  int index() const { return setup_.index; }
  ReplicaRole role() const { return setup_.role; }
  const std::vector<int>& ranks() const { return cost_->config().ranks; }
  Scheduler& scheduler() { return *scheduler_; }
  const Scheduler& scheduler() const { return *scheduler_; }
  KvCacheManager& kv() { return kv_; }
  const KvCacheManager& kv() const { return kv_; }
  IterationCost& cost() { return *cost_; }
  int64_t steps() const { return steps_; }
  sim::Duration busy() const { return busy_; }
  // Board energy of one of its GPUs from time zero to `until` (J; 0
  // without the clock model): its steps and the idle time between them.
  double energy_per_gpu_j(sim::Time until) const;
  int64_t outstanding = 0;  // requests routed here and not finished (the router's view)

 private:
  struct Batch {
    StepPlan plan;
    sim::Time start;
  };
  StepShape shape_of(const StepPlan& plan) const;
  // Swap copies and draft passes at SM clock `clock`; their activity is
  // added to `activity_s` (per GPU, activity-seconds).
  sim::Duration extra_time(const StepPlan& plan, const StepShape& shape, double clock, double budget_w,
                           models::gpu::Activity& activity_s);
  // The step's cost at `clock`, extra time and its activity included.
  // `budget_w`: the instantaneous limiter's cap (IterationCost::cost).
  StepCost step_cost(const StepPlan& plan, const StepShape& shape, double clock, double budget_w);
  // ReplicaClocks::steady: the governor state this step starts with when it
  // repeats back to back.
  models::gpu::GovernorState periodic_state(const StepPlan& plan, const StepShape& shape);
  void start_step();
  void finish(const std::shared_ptr<Batch>& b);
  int64_t accept(const Request& r);

  sim::Simulator& sim_;
  ReplicaSetup setup_;
  KvCacheManager kv_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<IterationCost> cost_;
  std::unique_ptr<IterationCost> draft_;
  ReplicaHooks hooks_;
  sim::RandomStream accept_rng_;
  std::vector<sim::Time> stage_free_;
  int in_flight_ = 0;
  bool kick_pending_ = false;
  int64_t steps_ = 0;
  sim::Duration busy_;
  sim::Time last_busy_end_;
  std::vector<TokenEvent> events_;  // scratch
  std::unique_ptr<models::gpu::ClockGovernor> gov_;  // null without the clock model
  sim::Time gov_last_;           // the governor's last update (a step's end)
  double energy_before_j_ = 0.0;  // per GPU, by governors replaced (steady)
};

}  // namespace gcsim::workloads::inference
