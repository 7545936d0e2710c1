// The serving worksheet: KV bytes per token, blocks, requests the cache
// holds at once, and roofline times of a replica step. Prefill is
// compute-bound: 2 N_active FLOPs per token (+ attention over the prompt)
// at the calibrated tensor rate of tp GPUs; decode is bandwidth-bound: each
// step reads the GPU's weights and its share of the batch's KV from HBM.
// TTFT ~ prompt prefill time (+ one decode step); TPOT ~ the decode step of
// a full running batch. TP all-reduces are added at their ideal time.
#pragma once

#include <vector>

#include "models/gpu/gpu_spec.h"
#include "workloads/estimate/comm_estimate.h"
#include "workloads/estimate/estimate_line.h"
#include "workloads/estimate/memory_estimate.h"
#include "workloads/inference/serving_config.h"

namespace gcsim::workloads::estimate {

struct InferenceEstimate {
  KvEstimate kv;
  Line prompt_tokens;       // mean prompt length of the load
  Line output_tokens;       // mean output length
  Line batch;               // decodes in a step: min(max_num_seqs, requests the KV holds, load)
  Line prefill_per_token;   // seconds per prompt token, compute-bound
  Line decode_step;         // seconds per decode step of `batch` requests, HBM-bound
  Line tp_comm_per_step;    // 2 all-reduces per layer of the step's activations
  Line ttft;
  Line tpot;
  std::vector<Line> lines() const;
};

InferenceEstimate estimate_inference(const inference::ServingConfig& s, const models::gpu::GpuSpec& gpu,
                                     const LinkRates& links);

}  // namespace gcsim::workloads::estimate
