// One serving step as kernels and collectives on a replica's GPUs, and how
// long it takes. Per layer on one TP rank (Megatron-style shards, as vLLM
// runs them): input RMSNorm, QKV GEMM (M = the step's tokens), rotary,
// KV-cache write, attention (FlashAttention per prefill chunk, causal over
// its context; one flash-decoding kernel over the decodes' KV), output
// projection, TP all-reduce, post-attention norm, MLP GEMMs and activation
// (or router and grouped expert GEMMs, experts over `ep` ranks), TP
// all-reduce. Around the layers: the vocabulary-parallel embedding (and its
// all-reduce) on the first stage, the final norm, logits GEMM for the rows
// that sample, their all-gather and the sampler's softmax on the last; a
// send of the hidden states between pipeline stages.
//
// `framework` (serving_framework.h) chooses the kernels besides GEMMs,
// attention and collectives: vLLM's fused ones, or plain PyTorch's unfused
// elementwise lists. A pytorch-eager step that does not replay a CUDA graph
// is issued kernel by kernel by a host that spends `host_per_kernel` on
// each: a kernel starts no earlier than its issue, so a launch-bound step
// takes about its kernels x that cost (each stage's own host).
//
// Kernel times are the GPU model's isolated times (models/gpu: one stream,
// one kernel at a time, exactly what the Gpu runtime reproduces); collective
// and send times come from a CommTimer (the fabric). With CUDA graphs the
// token count is padded to vLLM's capture sizes (1, 2, 4, then multiples of
// 8 up to max_capture_size): V1 pads every step that small (piecewise
// graphs), V0 only pure-decode steps up to 256. Costs are cached per
// distinct shape, so long runs cost little.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "models/gpu/gpu_spec.h"
#include "models/gpu/kernel.h"
#include "models/gpu/kernel_cost_model.h"
#include "workloads/inference/comm_timer.h"
#include "workloads/inference/kv_capacity.h"
#include "workloads/inference/serving_framework.h"
#include "workloads/models/model_spec.h"
#include "workloads/training/kernel_classes.h"

namespace gcsim::workloads::inference {

// What a step computes, as the cost model needs it.
struct StepShape {
  int64_t tokens = 0;  // all tokens of the step (the GEMMs' M)
  // (query tokens, KV length after this chunk) of each non-decode item.
  std::vector<std::pair<int64_t, int64_t>> prefills;
  int64_t decodes = 0;           // decode items
  int64_t decode_kv_tokens = 0;  // KV tokens the decodes read, summed (after this step's tokens)
  int64_t decode_q = 1;          // query tokens per decode (1 + drafts)
  int64_t sampled = 0;           // logit rows: items that emit (decodes: 1 + drafts each)
  bool pure_decode() const { return prefills.empty() && decodes > 0; }
};

struct IterationCostConfig {
  models::ModelSpec model;
  gpu::GpuSpec gpu;
  ParallelShape parallel;
  gpu::Dtype dtype = gpu::Dtype::bf16;     // weights and activations
  gpu::Dtype kv_dtype = gpu::Dtype::bf16;  // KV cache
  // Attention kernel family (nullopt: the GPU's default for prefill / decode).
  std::optional<gpu::AttentionFamily> attention_kernel;
  std::vector<int> ranks;  // the replica's GPUs: stage s is ranks[s*tp, (s+1)*tp)
  bool cuda_graphs = true;
  int64_t max_capture_size = 512;
  bool pad_mixed_steps = true;  // V1: mixed steps are padded too (piecewise graphs)
  // Host time per step the GPU waits for (scheduling, input preparation).
  sim::Duration step_overhead;
  ServingFramework framework = ServingFramework::vllm;
  // Host time to issue one kernel or collective of a step that does not
  // replay a CUDA graph (zero: the host never holds the GPU back).
  sim::Duration host_per_kernel;
  // pytorch-eager: what its passes cost (bandwidth fraction, SM work per
  // element of the generic ones); its host_us_per_kernel is not used (above).
  training::FrameworkTraits eager_traits = eager_serving_traits();
};

// Per-layer breakdown of a step, for reports and tests.
struct StepCost {
  sim::Duration total;                // first stage's start to last stage's end, alone
  std::vector<sim::Duration> stages;  // each stage's time (its last adds the head)
  sim::Duration compute;              // kernels, all stages
  sim::Duration communication;        // TP collectives and stage sends, all stages
  sim::Duration host_wait;            // GPU idle waiting for the host's issue, all stages
  bool graph = false;                 // replays a CUDA graph (padded to a capture size)
  // Kernel durations by class summed over all stages, as torch.profiler's
  // table (communication: collectives and sends); `kernels`: launches.
  training::KernelClassTimes classes;
  // The SM clock the step ran at, over f_max (1: the spec's rested clock).
  double clock = 1.0;
  // What one GPU of the replica did over the step, in activity-seconds
  // (time fractions of the whole GPU integrated over time: power_model.h),
  // summed over the stages and divided by pp (each stage's GPUs are busy
  // only for their stage): tensor-core and CUDA-core SM-time, and HBM bytes
  // over the HBM peak. Divided by `total` it is the step's mean activity.
  // Collectives and sends count the HBM bytes their algorithm moves on each
  // GPU (collective_launch); their SMs' copy loops are not counted.
  gpu::Activity activity_s;
  // Of which HBM bytes the collectives and sends moved (one GPU, summed over
  // the stages and divided by pp, as activity_s), the algorithm's count.
  double collective_hbm_bytes = 0.0;
};

class IterationCost {
 public:
  IterationCost(IterationCostConfig config, CommTimer& comm);

