// The serving worksheet: KV bytes per token, blocks, requests the cache
// holds at once, and roofline times of a replica step. Prefill is
// compute-bound: 2 N_active FLOPs per token (+ attention over the prompt)
// at the calibrated tensor rate of tp GPUs; decode is bandwidth-bound: each
// step reads the GPU's weights and its share of the batch's KV from HBM.
// TTFT ~ prompt prefill time (+ one decode step); TPOT ~ the decode step of
// a full running batch. TP all-reduces are added at their ideal time.
#pragma once

#include <optional>
#include <vector>

#include "models/gpu/gpu_spec.h"
#include "workloads/estimate/comm_estimate.h"
#include "workloads/estimate/estimate_line.h"
#include "workloads/estimate/kernel_estimate.h"
#include "workloads/estimate/memory_estimate.h"
#include "workloads/inference/serving_config.h"

namespace gcsim::workloads::estimate {

struct InferenceEstimate {
  KvEstimate kv;
  Line prompt_tokens;       // mean prompt length of the load
  Line output_tokens;       // mean output length
  Line arrival_rate;        // requests per second (a trace: its requests over its span; 0 for a burst)
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

// The kernels of one layer of a serving step on one TP rank, as the GPU
// model describes them, summed by class (all layers: x model.layers / pp):
// `tokens` query tokens in the GEMMs (decode: the batch, padded to a CUDA
// graph size 1, 2, 4 or a multiple of 8 when `pad`), attention of `batch`
// sequences of `q_len` queries over `context` keys. Shows where a simulated
// step departs from the weight-read roofline (small-M GEMMs, split-KV
// decode attention, launch latency per kernel).
KernelMix serving_step_kernels(const models::ModelSpec& m, const models::gpu::GpuSpec& gpu,
                               const inference::ParallelShape& p, models::gpu::Dtype dtype, double tokens,
                               double batch, double q_len, double context, bool pad,
                               std::optional<models::gpu::AttentionFamily> attention_kernel = std::nullopt);

}  // namespace gcsim::workloads::estimate
