// vLLM V0's default scheduler (vllm/core/scheduler.py, chunked prefill
// off): a step is all prefill or all decode. With nothing swapped out,
// waiting requests are admitted FCFS while the block manager says OK (free
// blocks minus the request's blocks stay at or above the watermark, 1% of
// the blocks by default), the token budget and max_num_seqs allow; the first
// that does not fit stops admission, and one that could never fit is
// rejected. If any was admitted the step is that prefill. Otherwise every
// running request decodes one token (plus drafts); when its blocks cannot
// grow, the newest running request is preempted (recompute, or swap to CPU
// memory), itself last. The watermark applies to admission only, never to
// decode. Swapped requests come back, oldest first, when nothing was
// preempted and blocks above the watermark allow.
#pragma once

#include "workloads/inference/scheduler.h"

namespace gcsim::workloads::inference {

class SchedulerV0 : public Scheduler {
 public:
  using Scheduler::Scheduler;
  StepPlan schedule() override;
  int64_t watermark_blocks() const;

 private:
  void schedule_prefills(StepPlan& plan);
  void schedule_decodes(StepPlan& plan);
  void schedule_swapped(StepPlan& plan);
};

}  // namespace gcsim::workloads::inference