  StepCost cost(const StepShape& shape);
  // The step with every kernel at SM clock fraction `clock` (of f_max) as
  // the Gpu runtime runs a kernel at a governor's clock (models/gpu/gpu.cpp
  // set_clock): each wave's arithmetic stretched by 1 / compute_speed, its
  // HBM time, launch latency and setup unchanged, so memory-bound passes
  // keep their time. 1 gives cost(shape) exactly. Under an instantaneous
  // limiter each kernel runs at most where its own power meets `budget_w`
  // (power_model.h instant_budget_w; 0: instant_cap_w, a rested GPU's).
  StepCost cost(const StepShape& shape, double clock, double budget_w = 0.0);
  // The padded token count the GEMMs see.
  int64_t padded_tokens(const StepShape& shape) const;
  // Whether the step replays a CUDA graph: graphs on and the step padded to
  // a capture size (V1: any step that small; V0: pure decodes).
  bool replays_graph(const StepShape& shape) const;

  // One launch of a stage's program: a kernel, or where the layer's
  // attention kernels or a TP all-reduce go.
  enum class Slot { kernel, attention, all_reduce };
  struct LayerKernel {
    gpu::KernelDesc desc;
    training::KernelClass cls = training::KernelClass::elementwise;
    Slot slot = Slot::kernel;
  };
  // One layer's program for `tokens` tokens (dense or MoE), in issue order,
  // with the attention and all-reduce slots in place.
  std::vector<LayerKernel> layer_program(int64_t tokens, bool moe) const;
  const IterationCostConfig& config() const { return config_; }

