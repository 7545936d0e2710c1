#include "workloads/training/training_scale.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "workloads/models/model_formulas.h"
#include "workloads/training/grad_buckets.h"
#include "workloads/training/layer_kernels.h"
#include "workloads/training/memory_model.h"

namespace gcsim::workloads::training {

namespace {

// Ops LayerKernels emits for one layer's forward and backward (full
// recompute's extra forward included), for one micro-batch.
double layer_ops(const LayerKernels& k, const TrainingStreams& streams, WorkloadGraph& g,
                 int layer) {
  RankProgram program;
  std::vector<OpCategory> categories;
  OpEmitter e(g, program, categories, streams);
  std::vector<DeferredWeights> deferred;
  k.layer_forward(e, layer, "F");
  k.layer_backward(e, layer, "B", false, deferred);
  return static_cast<double>(e.size());
}

// Ops of the embedding and the head, forward and backward, one micro-batch.
double ends_ops(const LayerKernels& k, const TrainingStreams& streams, WorkloadGraph& g) {
  RankProgram program;
  std::vector<OpCategory> categories;
  OpEmitter e(g, program, categories, streams);
  std::vector<DeferredWeights> deferred;
  k.embedding_forward(e, "F");
  k.head_forward(e, "F");
  k.head_backward(e, "B", false, deferred);
  k.embedding_backward(e, "B", false, deferred);
  return static_cast<double>(e.size());
}

}  // namespace

TrainingScale estimate_training_scale(const TrainingConfig& c, bool mirrored, int gpus) {
  TrainingScale s;
  const ParallelConfig& p = c.parallel;
  const models::ModelSpec& m = c.model;
  s.micro_batches = c.micro_batches();

  WorkloadGraph scratch(1);
  const TrainingStreams streams = TrainingStreams::intern(scratch);
  std::unique_ptr<EpRouting> ep;
  if (m.is_moe()) ep = std::make_unique<EpRouting>(c, 0);
  const LayerKernels kernels(c, ep.get(), -1);
  const double dense = layer_ops(kernels, streams, scratch, 0);
  int first_moe = -1;
  for (int l = 0; l < m.layers && first_moe < 0; ++l) {
    if (m.is_moe_layer(l)) first_moe = l;
  }
  const double moe = first_moe >= 0 ? layer_ops(kernels, streams, scratch, first_moe) : dense;
  const double moe_share = static_cast<double>(m.moe_layers()) / m.layers;
  s.ops_per_layer = dense * (1 - moe_share) + moe * moe_share;
  // ZeRO-3 gathers each layer's parameters before its forward and backward.
  if (c.optimizer.zero_stage >= 3 && p.dp > 1) s.ops_per_layer += m.is_moe() ? 4 : 2;
  const double ends = ends_ops(kernels, streams, scratch);

  // Layers per model stage, as the generator splits them (no passes needed).
  PipelinePlan shape;
  shape.schedule = p.schedule;
  shape.ranks = p.pp;
  shape.model_stages = p.schedule == Schedule::interleaved ? p.pp * p.virtual_stages : p.pp;
  const std::vector<StageLayers> stages = model_stage_layers(c, shape);
  // Per stage a micro-batch visits: the receive, send, pipeline gather and
  // activation alloc/free around its layers, forward and backward.
  constexpr double kPerStageVisit = 8;
  const double mb = static_cast<double>(s.micro_batches);
  // Once per step, per layer: its DP buckets (grad_buckets.h: at most one
  // per weight, each with an expert half) and, under plain PyTorch's DDP,
  // each weight's copy into its bucket.
  constexpr double kWeightsPerLayer = 6;  // two norms, QKV, output, FC1, FC2
  const auto counts = models::count_params(m);
  const double layer_grads = std::max(counts.dense_layer.total(), counts.moe_layer.total()) /
                             p.tp * c.optimizer.grad_bytes;
  const double buckets =
      std::clamp(std::ceil(layer_grads / grad_bucket_bytes(c)), 1.0, kWeightsPerLayer);
  const double copies =
      c.framework != Framework::megatron && c.optimizer.zero_stage == 0 ? kWeightsPerLayer : 0.0;
  for (int r = 0; r < p.pp; ++r) {
    const std::vector<int> held = shape.stages_of(r);
    // DualPipe sends half the micro-batches each way: each visits one of
    // the rank's two stages; other schedules visit every stage it holds.
    const double share = p.schedule == Schedule::dualpipe ? 1.0 / held.size() : 1.0;
    double layers = 0, per_micro = 0, tail = 0;
    for (int k : held) {
      const double n = stages[static_cast<size_t>(k)].count;
      layers += share * n;
      per_micro += share * (n * s.ops_per_layer + kPerStageVisit +
                            (k == 0 || k == shape.model_stages - 1 ? ends / 2 : 0.0));
      tail += n * (2 * buckets + copies);
    }
    s.max_layers_per_rank = std::max(s.max_layers_per_rank, layers);
    s.program_ops += mb * per_micro + tail + 16;  // + optimizer passes and syncs
  }
  // Mirrored, one program per pipeline rank (the mirrored EP rank stands
  // for every EP rank, training_generator.h); otherwise one per EP rank
  // when their loads differ.
  const std::vector<double> loads = expert_loads(c);
  const bool balanced = *std::max_element(loads.begin(), loads.end()) == 1.0;
  const int ep_programs = balanced || mirrored ? 1 : p.ep;
  s.programs = p.pp * ep_programs;
  s.program_ops *= ep_programs;
  if (mirrored) {
    s.simulated_ranks = s.programs;
    s.executed_ops = s.program_ops;
  } else {
    s.simulated_ranks = gpus;
    s.executed_ops = s.program_ops * (static_cast<double>(gpus) / s.programs);
  }
  return s;
}

}  // namespace gcsim::workloads::training
