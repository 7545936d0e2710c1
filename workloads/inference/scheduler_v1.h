// vLLM V1's scheduler (vllm/v1/core/sched/scheduler.py): one token budget
// per step shared by every request. Running requests come first, in
// admission order: each asks for what it has not computed (1 for a decode,
// plus its draft tokens; the rest of a prompt in chunks), capped by the
// budget; when its blocks cannot grow, the newest running request is
// preempted (recompute) until they can, and if that was itself, scheduling
// of running requests stops. Then, only if nothing was preempted, waiting
// requests are admitted FCFS while the budget, max_num_seqs and free blocks
// allow, their prompts chunked into what is left, after a prefix-cache
// lookup. Prefill and decode share a step.
#pragma once

#include "workloads/inference/scheduler.h"

namespace gcsim::workloads::inference {

class SchedulerV1 : public Scheduler {
 public:
  using Scheduler::Scheduler;
  StepPlan schedule() override;
};

}  // namespace gcsim::workloads::inference