 private:
  struct Launch {
    training::KernelClass cls = training::KernelClass::elementwise;
    sim::Duration time;
    Slot slot = Slot::kernel;
    // false: issued inside the op before it (a library's own memset), so
    // the host spends no launch cost of its own on it.
    bool own_issue = true;
    // Kernels in `time` whose model is fitted to profiler durations (cuDNN's
    // prefill attention: its time is that plus the GPU's launch latency,
    // which a profiler's table does not count); 0 for the rest, fitted to
    // the spacing of back-to-back launches, whose class leaves out only the
    // gap before the next kernel (gpu_spec.h launch_gap).
    int profiled_kernels = 0;
    // A collective or send that runs as an NCCL kernel: in a replayed CUDA
    // graph its node costs graph_collective_overhead beyond `time`
    // (gpu_spec.h). vLLM's all-reduces inside its graphs are its own custom
    // all-reduce kernel (a plain kernel node), so they are not.
    bool nccl = true;
    // How `time` moves with the SM clock: the waves of its kernels (an MLA
    // prefill's attention launch is two kernels), each group `count` waves
    // of one length (isolated_time's full waves and its last partial one).
    // None for collectives and sends: the clock leaves them alone.
    struct Waves {
      int64_t count = 0;
      gpu::TileCost tile;      // tile_cost's bounds
      sim::Duration overhead;  // tile + wave overhead
      double sm_share = 0.0;   // the wave's SMs over the GPU's
      gpu::ExecUnit unit = gpu::ExecUnit::vector;
      // A memory kernel's SM side (memory_clock.h): below clock fraction
      // issue_q a wave takes at least issue_q x issue_hbm / clock + overhead.
      double issue_q = 0.0;
      sim::Duration issue_hbm;
      // The kernel's rest clock (rest_clock.h): its time stands for it, and
      // it never runs faster.
      double rest = 1.0;
      // Its kernel's activity alone at f_max (rest_clock.h rest_activity).
      gpu::Activity rest_activity;
      // The activity one second of its arithmetic charges (rest_clock.h
      // arithmetic_activity: a fused attention's tensor/CUDA-core split).
      gpu::Activity activity_per_busy;
      // min(step clock, where its power meets the limiter's cap `budget_w`).
      double clock_at(const gpu::PowerParams& p, double step_clock, double budget_w) const;
      // Its arithmetic's stretch at that clock: 1 / relative_speed.
      double stretch_at(const gpu::PowerParams& p, double step_clock, double budget_w) const;
    };
    std::array<Waves, 4> waves{};
    int wave_groups = 0;
    double hbm_bytes = 0.0;                       // the kernels' HBM traffic
    // The launch's length at the step's SM clock fraction `clock`: each
    // wave at min(clock, its rest clock), its arithmetic stretched by
    // Waves::stretch_at (1: `time`).
    sim::Duration at(const gpu::PowerParams& p, double clock, double budget_w) const;
    // Adds kernel `k`'s waves (as isolated_time() runs it on `spec`).
    void add_kernel(const gpu::GpuSpec& spec, const gpu::KernelDesc& k);
  };
  using Program = std::vector<Launch>;
  class Timeline;

  // Kernel durations as isolated_time() gives them; `graph`: the kernel is
  // a node of a replayed CUDA graph (the GPU's graph launch latency,
  // gpu_spec.h, instead of the stream's).
  sim::Duration kernel_time(const gpu::KernelDesc& k, bool graph) const;
  // A launch of kernel `k`: its time and how that moves with the clock.
  Launch kernel_launch(training::KernelClass cls, const gpu::KernelDesc& k, bool graph) const;
  std::vector<LayerKernel> eager_layer_program(int64_t tokens) const;
  // An eager pass over the step's activations (MemoryOpShape::inputs_in_l2).
  gpu::MemoryOpShape activation_pass(const training::FrameworkPass& p) const;
  // `fresh_inputs`: the passes read activations (activation_pass); false for
  // the embedding's gather from its table.
  void add_passes(Program& out, const EagerServingPasses::Passes& passes, training::KernelClass cls,
                  bool graph, bool fresh_inputs = true) const;
  const Program& layer_launches(int64_t tokens, bool moe, bool graph);
  // The step's attention launches: per prefill chunk (pytorch-eager on
  // cuDNN: its memset, then the kernel), then one for all the decodes.
  std::vector<Launch> attention_launches(const StepShape& shape, bool graph);
  // A collective of `bytes` (as nccl-tests counts them) over `group`: its
  // time on the fabric and the HBM bytes each GPU moves for it
  // (models/cluster/collective_hbm.h, staging counted in HBM as the
  // training runtime's default), which draw board power under the clock
  // model as they do in training.
  Launch collective_launch(CollectiveKind kind, int64_t bytes, const std::vector<int>& group);
  Launch tp_all_reduce(int stage, int64_t tokens);
  const Program& head_launches(int64_t tokens, int64_t sampled, bool graph);
  const Program& embedding_launches(int64_t tokens, bool graph);
  const Program& rope_table_launches(int64_t tokens, bool graph);

  // Launch programs and kernel times per shape, one set for steps on a
  // stream and one for graph replays.
  struct Caches {
    std::unordered_map<int64_t, Program> token_dense, token_moe;
    std::map<std::pair<int64_t, int64_t>, std::vector<Launch>> prefill_attention;
    std::map<std::tuple<int64_t, int64_t, int64_t>, Launch> decode_attention;
    std::unordered_map<int64_t, Program> head, embedding, rope_tables;
  };

  IterationCostConfig config_;
  gpu::GpuSpec graph_gpu_;  // config_.gpu as graph nodes see it (graph_replay_spec)
  CommTimer& comm_;
  training::FrameworkProfile eager_profile_;
  std::vector<int> layers_of_stage_dense_, layers_of_stage_moe_;
  std::array<Caches, 2> caches_;  // [graph]
};

}  // namespace gcsim::workloads::inference
