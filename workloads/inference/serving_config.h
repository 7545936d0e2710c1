// A serving deployment and its load, typed (sim/cli/inference_workload_loader
// fills it from `workload:` of kind inference): the model, replicas and
// their parallelism, the vLLM scheduler's parameters, the router, the
// requests, optional disaggregation and speculative decoding, and SLOs.
#pragma once

#include <cstdint>
#include <optional>

#include "models/gpu/attention_family.h"
#include "models/gpu/dtype.h"
#include "sim/engine/time.h"
#include "sim/config/units.h"
#include "workloads/inference/kv_capacity.h"
#include "workloads/inference/request_generator.h"
#include "workloads/inference/scheduler.h"
#include "workloads/inference/serving_framework.h"
#include "workloads/models/model_spec.h"

namespace gcsim::workloads::inference {

enum class RouterKind { round_robin, least_outstanding, prefix_affinity };
enum class SpecMethod { none, draft_model, mtp, ngram };

const char* router_name(RouterKind k);
const char* spec_method_name(SpecMethod m);

struct SpeculativeConfig {
  SpecMethod method = SpecMethod::none;
  int64_t num_tokens = 0;        // draft tokens proposed per decode step (k)
  double acceptance_rate = 0.7;  // each draft token accepted with this probability, until one is not
  models::ModelSpec draft;       // draft_model: the small model run k times per step
  bool enabled() const { return method != SpecMethod::none && num_tokens > 0; }
};

struct DisaggregationConfig {
  bool enabled = false;
  int prefill_replicas = 1;
  int decode_replicas = 1;
  int prefill_tp = 1;       // decode replicas use serving.tp
  bool layerwise = false;   // send each layer's KV as soon as the prefill has computed it
  int layers_per_transfer = 1;  // layerwise: layers grouped into one transfer
};

struct SloConfig {
  std::optional<sim::Duration> ttft;
  std::optional<sim::Duration> tpot;
  std::optional<sim::Duration> e2e;
  bool any() const { return ttft || tpot || e2e; }
};

struct RateSearch {
  bool enabled = false;    // requests.arrival.rate: search
  double target = 0.9;     // SLO attainment the highest rate must keep
  double low = 0.0;        // requests/s bracket (0: derived from the first runs)
  double high = 0.0;
  int iterations = 8;
};

struct ServingConfig {
  models::ModelSpec model;
  gpu::Dtype dtype = gpu::Dtype::bf16;     // weights and activations
  gpu::Dtype kv_dtype = gpu::Dtype::bf16;  // KV cache
  // workload.attention_kernel: a family, or nullopt for the GPU's default.
  std::optional<gpu::AttentionFamily> attention_kernel;
  ParallelShape parallel;                  // each (decode) replica
  int replicas = 1;                        // unified replicas (no disaggregation)
  SchedulerConfig scheduler;
  double gpu_memory_utilization = 0.9;
  sim::Bytes non_torch_memory;
  sim::Bytes swap_space;                   // per GPU, V0 swap preemption
  bool cuda_graphs = true;
  int64_t max_capture_size = 512;
  sim::Duration step_overhead;             // host time per step
  // workload.framework: the kernels a step launches besides GEMMs,
  // attention and collectives, and the host's cost per launch outside a
  // CUDA graph (workload.host_overhead).
  ServingFramework framework = ServingFramework::vllm;
  sim::Duration host_per_kernel;
  training::FrameworkTraits eager_traits = eager_serving_traits();  // pytorch-eager's passes
  RouterKind router = RouterKind::round_robin;
  RequestsConfig requests;
  RateSearch rate_search;
  DisaggregationConfig disaggregation;
  SpeculativeConfig speculative;
  SloConfig slo;

  int gpus_per_replica() const { return parallel.gpus(); }
  // GPUs the deployment takes (prefill pool first with disaggregation).
  int total_gpus() const {
    if (!disaggregation.enabled) return replicas * parallel.gpus();
    return disaggregation.prefill_replicas * disaggregation.prefill_tp +
           disaggregation.decode_replicas * parallel.gpus();
  }
};

}  // namespace gcsim::workloads::inference
