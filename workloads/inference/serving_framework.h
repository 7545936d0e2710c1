// Which software runs a serving step (`workload.framework` of an inference
// workload, issue 16) and the kernels it launches besides the GEMMs,
// attention and collectives:
//
//   vllm           vLLM's model runner: one fused kernel per norm (with the
//                  residual add), rotary, KV-cache write and SiLU-and-mul
//                  (iteration_cost.cpp's lists); its decode steps replay
//                  CUDA graphs, so the host never holds the GPU back.
//   pytorch-eager  the same model in plain PyTorch in bf16 (Hugging Face
//                  Llama's eager code, as calibration/microbench/
//                  serving_step_bench.py runs it): every elementwise op its
//                  own kernel (RMSNorm as an fp32 cast, pow, mean, add eps,
//                  rsqrt, two multiplies and a cast back; rotary by
//                  rotate-half; SiLU and the gate product; residual adds;
//                  two KV-cache copies; the vocabulary-parallel embedding's
//                  masks; the sampler's permute, fp32 cast and argmax; the
//                  memset cuDNN's prefill attention issues before its
//                  kernel) and a host that issues each kernel at a measured
//                  cost, unless the step replays a CUDA graph
//                  (`serving.cuda_graphs`, default false for this
//                  framework; its kernels then pay the GPU's
//                  graph_kernel_launch_latency).
//
// The passes reuse the training profiles' machinery (workloads/training/
// framework_profile.h: each pass vectorized or generic, costed at the
// pytorch-eager profile's fitted bandwidth fraction and SM work per element);
// the bytes per element are bf16 inference's, not autocast training's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/gpu/gpu_spec.h"
#include "models/gpu/kernel.h"
#include "workloads/training/framework_profile.h"

namespace gcsim::workloads::inference {

enum class ServingFramework { vllm, pytorch_eager };
const char* serving_framework_name(ServingFramework f);
std::optional<ServingFramework> parse_serving_framework(const std::string& s);

// The pytorch-eager serving profile's fitted quantities (calibration/fit/
// serving_fit.py on calibration/measurements/h100-x4/serving_step_2026-11-26;
// calibration/fit/serving_fit_2026-11-26.md): host_us_per_kernel, the host
// time to issue one kernel of an inference step (no autograd: torch's
// dispatcher and the CUDA launch, NCCL's enqueue for the collectives);
// elementwise_bandwidth, the fraction of the achieved HBM bandwidth its
// vectorized passes reach; generic_ops_per_element, the training eager
// profile's (the same PyTorch kernels). workload.host_overhead,
// workload.elementwise_bandwidth and workload.generic_ops_per_element
// override them.
training::FrameworkTraits eager_serving_traits();

// The pytorch-eager lists of one bf16 serving step, as FrameworkPasses of
// the training profile (costed by its `shape`).
class EagerServingPasses {
 public:
  using Passes = std::vector<training::FrameworkPass>;

  // Hugging Face LlamaRMSNorm over rows x cols bf16 activations: 8 kernels
  // (`sm_count`: the GPU's SMs, for the mean's CTAs, eager_row_reduce_grid).
  static Passes rms_norm(int64_t rows, int64_t cols, int sm_count);
  // Rotate-half rotary on q and k (elements of each): 5 kernels each.
  static Passes rope(int64_t q_elements, int64_t k_elements);
  // cos and sin gathered at the step's positions (tokens x head_dim), once
  // per step.
  static Passes rope_tables(int64_t tokens, int64_t head_dim);
  // K and V of the step's tokens copied into the cache (elements of each).
  static Passes kv_write(int64_t kv_elements);
  // The residual add of a block's output (bf16).
  static Passes residual_add(int64_t elements);
  // SiLU(gate) * up over rows x cols of the FFN shard: 2 kernels.
  static Passes swiglu(int64_t rows, int64_t cols);
  // Vocabulary-parallel embedding lookup of `tokens` ids (tp > 1: the range
  // masks around the gather; its all-reduce is communication).
  static Passes embedding(int64_t tokens, int64_t hidden, int tp);
  // After the head GEMM and the logits' all-gather: the gathered shards
  // permuted into rows (tp > 1) and the fp32 cast; then the softmax (a
  // MemoryOpKind::softmax kernel of its own) and the argmax.
  static Passes sampler(int64_t rows, int64_t vocab, int tp);
  // `sm_count`: the GPU's SMs (the reduction's CTAs, eager_row_reduce_grid).
  static Passes argmax(int64_t rows, int64_t vocab, int sm_count);
};

}  // namespace gcsim::workloads::inference
