// What a vLLM scheduler decides at every engine step, and the state both
// modes share: the waiting queue (FCFS; preempted requests go back to its
// front), the running list in admission order, preemption (recompute frees
// the blocks and restarts the request from its cached prefix; swap moves
// the blocks to CPU memory), and what a finished step does to each request
// (tokens emitted, draft tokens verified, requests finished and freed).
// SchedulerV0 and SchedulerV1 (scheduler_v0.h, scheduler_v1.h) differ in how
// they fill a step. Semantics: ../shared/REFERENCE.md, "Inference".
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "workloads/inference/kv_cache_manager.h"
#include "workloads/inference/request.h"

namespace gcsim::workloads::inference {

enum class SchedulerMode { v0, v1 };
enum class PreemptionMode { recompute, swap };

struct SchedulerConfig {
  SchedulerMode mode = SchedulerMode::v1;
  int64_t block_size = 16;             // tokens per KV block
  int64_t max_num_seqs = 256;          // requests in the running list at most
  int64_t max_num_batched_tokens = 8192;  // token budget of one step
  int64_t max_model_len = 8192;        // prompt + output tokens of one request at most
  bool enable_prefix_caching = true;
  bool enable_chunked_prefill = true;  // V1: split prompts to fill the budget; V0: off
  PreemptionMode preemption = PreemptionMode::recompute;  // swap: V0 only
  double watermark = 0.01;             // V0: fraction of blocks admission keeps free
  int64_t long_prefill_token_threshold = 0;  // > 0: cap on one request's tokens per step
  int64_t swap_blocks = 0;             // V0 swap: blocks of CPU swap space
  int64_t num_spec_tokens = 0;         // speculative decoding: draft tokens per decode
};

// One request's part of a step.
struct ScheduledItem {
  Request* req = nullptr;
  int64_t tokens = 0;   // tokens computed this step (drafts included)
  int64_t context = 0;  // tokens whose KV existed before this step
  int64_t spec = 0;     // draft tokens among `tokens`
  bool decode = false;  // only the request's newest token (and drafts)
};

struct StepPlan {
  std::vector<ScheduledItem> items;
  int64_t tokens = 0;          // all tokens of the step
  int64_t prefill_tokens = 0;  // tokens of non-decode items
  int decodes = 0;
  int prefills = 0;
  int64_t swap_out_blocks = 0;  // blocks copied GPU -> CPU before the step (V0 swap)
  int64_t swap_in_blocks = 0;   // blocks copied CPU -> GPU before the step
  int preempted = 0;            // requests preempted while building it
  int rejected = 0;             // requests refused while building it (V0: can never fit)
  bool empty() const { return items.empty(); }
  void add(Request* r, int64_t tokens, int64_t spec, bool decode);
};

// A request that emitted tokens at the end of a step.
struct TokenEvent {
  Request* req = nullptr;
  int64_t tokens = 0;     // emitted at once (1, or accepted drafts + 1)
  bool finished = false;  // its last token: blocks freed (unless prefill_only)
};

class Scheduler {
 public:
  Scheduler(const SchedulerConfig& config, KvCacheManager& kv);
  virtual ~Scheduler() = default;
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // A request arrives (tail of the waiting queue).
  void add(Request* r);
  // A disaggregated request whose prompt KV will come from a prefill
  // replica: admitted like a new request (blocks for its prompt), then
  // waits for the KV (on_remote_admit) before it decodes.
  void add_remote(Request* r);
  // Called when a remote request got its blocks; the caller starts the
  // transfer and calls remote_kv_arrived() when it ends.
  void set_on_remote_admit(std::function<void(Request*)> f) { on_remote_admit_ = std::move(f); }
  void remote_kv_arrived(Request* r);

  // The next step (empty: nothing can run now).
  virtual StepPlan schedule() = 0;

  // The step `plan` ended: every item leaves flight; a request whose known
  // tokens are all computed emits tokens (`accepted(r)` of its drafts were
  // accepted). Finished requests leave the running list and, unless
  // prefill_only, free their blocks. Appends what happened to `events`.
  void complete(const StepPlan& plan, const std::function<int64_t(const Request&)>& accepted,
                std::vector<TokenEvent>& events);

  // Anything that a later schedule() could run without a new arrival.
  bool has_work() const;
  size_t num_waiting() const { return waiting_.size(); }
  size_t num_running() const { return running_.size(); }
  size_t num_swapped() const { return swapped_.size(); }
  size_t num_remote() const { return remote_.size(); }
  int64_t preemptions() const { return preemptions_; }
  int64_t rejections() const { return rejections_; }
  const SchedulerConfig& config() const { return config_; }
  KvCacheManager& kv() { return kv_; }
  const std::vector<Request*>& running() const { return running_; }
  const std::deque<Request*>& waiting() const { return waiting_; }

 protected:
  // Preempts `r` (must be in running_, not in flight): recompute, or swap
  // when configured and CPU blocks remain. Updates the plan's counters.
  void preempt(Request* r, StepPlan& plan);
  void remove_running(Request* r);
  // Tokens a request asks for in its next step (drafts included).
  int64_t wanted_tokens(const Request& r) const;
  bool is_decode(const Request& r) const;
  void reject(Request* r, StepPlan& plan);
  // Moves the head of waiting_ (`r`, its blocks allocated) to running_ with
  // `hit` prefix-cached tokens, and plans `n` of its prompt tokens.
  void admit_head(Request* r, int64_t hit, int64_t n, StepPlan& plan);

  SchedulerConfig config_;
  KvCacheManager& kv_;
  std::deque<Request*> waiting_;
  std::vector<Request*> running_;
  std::deque<Request*> swapped_;
  std::vector<Request*> remote_;  // holding blocks, KV in transit
  std::function<void(Request*)> on_remote_admit_;
  int64_t swap_blocks_used_ = 0;
  int64_t preemptions_ = 0;
  int64_t rejections_ = 0;
};

}  // namespace gcsim::workloads::inference
