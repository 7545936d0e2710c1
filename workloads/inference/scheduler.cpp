#include "workloads/inference/scheduler.h"

#include <algorithm>
#include <stdexcept>

namespace gcsim::workloads::inference {

void StepPlan::add(Request* r, int64_t n, int64_t spec, bool decode) {
  items.push_back({r, n, r->num_computed, spec, decode});
  tokens += n;
  if (decode) {
    ++decodes;
  } else {
    ++prefills;
    prefill_tokens += n;
  }
  // vLLM V1 advances num_computed_tokens when it schedules: a request in
  // flight asks for nothing more until its step ends.
  r->num_computed += n;
  r->spec_tokens = spec;
  r->in_flight = true;
}

Scheduler::Scheduler(const SchedulerConfig& config, KvCacheManager& kv)
    : config_(config), kv_(kv) {}

void Scheduler::add(Request* r) {
  r->state = RequestState::waiting;
  waiting_.push_back(r);
}

void Scheduler::add_remote(Request* r) {
  r->remote_prompt = true;
  r->prompt_kv_ready = false;
  add(r);
}

void Scheduler::remote_kv_arrived(Request* r) {
  auto it = std::find(remote_.begin(), remote_.end(), r);
  if (it == remote_.end()) throw std::logic_error("remote_kv_arrived: request not waiting for KV");
  remote_.erase(it);
  r->prompt_kv_ready = true;
  // The prompt's KV is here but for the last token, which is recomputed to
  // produce the first token's logits (as after a full prefix-cache hit).
  r->num_computed = r->prompt_len - 1;
  r->state = RequestState::running;
  running_.push_back(r);
}

bool Scheduler::is_decode(const Request& r) const {
  return r.num_output > 0 && r.num_tokens() - r.num_computed == 1;
}

int64_t Scheduler::wanted_tokens(const Request& r) const {
  int64_t n = r.num_tokens() - r.num_computed;
  if (is_decode(r) && config_.num_spec_tokens > 0) {
    // Drafts never run past max_model_len (vLLM caps them the same way).
    n += std::clamp<int64_t>(config_.max_model_len - r.num_tokens(), 0, config_.num_spec_tokens);
  }
  return n;
}

void Scheduler::remove_running(Request* r) {
  auto it = std::find(running_.begin(), running_.end(), r);
  if (it == running_.end()) throw std::logic_error("scheduler: request is not running");
  running_.erase(it);
}

void Scheduler::reject(Request* r, StepPlan& plan) {
  r->state = RequestState::rejected;
  ++rejections_;
  ++plan.rejected;
}

void Scheduler::admit_head(Request* r, int64_t hit, int64_t n, StepPlan& plan) {
  waiting_.pop_front();
  if (r->preemptions == 0) r->cached_tokens = hit;
  r->num_computed = hit;
  r->state = RequestState::running;
  running_.push_back(r);
  plan.add(r, n, 0, false);
}

void Scheduler::preempt(Request* r, StepPlan& plan) {
  remove_running(r);
  ++preemptions_;
  ++r->preemptions;
  ++plan.preempted;
  r->spec_tokens = 0;
  const auto n = static_cast<int64_t>(r->blocks.size());
  if (config_.preemption == PreemptionMode::swap && swap_blocks_used_ + n <= config_.swap_blocks) {
    plan.swap_out_blocks += n;
    swap_blocks_used_ += n;
    r->swapped_blocks = n;
    kv_.free(*r);
    r->state = RequestState::swapped;
    swapped_.push_back(r);
    return;
  }
  // Recompute: the request starts again from its prompt and the tokens it
  // has generated, ahead of every other waiting request.
  kv_.free(*r);
  r->num_computed = 0;
  r->state = RequestState::waiting;
  waiting_.push_front(r);
}

void Scheduler::complete(const StepPlan& plan,
                         const std::function<int64_t(const Request&)>& accepted,
                         std::vector<TokenEvent>& events) {
  for (const ScheduledItem& item : plan.items) {
    Request* r = item.req;
    r->in_flight = false;
    if (r->state != RequestState::running) continue;
    if (r->num_computed < r->num_tokens()) continue;  // a prefill chunk: no token yet
    int64_t a = 0;
    if (item.spec > 0) {
      a = std::clamp<int64_t>(accepted(*r), 0, item.spec);
      // Rejected drafts' KV is discarded (their slots are reused).
      r->num_computed -= item.spec - a;
    }
    r->spec_tokens = 0;
    const int64_t emitted = std::min<int64_t>(a + 1, r->output_len - r->num_output);
    r->num_output += emitted;
    const bool finished = r->done() || r->prefill_only;
    if (finished) {
      remove_running(r);
      r->state = RequestState::finished;
      if (!r->prefill_only) kv_.free(*r);
    }
    events.push_back({r, emitted, finished});
  }
}

bool Scheduler::has_work() const {
  if (!waiting_.empty() || !swapped_.empty()) return true;
  return std::any_of(running_.begin(), running_.end(),
                     [](const Request* r) { return !r->in_flight; });
}

}  // namespace gcsim::workloads::inference
