// How much KV cache a replica's GPUs hold, computed as vLLM does at start-up
// (../shared/REFERENCE.md, "Inference"): bytes per token from the attention
// layout (GQA shards its KV heads over TP; MLA caches one compressed latent
// per token, replicated on every TP rank), then
//   num_gpu_blocks = floor((HBM x gpu_memory_utilization - weights
//                           - peak activations - non-torch memory) / block bytes)
// with the weights and activations of the most loaded GPU of the replica.
#pragma once

#include <cstdint>

#include "models/gpu/dtype.h"
#include "sim/config/units.h"
#include "workloads/models/model_spec.h"

namespace gcsim::workloads::inference {

namespace gpu = ::gcsim::models::gpu;

// Parallelism inside one replica. EP spreads each MoE layer's experts over
// `ep` of the `tp` ranks (tp % ep == 0); attention and dense layers use TP.
struct ParallelShape {
  int tp = 1;
  int pp = 1;
  int ep = 1;
  int gpus() const { return tp * pp; }
};

// KV bytes of one token over the whole model, one copy (no parallelism):
// 2 x layers x kv_heads x head_dim x bytes, or for MLA
// layers x (kv_lora_rank + qk_rope_head_dim) x bytes.
// Llama-2-70B bf16: 2*80*8*128*2 = 327,680 B (320 KiB); DeepSeek-V3:
// 61*576*2 = 70,272 B.
int64_t kv_bytes_per_token(const models::ModelSpec& m, gpu::Dtype kv);
// KV heads one GPU stores: kv_heads / tp, at least 1 (vLLM replicates KV
// heads when tp > kv_heads); 1 latent for MLA (replicated).
int64_t kv_heads_per_gpu(const models::ModelSpec& m, int tp);
// Layers of the fullest pipeline stage: ceil(layers / pp).
int stage_layers(const models::ModelSpec& m, int pp);
// KV bytes of one token on one GPU: its stage's layers, its share of the heads.
// Llama-2-70B bf16 at TP8: 2*80*1*128*2 = 40,960 B (40 KiB).
int64_t kv_bytes_per_token_per_gpu(const models::ModelSpec& m, gpu::Dtype kv, ParallelShape p);

// Weight bytes on the most loaded GPU: its stage's layers with attention,
// MLP and experts split over TP (norms and the router replicated), the
// vocabulary-parallel embedding on the first stage and the output head and
// final norm on the last.
sim::Bytes weight_bytes_per_gpu(const models::ModelSpec& m, gpu::Dtype weights, ParallelShape p);

// Peak activation memory of vLLM's profiling forward pass over
// `max_num_batched_tokens` tokens T on one GPU: the largest live set of a
// layer, max over the MLP (residual + normed input + gate/up output +
// activation output: T x (2h + 3 f / tp) elements, routed experts with
// top_k copies of each token) and attention (T x (2h + (2q + 2kv) / tp)),
// plus the sampler's fp32 logits for `max_num_seqs` rows of the vocabulary.
sim::Bytes peak_activation_bytes(const models::ModelSpec& m, gpu::Dtype act, ParallelShape p,
                                 int64_t max_num_batched_tokens, int64_t max_num_seqs);

struct MemoryPlan {
  sim::Bytes capacity;      // HBM of one GPU
  sim::Bytes budget;        // capacity x gpu_memory_utilization
  sim::Bytes weights;       // per GPU
  sim::Bytes activations;   // per GPU, profiling peak
  sim::Bytes non_torch;     // outside PyTorch's allocator (NCCL buffers, CUDA graphs)
  sim::Bytes kv_cache;      // what is left for the KV cache (may be negative)
  int64_t bytes_per_token = 0;  // KV per token per GPU
  int64_t block_bytes = 0;      // block_size x bytes_per_token
  int64_t num_blocks = 0;       // floor(kv_cache / block_bytes), 0 when it does not fit
  bool weights_fit() const { return weights + activations + non_torch < budget; }
};

struct MemoryInputs {
  gpu::Dtype weights = gpu::Dtype::bf16;
  gpu::Dtype kv = gpu::Dtype::bf16;
  ParallelShape parallel;
  sim::Bytes capacity;
  double gpu_memory_utilization = 0.9;
  int64_t block_size = 16;
  int64_t max_num_batched_tokens = 8192;
  int64_t max_num_seqs = 256;
  sim::Bytes non_torch;
};

MemoryPlan plan_memory(const models::ModelSpec& m, const MemoryInputs& in);

}  // namespace gcsim::workloads::inference
