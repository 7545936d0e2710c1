// What a training step is: the model, the batch, how it is split over GPUs
// (TP with optional sequence parallelism, CP, EP carved out of DP, PP with
// its schedule, DP with a ZeRO stage), recompute, precision and optimizer.
// Plain data with defaults; sim/cli reads YAML onto it and check_strategy()
// says what is impossible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/gpu/attention_family.h"
#include "workloads/models/model_spec.h"
#include "workloads/training/framework_profile.h"

namespace gcsim::workloads::training {

enum class Schedule { gpipe, one_f_one_b, interleaved, zb1p, dualpipe };
// norms_up_proj: DeepSeek-V3's (§3.2.3, §3.3): every RMSNorm's output and
// MLA's up-projections (Q, K and V; a plain attention's QKV projection) are
// recomputed in the backward instead of kept, and under fp8 a MoE layer's
// SwiGLU keeps its inputs in FP8 and recomputes its output.
enum class Recompute { none, selective, full, norms_up_proj };
enum class Precision { fp16, bf16, fp8 };
// flash: FlashAttention kernels (stores only the output and log-sum-exp);
// unfused: Megatron-LM's 2022 core attention (batched GEMMs, softmax and
// dropout over the s x s scores, which are stored: Korthikanti's 5as/h).
enum class AttentionImpl { flash, unfused };
// How layers are spread over pipeline stages when pp does not divide them:
// even refuses; fewer_at_ends takes the missing layers from the first and
// last stages alternately (they also hold the embedding and the head, as
// Llama 3 405B's 126 layers on 16 stages).
enum class LayerSplit { even, fewer_at_ends };

const char* schedule_name(Schedule s);
const char* recompute_name(Recompute r);

struct ParallelConfig {
  int tp = 1;  // tensor parallel
  int cp = 1;  // context parallel (ring attention over sequence shards)
  int pp = 1;  // pipeline stages
  int dp = 1;  // data parallel (EP is carved out of it)
  int ep = 1;  // expert parallel, divides dp
  bool sequence_parallel = false;
  Schedule schedule = Schedule::one_f_one_b;
  int virtual_stages = 1;  // model chunks per pipeline rank (interleaved)
  LayerSplit layer_split = LayerSplit::even;
  // Rank placement, innermost first: tp varies fastest between consecutive
  // global ranks, so tp groups sit inside a node.
  std::vector<std::string> order{"tp", "cp", "ep", "dp", "pp"};
  // Gradient bytes per DP reduce bucket (parallelism.dp_bucket); nullopt:
  // the framework's default (grad_buckets.h: DDP 25 MiB after a 1 MiB first
  // bucket, Megatron max(40M, 1M x dp) parameters).
  std::optional<int64_t> dp_bucket_bytes;
  // Whether the DP gradient reduce overlaps the backward bucket by bucket
  // (PyTorch DDP, Megatron's overlap_grad_reduce) or runs as one reduce of
  // the whole gradient buffer after the pipeline flush (Megatron-LM's
  // "local" DDP of 2021, overlap_grad_reduce=False).
  bool overlap_grad_reduce = true;
};

struct BatchConfig {
  int64_t global = 1;  // sequences per step
  int64_t micro = 1;   // sequences per micro-batch
};

struct OptimizerConfig {
  int zero_stage = 0;         // 0 plain DP, 1 optimizer states, 2 + gradients, 3 + weights (FSDP)
  double weight_bytes = 2.0;  // working copy of a parameter (fp16/bf16)
  double grad_bytes = 2.0;    // gradient per parameter
  double state_bytes = 12.0;  // Adam: fp32 master weight + m + v
  double grad_clip = 1.0;     // global-norm clipping threshold; 0 = no norm pass
  // false: no optimizer update (the step ends once the gradients are reduced),
  // as benches that time forward + backward alone run it; no states are held.
  bool step = true;
};

struct TrainingConfig {
  models::ModelSpec model;
  ParallelConfig parallel;
  BatchConfig batch;
  Recompute recompute = Recompute::none;
  Precision precision = Precision::bf16;
  AttentionImpl attention_impl = AttentionImpl::flash;
  // The software stack whose kernels the step launches (framework_profile.h).
  Framework framework = Framework::megatron;
  // Host time per kernel and elementwise bandwidth fraction when the config
  // sets them; nullopt: the profile's fitted values (framework_traits()).
  std::optional<FrameworkTraits> framework_traits;
  // The fused kernel that runs flash attention (flash2, flash3, cudnn), or
  // unfused (then attention_impl is unfused too).
  models::gpu::AttentionFamily attention_family = models::gpu::AttentionFamily::flash2;
  OptimizerConfig optimizer;
  int64_t memory_reserved = 0;  // bytes per GPU outside the model: CUDA context, NCCL, workspaces
  uint64_t routing_seed = 1;    // the run's seed: permuted expert placement per MoE layer

  int gpus() const { return parallel.tp * parallel.cp * parallel.pp * parallel.dp; }
  // Micro-batches each pipeline runs per step (gradient accumulation).
  int64_t micro_batches() const { return batch.global / (batch.micro * parallel.dp); }
  int64_t tokens_per_step() const { return batch.global * model.seq_len; }
  // DeepSeek-V3 (§3.3) under Recompute::norms_up_proj: a SwiGLU keeps its
  // gate and up outputs in FP8 and recomputes its output before FC2's
  // backward (the memory model and the generator's recomputed op).
  bool recomputes_fp8_swiglu() const {
    return recompute == Recompute::norms_up_proj && precision == Precision::fp8 &&
           model.mlp == models::MlpKind::swiglu;
  }
};

// A constraint the strategy breaks: the config key (dotted below
// `workload`, e.g. "parallelism.tp") and what is wrong, naming the
// constraint. Empty key when the strategy is possible.
struct StrategyProblem {
  std::string key;
  std::string message;
  explicit operator bool() const { return !key.empty(); }
};
StrategyProblem check_strategy(const TrainingConfig& c, int cluster_gpus);

// `layers` over `stages` model stages: equal, or (when they do not divide)
// one more on every stage, then one less taken from the ends in turn.
std::vector<int> split_layers(int layers, int stages);

}  // namespace gcsim::workloads::training
