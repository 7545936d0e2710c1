#include "workloads/inference/scheduler_v1.h"

#include <algorithm>

namespace gcsim::workloads::inference {

StepPlan SchedulerV1::schedule() {
  StepPlan plan;
  int64_t budget = config_.max_num_batched_tokens;
  const int64_t threshold = config_.long_prefill_token_threshold;

  // 1. Running requests, oldest first.
  size_t i = 0;
  while (i < running_.size() && budget > 0) {
    Request* r = running_[i];
    if (r->in_flight) {
      ++i;
      continue;
    }
    const bool decode = is_decode(*r);
    int64_t n = wanted_tokens(*r);
    if (threshold > 0) n = std::min(n, threshold);
    n = std::min(n, budget);
    if (n <= 0) {
      ++i;
      continue;
    }
    const int64_t spec = std::max<int64_t>(0, n - (r->num_tokens() - r->num_computed));
    bool scheduled = false;
    for (;;) {
      if (kv_.allocate(*r, r->num_computed + n, 0, r->num_computed + n - spec)) {
        scheduled = true;
        break;
      }
      // Preempt the newest running request not in flight (vLLM pops the
      // running list's tail).
      Request* victim = nullptr;
      for (auto it = running_.rbegin(); it != running_.rend(); ++it) {
        if (!(*it)->in_flight) {
          victim = *it;
          break;
        }
      }
      if (victim == nullptr) break;
      preempt(victim, plan);
      if (victim == r) break;
    }
    if (!scheduled) break;
    plan.add(r, n, spec, decode);
    budget -= n;
    ++i;
  }

  // 2. Waiting requests, FCFS, only when nothing was preempted.
  if (plan.preempted > 0) return plan;
  while (!waiting_.empty() && budget > 0) {
    if (static_cast<int64_t>(running_.size() + remote_.size()) >= config_.max_num_seqs) break;
    Request* r = waiting_.front();
    if (r->remote_prompt && !r->prompt_kv_ready) {
      // Blocks for the prompt now; its KV is pulled from the prefill
      // replica and it takes no budget until then.
      if (!kv_.allocate(*r, r->prompt_len, 0, r->prompt_len)) break;
      waiting_.pop_front();
      r->state = RequestState::remote_kv;
      remote_.push_back(r);
      if (on_remote_admit_) on_remote_admit_(r);
      continue;
    }
    const int64_t hit = kv_.cached_prefix(*r);
    int64_t n = r->num_tokens() - hit;
    if (threshold > 0) n = std::min(n, threshold);
    if (!config_.enable_chunked_prefill && n > budget) break;
    n = std::min(n, budget);
    if (!kv_.allocate(*r, hit + n, hit, hit + n)) break;
    admit_head(r, hit, n, plan);
    budget -= n;
  }
  return plan;
}

}  // namespace gcsim::workloads::inference
