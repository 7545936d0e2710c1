// Worksheet section 2, memory per GPU: model states per ZeRO stage
// (Rajbhandari et al. 2020, via workloads/training/memory_model.h),
// activations per recompute policy (Korthikanti et al. 2022 form and the
// tensor-by-tensor count the simulator allocates), and the serving KV cache
// (vLLM's block arithmetic, via workloads/inference/kv_capacity.h); totals
// against HBM. All bytes are per GPU unless a label says otherwise.
#pragma once

#include <vector>

#include "workloads/estimate/estimate_line.h"
#include "workloads/inference/kv_capacity.h"
#include "workloads/training/training_config.h"

namespace gcsim::workloads::estimate {

// One row of ZeRO's table for `params` parameters over `data_ranks` GPUs.
struct ZeroRow {
  int stage = 0;
  Line weights, gradients, optimizer, total;
};
// 7.5B on 64 GPUs, 2 + 2 + 12 bytes per parameter (REFERENCE.md): totals
// 120, 31.4, 16.6, 1.9 GB for stages 0..3.
ZeroRow zero_row(double params, int data_ranks, int stage, const training::OptimizerConfig& bytes);

struct TrainingMemoryEstimate {
  int pipeline_rank = 0;  // the fullest stage, the one shown
  double params_on_gpu = 0;
  Line weights, gradients, optimizer;
  Line activation_layer;  // Korthikanti's per-layer form, when it applies (value 0 otherwise)
  Line activations;       // peak over the schedule: per micro-batch x in flight
  Line buffers;           // communication buffers
  Line reserved;
  Line total;
  Line capacity;          // HBM of one GPU
  bool fits = true;
  std::vector<Line> lines() const;
};
TrainingMemoryEstimate estimate_training_memory(const training::TrainingConfig& c, double hbm_bytes);

// Serving memory and KV cache of one replica's GPU (vLLM start-up arithmetic).
struct KvEstimate {
  Line bytes_per_token;          // whole model, one copy: 2 l kv_heads d bytes (MLA: latent)
  Line bytes_per_token_per_gpu;  // this GPU's layers and KV heads
  Line weights;                  // per GPU
  Line activations;              // vLLM's profiling peak
  Line kv_budget;                // HBM x utilization - weights - activations - non-torch
  Line block_bytes;              // block_size x bytes per token per GPU
  Line blocks;                   // floor(kv_budget / block_bytes)
  Line tokens;                   // blocks x block_size
  Line max_concurrent;           // requests of prompt + output tokens the cache holds at once
  std::vector<Line> lines() const;
};
// `tokens_per_request`: prompt + output of a typical request (mean).
KvEstimate estimate_kv(const models::ModelSpec& m, const inference::MemoryInputs& in,
                       double tokens_per_request, int64_t max_num_seqs);

}  // namespace gcsim::workloads::estimate
