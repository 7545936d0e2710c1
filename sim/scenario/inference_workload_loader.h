// Maps `workload:` of kind inference onto workloads::inference::ServingConfig
// (model, serving deployment, vLLM scheduler, requests, SLOs) and checks it
// against the cluster the way vLLM checks at start-up: the model must fit
// in GPU memory at the chosen parallelism, one max_model_len request must
// fit in the KV cache, V0 without chunked prefill needs a token budget of at
// least max_model_len. Every mistake fails naming file, line and key.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "sim/scenario/scenario.h"
#include "sim/scenario/resource_budget.h"
#include "sim/config/config_reader.h"
#include "workloads/inference/kv_capacity.h"
#include "workloads/inference/serving_config.h"

namespace gcsim::cli {

struct InferenceSetup {
  workloads::inference::ServingConfig serving;
  workloads::inference::MemoryPlan memory;          // unified / decode replicas
  workloads::inference::MemoryPlan prefill_memory;  // prefill pool (disaggregation)
  std::string trace_path;                           // requests.trace, "" when none
  ResourceEstimate estimate;                        // from requests.count (resource_budget.h)
};

// More requests than `limits` serve are refused before any is generated.
std::shared_ptr<InferenceSetup> load_inference_workload(sim::config::ConfigReader& workload,
                                                        const ClusterConfig& cluster,
                                                        std::vector<std::string>& notes,
                                                        const ResourceLimits& limits);

}  // namespace gcsim::cli
