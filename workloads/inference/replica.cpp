#include "workloads/inference/replica.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "models/gpu/power_model.h"

#include "workloads/inference/scheduler_v0.h"
#include "workloads/inference/scheduler_v1.h"

namespace gcsim::workloads::inference {

namespace {

// A governor fed one piece a step: the step's mean activity, whose HBM
// traffic beside no arithmetic is its kernels' own (clock_governor.h).
std::unique_ptr<models::gpu::ClockGovernor> step_governor(const models::gpu::PowerParams& p, sim::Time at,
                                                          const models::gpu::GovernorState& state) {
  auto gov = std::make_unique<models::gpu::ClockGovernor>(p, at, state);
  gov->take_unshared_from_pieces();
  return gov;
}

// At one instant a finishing step's tokens go out before the next step is
// scheduled (lower priorities run first).
constexpr int32_t kFinishPriority = -2;
constexpr int32_t kKickPriority = -1;
// New work (arrivals, KV arrivals, freed blocks) is looked at once the
// instant's other events have run.
constexpr int32_t kNewWorkPriority = 1;
}  // namespace

const char* role_name(ReplicaRole r) {
  switch (r) {
    case ReplicaRole::unified: return "unified";
    case ReplicaRole::prefill: return "prefill";
    case ReplicaRole::decode: return "decode";
  }
  return "?";
}

Replica::Replica(sim::Simulator& sim, const ReplicaSetup& setup,
                 std::unique_ptr<IterationCost> cost, std::unique_ptr<IterationCost> draft_cost,
                 ReplicaHooks hooks)
    : sim_(sim),
      setup_(setup),
      kv_(setup.num_blocks, setup.scheduler.block_size, setup.scheduler.enable_prefix_caching),
      cost_(std::move(cost)),
      draft_(std::move(draft_cost)),
      hooks_(std::move(hooks)),
      accept_rng_(setup.seed, "speculative/replica" + std::to_string(setup.index)),
      stage_free_(static_cast<size_t>(cost_->config().parallel.pp), sim::Time::zero()),
      busy_(sim::Duration::zero()) {
  if (setup.scheduler.mode == SchedulerMode::v0) {
    scheduler_ = std::make_unique<SchedulerV0>(setup.scheduler, kv_);
  } else {
    scheduler_ = std::make_unique<SchedulerV1>(setup.scheduler, kv_);
  }
  if (hooks_.on_remote_admit) scheduler_->set_on_remote_admit(hooks_.on_remote_admit);
  if (setup_.clocks.model) gov_ = step_governor(setup_.clocks.power, sim::Time::zero(), setup_.clocks.start);
}

namespace {

// A step's mean activity over `span` from its activity-seconds (each
// fraction at most 1: rounding of summed wave shares).
models::gpu::Activity mean_activity(const models::gpu::Activity& s, sim::Duration span) {
  models::gpu::Activity a;
  const double t = span.seconds();
  if (!(t > 0.0)) return a;
  a.tensor = std::min(1.0, s.tensor / t);
  a.vector = std::min(1.0, s.vector / t);
  a.hbm = std::min(1.0, s.hbm / t);
  a.hbm_unshared = std::min(a.hbm, s.hbm_unshared / t);
  return a;
}

// The arithmetic's board power at clock fraction r (clock_governor.h add()).
double arithmetic_w(const models::gpu::PowerParams& p, const models::gpu::Activity& a, double r) {
  return (p.tensor_w * a.tensor + p.vector_w * a.vector) * models::gpu::dynamic_scale(p, r);
}

}  // namespace

double Replica::energy_per_gpu_j(sim::Time until) const {
  if (!gov_) return 0.0;
  return energy_before_j_ + gov_->energy_j(std::max(until, gov_last_));
}

StepCost Replica::step_cost(const StepPlan& plan, const StepShape& shape, double clock, double budget_w) {
  StepCost cost = cost_->cost(shape, clock, budget_w);
  cost.stages[0] += extra_time(plan, shape, clock, budget_w, cost.activity_s);
  cost.total = sim::Duration::zero();
  for (auto d : cost.stages) cost.total += d;
  return cost;
}

// The fixed point of start -> end over one step (clock_governor.h
// periodic_start), iterated because the step's length and activity move
// with the clock its start gives, as the training warm-up passes do
// (sim/cli/clock_warmup.h). Converges in a few passes: the clock moves the
// step's length by a few percent.
models::gpu::GovernorState Replica::periodic_state(const StepPlan& plan, const StepShape& shape) {
  namespace g = models::gpu;
  const g::PowerParams& p = setup_.clocks.power;
  g::GovernorState st = setup_.clocks.start;
  double r = g::state_clock(p, st);
  for (int pass = 0; pass < 40; ++pass) {
    const StepCost c = step_cost(plan, shape, r, g::state_instant_budget_w(p, st.slow));
    const g::Activity a = mean_activity(c.activity_s, c.total);
    const double w = arithmetic_w(p, a, r);
    g::ClockGovernor one(p, sim::Time::zero(), st);
    one.take_unshared_from_pieces();
    const sim::Time end = sim::Time::zero() + c.total;
    one.add(sim::Time::zero(), a, w);
    one.remove(end, a, w);
    st = g::periodic_start(p, st, one.state_at(end), c.total);
    const double next = g::state_clock(p, st);
    const bool settled = std::abs(next - r) < 1e-9;
    r = next;
    if (settled) break;
  }
  return st;
}

void Replica::submit(Request* r) {
  r->replica = setup_.index;
  scheduler_->add(r);
  kick_soon();
}

void Replica::submit_remote(Request* r) {
  r->replica = setup_.index;
  scheduler_->add_remote(r);
  kick_soon();
}

void Replica::remote_kv_arrived(Request* r) {
  scheduler_->remote_kv_arrived(r);
  kick_soon();
}

void Replica::release(Request* r) {
  kv_.free(*r);
  kick_soon();
}

void Replica::kick_soon() {
  if (kick_pending_) return;
  kick_pending_ = true;
  sim_.call_at(
      sim_.now(),
      [this] {
        kick_pending_ = false;
        kick();
      },
      kNewWorkPriority);
}

void Replica::kick() {
  if (in_flight_ >= static_cast<int>(stage_free_.size())) return;
  if (stage_free_[0] > sim_.now()) return;
  if (!scheduler_->has_work()) return;
  start_step();
}

StepShape Replica::shape_of(const StepPlan& plan) const {
  StepShape s;
  s.tokens = plan.tokens;
  for (const ScheduledItem& it : plan.items) {
    const int64_t after = it.context + it.tokens;
    const bool emits = after >= it.req->num_tokens();
    if (it.decode) {
      ++s.decodes;
      s.decode_kv_tokens += after;
      s.decode_q = std::max(s.decode_q, 1 + it.spec);
    } else {
      s.prefills.emplace_back(it.tokens, after);
    }
    if (emits) s.sampled += 1 + it.spec;
  }
  return s;
}

sim::Duration Replica::extra_time(const StepPlan& plan, const StepShape& shape, double clock, double budget_w,
                                  models::gpu::Activity& activity_s) {
  const auto draft = [&](const StepShape& s) {
    const StepCost c = draft_->cost(s, clock, budget_w);
    models::gpu::accumulate(activity_s, c.activity_s);
    return c.total;
  };
  sim::Duration d = sim::Duration::zero();
  // V0 swapping copies blocks over PCIe before the forward pass.
  const int64_t swapped = plan.swap_in_blocks + plan.swap_out_blocks;
  if (swapped > 0) d += sim::transfer_time(sim::Bytes(swapped * setup_.block_bytes), setup_.pcie);
  // Draft passes: one over the step's new tokens, then k - 1 more over the
  // decodes alone (each proposes the next draft token).
  if (draft_ && shape.decodes > 0) {
    StepShape base = shape;
    int64_t spec = 0;
    for (const auto& it : plan.items) spec += it.spec;
    base.tokens -= spec;
    base.decode_q = 1;
    base.decode_kv_tokens -= spec;
    base.sampled = shape.decodes + static_cast<int64_t>(shape.prefills.size());
    d += draft(base);
    StepShape dec;
    dec.tokens = shape.decodes;
    dec.decodes = shape.decodes;
    dec.decode_kv_tokens = base.decode_kv_tokens;
    dec.sampled = shape.decodes;
    const int more = setup_.speculative.num_tokens - 1;
    if (more > 0) {
      const models::gpu::Activity before = activity_s;
      const sim::Duration one = draft(dec);
      d += one * more;
      models::gpu::Activity once = activity_s;
      models::gpu::accumulate(once, before, -1.0);
      models::gpu::accumulate(activity_s, once, more - 1);
    }
  }
  return d;
}

void Replica::start_step() {
  auto b = std::make_shared<Batch>();
  b->plan = scheduler_->schedule();
  if (b->plan.empty()) return;
  b->start = sim_.now();
  const StepShape shape = shape_of(b->plan);
  // The governor's timeline runs forward: with a pipeline the next step may
  // start before the last one's activity ends, and starts for the governor
  // then.
  const sim::Time at = std::max(sim_.now(), gov_last_);
  double clock = 1.0;
  double budget_w = 0.0;
  if (gov_) {
    if (setup_.clocks.steady) {
      energy_before_j_ += gov_->energy_j(at);
      gov_ = step_governor(setup_.clocks.power, at, periodic_state(b->plan, shape));
    }
    clock = gov_->clock(at);
    budget_w = gov_->instant_budget_w(at);
  }
  StepCost cost = step_cost(b->plan, shape, clock, budget_w);
  double step_energy_j = 0.0;
  if (gov_) {
    const models::gpu::Activity a = mean_activity(cost.activity_s, cost.total);
    const double w = arithmetic_w(setup_.clocks.power, a, clock);
    const double e0 = gov_->energy_j(at);
    gov_->add(at, a, w);
    gov_last_ = at + cost.total;
    gov_->remove(gov_last_, a, w);
    step_energy_j = (gov_->energy_j(gov_last_) - e0) * static_cast<double>(ranks().size());
  }
  if (hooks_.on_step_start) hooks_.on_step_start(b->plan, b->start, cost);

  // Through the pipeline: stage s starts when the batch leaves stage s-1
  // and stage s is free.
  sim::Time t = sim_.now();
  for (size_t s = 0; s < stage_free_.size(); ++s) {
    t = std::max(t, stage_free_[s]) + cost.stages[s];
    stage_free_[s] = t;
  }
  const sim::Time end = t;
  ++in_flight_;
  ++steps_;
  // Busy time: the union of step spans.
  const sim::Time from = std::max(b->start, last_busy_end_);
  if (end > from) busy_ += end - from;
  last_busy_end_ = std::max(last_busy_end_, end);

  if (hooks_.on_step) {
    StepRecord rec;
    rec.replica = setup_.index;
    rec.start = b->start;
    rec.end = end;
    rec.prefills = b->plan.prefills;
    rec.decodes = b->plan.decodes;
    rec.tokens = b->plan.tokens;
    rec.prefill_tokens = b->plan.prefill_tokens;
    rec.kv_used_blocks = kv_.used_blocks();
    rec.running = static_cast<int64_t>(scheduler_->num_running());
    rec.waiting = static_cast<int64_t>(scheduler_->num_waiting());
    rec.preempted = b->plan.preempted;
    rec.swap_blocks = b->plan.swap_in_blocks + b->plan.swap_out_blocks;
    rec.compute = cost.compute;
    rec.communication = cost.communication;
    rec.host_wait = cost.host_wait;
    rec.classes = cost.classes;
    if (gov_) {
      rec.sm_clock_mhz = clock * setup_.clocks.f_max_mhz;
      rec.energy_j = step_energy_j;
      rec.activity_s = cost.activity_s;
    }
    hooks_.on_step(rec);
  }
  sim_.call_at(end, [this, b] { finish(b); }, kFinishPriority);
  // With a pipeline the next step may enter the first stage before this
  // one leaves the last.
  if (stage_free_.size() > 1) sim_.call_at(stage_free_[0], [this] { kick(); }, kKickPriority);
}

int64_t Replica::accept(const Request& r) {
  // Each draft token is accepted with the configured probability, in
  // order, until the first rejection (Leviathan et al. 2023's model).
  int64_t a = 0;
  while (a < r.spec_tokens && accept_rng_.uniform() < setup_.speculative.acceptance_rate) ++a;
  return a;
}

void Replica::finish(const std::shared_ptr<Batch>& b) {
  --in_flight_;
  events_.clear();
  scheduler_->complete(b->plan, [this](const Request& r) { return accept(r); }, events_);
  for (const TokenEvent& e : events_) hooks_.on_tokens(*e.req, e.tokens, e.finished);
  kick();
}

}  // namespace gcsim::workloads::inference
