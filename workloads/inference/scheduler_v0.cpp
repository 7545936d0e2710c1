#include "workloads/inference/scheduler_v0.h"

#include <algorithm>

namespace gcsim::workloads::inference {

int64_t SchedulerV0::watermark_blocks() const {
  return static_cast<int64_t>(config_.watermark * static_cast<double>(kv_.num_blocks()));
}

StepPlan SchedulerV0::schedule() {
  StepPlan plan;
  if (swapped_.empty()) {
    schedule_prefills(plan);
    if (!plan.empty()) return plan;
  }
  schedule_decodes(plan);
  if (plan.preempted == 0) schedule_swapped(plan);
  return plan;
}

void SchedulerV0::schedule_prefills(StepPlan& plan) {
  int64_t budget = config_.max_num_batched_tokens;
  auto seqs = static_cast<int64_t>(running_.size());
  const int64_t watermark = watermark_blocks();
  while (!waiting_.empty()) {
    Request* r = waiting_.front();
    const int64_t hit = kv_.cached_prefix(*r);
    const int64_t n = r->num_tokens() - hit;
    const int64_t need = kv_.blocks_to_take(*r, r->num_tokens(), hit);
    if (kv_.num_blocks() - need < watermark) {  // AllocStatus.NEVER
      waiting_.pop_front();
      reject(r, plan);
      continue;
    }
    if (kv_.free_blocks() - need < watermark) break;  // AllocStatus.LATER
    if (n > budget || seqs + 1 > config_.max_num_seqs) break;
    kv_.allocate(*r, r->num_tokens(), hit, r->num_tokens());
    admit_head(r, hit, n, plan);
    budget -= n;
    ++seqs;
  }
}

void SchedulerV0::schedule_decodes(StepPlan& plan) {
  // Requests not yet handled this step; victims come off its tail.
  std::vector<Request*> queue = running_;
  size_t i = 0, end = queue.size();
  while (i < end) {
    Request* r = queue[i];
    if (r->in_flight) {
      ++i;
      continue;
    }
    const int64_t n = wanted_tokens(*r);
    const int64_t spec = std::max<int64_t>(0, n - (r->num_tokens() - r->num_computed));
    const bool decode = is_decode(*r);
    bool ok = false;
    for (;;) {
      if (kv_.allocate(*r, r->num_computed + n, 0, r->num_computed + n - spec)) {
        ok = true;
        break;
      }
      while (end > i + 1 && queue[end - 1]->in_flight) --end;
      if (end > i + 1) {
        preempt(queue[--end], plan);
      } else {
        preempt(r, plan);
        break;
      }
    }
    if (ok) plan.add(r, n, spec, decode);
    ++i;
  }
}

void SchedulerV0::schedule_swapped(StepPlan& plan) {
  const int64_t watermark = watermark_blocks();
  while (!swapped_.empty()) {
    if (static_cast<int64_t>(running_.size()) >= config_.max_num_seqs) break;
    Request* r = swapped_.front();
    const int64_t total = r->num_computed + 1;
    if (kv_.free_blocks() - kv_.blocks_to_take(*r, total, 0) < watermark) break;
    if (!kv_.allocate(*r, total, 0, r->num_computed)) break;
    swapped_.pop_front();
    plan.swap_in_blocks += r->swapped_blocks;
    swap_blocks_used_ -= r->swapped_blocks;
    r->swapped_blocks = 0;
    r->state = RequestState::running;
    running_.push_back(r);
    const int64_t n = r->num_tokens() - r->num_computed;
    plan.add(r, n, 0, is_decode(*r));
  }
}

}  // namespace gcsim::workloads::inference
