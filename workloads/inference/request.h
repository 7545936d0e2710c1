// One request as a vLLM engine sees it: a prompt, a number of tokens to
// generate, and its progress through the scheduler (tokens whose KV is in the
// cache, tokens generated, the blocks it holds) plus the times the metrics
// need (arrival, first and last token, finish).
#pragma once

#include <cstdint>
#include <vector>

#include "sim/engine/time.h"

namespace gcsim::workloads::inference {

enum class RequestState : uint8_t {
  pending,    // not yet arrived at a replica
  waiting,    // queued (new, or preempted for recompute)
  running,    // holds KV blocks and is scheduled step after step
  swapped,    // preempted with its blocks moved to CPU memory (vLLM V0 swap)
  remote_kv,  // disaggregated decode: blocks held, KV still arriving from a prefill replica
  finished,
  rejected,   // longer than max_model_len: refused at arrival, never retried
};

struct Request {
  int64_t id = 0;
  sim::Time arrival;
  int64_t prompt_len = 0;
  int64_t output_len = 0;  // tokens to generate (capped so that prompt + output <= max_model_len)
  int64_t prefix_id = -1;  // requests with the same id share their first prefix_len tokens
  int64_t prefix_len = 0;

  // --- progress (scheduler) ---
  RequestState state = RequestState::pending;
  // Tokens whose KV exists or is being computed by a step in flight: vLLM V1
  // advances it when it schedules, so a request in flight is not scheduled
  // again until its step ends.
  int64_t num_computed = 0;
  int64_t num_output = 0;   // tokens generated so far
  int64_t spec_tokens = 0;  // draft tokens scheduled with the step in flight (verified at its end)
  bool in_flight = false;   // part of a step that has not ended
  // Disaggregation: this copy only prefills (generates one token, then hands
  // its KV to a decode replica).
  bool prefill_only = false;
  // Disaggregation: this copy decodes; its prompt KV comes from a prefill
  // replica (ready once the transfer has ended).
  bool remote_prompt = false;
  bool prompt_kv_ready = false;
  int64_t swapped_blocks = 0;  // blocks held in CPU memory while swapped

  // --- KV blocks (KvCacheManager) ---
  std::vector<int32_t> blocks;   // physical block ids, in token order
  std::vector<uint64_t> hashes;  // chained hashes of the full blocks known so far
  int64_t registered_blocks = 0; // leading blocks entered into the prefix cache

  // --- metrics ---
  sim::Time first_token = sim::Time::max();  // when the first output token was emitted
  sim::Time last_token;
  sim::Time finish;
  int preemptions = 0;
  int replica = -1;          // the replica that emits its tokens
  int64_t cached_tokens = 0; // prompt tokens served from the prefix cache (first admission)

  int64_t num_tokens() const { return prompt_len + num_output; }
  bool done() const { return num_output >= output_len; }
  bool has_first_token() const { return first_token != sim::Time::max(); }
};

}  // namespace gcsim::workloads::inference
