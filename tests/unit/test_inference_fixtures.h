// Models and helpers shared by the inference unit tests.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "preset_fixtures.h"
#include "workloads/inference/comm_timer.h"
#include "workloads/inference/iteration_cost.h"
#include "workloads/inference/request.h"
#include "workloads/models/model_spec.h"

namespace gcsim::test {

// No communication: tp = 1 steps have none.
class NoComm : public workloads::inference::CommTimer {
 public:
  sim::Duration collective(workloads::CollectiveKind, sim::Bytes, const std::vector<int>&) override {
    return sim::Duration::zero();
  }
  sim::Duration p2p(int, int, sim::Bytes) override { return sim::Duration::zero(); }
};

inline models::gpu::GpuSpec h100() { return gpu_preset("h100-sxm"); }

// Llama-2-70B (Touvron et al. 2023, Table 1 and the released config.json):
// Llama 3 70B's shape with a 32,000-token vocabulary and 4,096 context.
inline workloads::models::ModelSpec llama2_70b() {
  workloads::models::ModelSpec m = model_preset("llama3-70b");
  m.name = "llama2-70b";
  m.vocab = 32000;
  m.seq_len = 4096;
  return m;
}

// Llama 3 8B on one H100, no parallelism: the iteration-cost tests' step.
inline workloads::inference::IterationCostConfig llama8b_on_h100() {
  workloads::inference::IterationCostConfig c;
  c.model = model_preset("llama3-8b");
  c.gpu = h100();
  c.parallel = {1, 1, 1};
  c.ranks = {0};
  return c;
}

// A decode step of `batch` sequences, each `context` tokens in.
inline workloads::inference::StepShape decode_batch(int64_t batch, int64_t context) {
  workloads::inference::StepShape s;
  s.tokens = batch;
  s.decodes = batch;
  s.decode_kv_tokens = batch * (context + 1);
  s.sampled = batch;
  return s;
}

// A request arriving at t = 0 (ids are set by the caller).
inline workloads::inference::Request request(int64_t id, int64_t prompt, int64_t output,
                                             int64_t prefix_id = -1, int64_t prefix_len = 0) {
  workloads::inference::Request r;
  r.id = id;
  r.prompt_len = prompt;
  r.output_len = output;
  r.prefix_id = prefix_id;
  r.prefix_len = prefix_len;
  return r;
}

}  // namespace gcsim::test
