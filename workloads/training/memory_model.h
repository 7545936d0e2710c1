// HBM per GPU in a training step: weights, gradients and optimizer states
// (ZeRO-aware, Rajbhandari et al. 2020), activations (recompute-aware, with
// Korthikanti et al. 2022's per-layer formulas as the check), times the
// micro-batches the pipeline schedule keeps in flight, plus communication
// buffers and a fixed reserve. Pure functions of the config; the generator
// allocates the same amounts in the simulated HBM ledger.
#pragma once

#include <cstdint>
#include <vector>

#include "workloads/training/pipeline_schedule.h"
#include "workloads/training/training_config.h"

namespace gcsim::workloads::training {

// Mixed-precision Adam model states per GPU for `params` parameters sharded
// over `data_ranks` ranks at ZeRO `stage`: weights w, gradients g and
// optimizer states o bytes per parameter; stage 1 shards o, 2 also g, 3 also
// w. With w = g = 2 and o = 12 (ZeRO's K = 12): 16 Psi; 4 Psi + 12 Psi/Nd;
// 2 Psi + 14 Psi/Nd; 16 Psi/Nd.
struct ModelStateBytes {
  double weights = 0, gradients = 0, optimizer = 0;
  double total() const { return weights + gradients + optimizer; }
};
ModelStateBytes zero_model_states(double params, int data_ranks, int stage,
                                  const OptimizerConfig& bytes);

// Korthikanti et al. 2022, activation bytes of one GPT layer (16-bit
// activations, dropout, unfused attention), s sequence, b micro-batch, h
// hidden, a heads, t TP: none sbh(34 + 5as/h); TP sbh(10 + 24/t + 5as/(ht));
// TP+SP sbh/t (34 + 5as/h); selective removes the 5as/h term; full
// recompute keeps only the layer input, 2sbh (2sbh/t with SP).
double korthikanti_layer_bytes(double s, double b, double h, double a, double t, bool sp,
                               Recompute recompute);

// Activation bytes one GPU keeps for one micro-batch through `layer`,
// counted tensor by tensor (any model: GQA, SwiGLU, MoE, MLA, flash or
// unfused attention, CP). `expert_load` scales the routed tokens this GPU's
// experts receive (1 = balanced).
double layer_activation_bytes(const TrainingConfig& c, int layer, double expert_load = 1.0);

// Parameters one GPU holds, split by how ZeRO shards them: dense ones over
// the data-parallel group, expert ones over the expert data-parallel group
// (dp / ep).
struct RankParams {
  double dense = 0;
  double expert = 0;
  double total() const { return dense + expert; }
};
// Which layers model stage k holds: [first, first + count).
struct StageLayers {
  int first = 0;
  int count = 0;
};
std::vector<StageLayers> model_stage_layers(const TrainingConfig& c, const PipelinePlan& plan);
RankParams rank_params(const TrainingConfig& c, const PipelinePlan& plan, int pipeline_rank);

struct MemoryBreakdown {
  double weights = 0;
  double gradients = 0;
  double optimizer_states = 0;
  double activations = 0;            // peak over the schedule, all stages this rank holds
  double communication_buffers = 0;  // ZeRO-3 gathered layers, DP buckets, p2p receive buffers
  double reserved = 0;               // CUDA context, NCCL, cuBLAS workspaces (config)
  double activations_per_micro_batch = 0;  // one micro-batch through the rank's stages
  double in_flight = 0;              // activations / per-micro-batch: micro-batches held at peak
  RankParams params;
  double total() const {
    return weights + gradients + optimizer_states + activations + communication_buffers + reserved;
  }
};

// Activation bytes of one micro-batch in each model stage (embedding and
// head extras on the first and last), as peak_activations() takes them.
std::vector<double> stage_activation_bytes(const TrainingConfig& c, const PipelinePlan& plan,
                                           double expert_load = 1.0);

// Bytes the loss's working tensors add, at their own peak, to the fp32
// logits stage_activation_bytes() keeps (4 B a logit), on the GPU holding
// the last model stage, once (one loss runs at a time). Plain PyTorch only
// (measured, calibration/measurements/h100-x4/strategy_step_gqa_2026-11-27):
// without TP, eager F.cross_entropy's log_softmax backward holds its saved
// output, the incoming gradient and the gradient it makes, 12 B a logit
// (+8); with TP, Megatron's vocabulary-parallel cross entropy (eager in both
// builds) holds the fp32 logits and their shifted copy in the forward, 8 B
// (+4); a compiled loss (torch-compile without TP) keeps no more. Megatron
// (Transformer Engine's fused cross entropy) is not measured: 0.
double loss_workspace_bytes(const TrainingConfig& c);
// Whether the loss's working tensors peak in its forward (TP's vocabulary-
// parallel cross entropy) rather than its backward.
bool loss_workspace_in_forward(const TrainingConfig& c);

MemoryBreakdown memory_for_rank(const TrainingConfig& c, const PipelinePlan& plan,
                                int pipeline_rank, double expert_load = 1.0);

// memory_for_rank of every pipeline rank, and which of them needs the most.
struct RankMemory {
  std::vector<MemoryBreakdown> per_rank;  // indexed by pipeline rank
  int fullest = 0;                        // the rank with the largest total()
  double fullest_bytes() const { return per_rank[static_cast<size_t>(fullest)].total(); }
};
RankMemory memory_per_rank(const TrainingConfig& c, const PipelinePlan& plan,
                           double expert_load = 1.0);

}  // namespace gcsim::workloads::training
