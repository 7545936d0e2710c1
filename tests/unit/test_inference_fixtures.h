// Models and helpers shared by the inference unit tests.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "preset_fixtures.h"
#include "workloads/inference/comm_timer.h"
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
