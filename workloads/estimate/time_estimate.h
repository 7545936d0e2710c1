// Worksheet section 4, time of a training step: compute-bound time at the
// GPU's calibrated tensor rate (peak x efficiency of the preset or profile),
// bandwidth-bound time per dimension (comm_estimate), the pipeline bubble
// from the schedule's formula ((p-1)/m for GPipe and 1F1B, (p-1)/(v m)
// interleaved, (p-1)/(3m) for ZB-H1 with F = B = W; DualPipe evaluated with
// unit passes), the step time as compute + bubble + what is not overlapped,
// and MFU = model FLOPs / (step x GPUs x peak).
#pragma once

#include <vector>

#include "models/gpu/gpu_spec.h"
#include "workloads/estimate/comm_estimate.h"
#include "workloads/estimate/estimate_line.h"
#include "workloads/training/pipeline_schedule.h"
#include "workloads/training/training_config.h"

namespace gcsim::workloads::estimate {

// Bubble as a fraction of the busy time of a pipeline rank.
// `plan`: the schedule's plan when the caller has built it (DualPipe's is
// built otherwise).
Line bubble_fraction_line(training::Schedule s, int pp, int v, int64_t micro_batches,
                          const training::PipelinePlan* plan = nullptr);

// Compute per step of the busiest pipeline rank: `compute` (the mean per
// GPU) scaled by that rank's share of the per-token work, from its layers
// (`layers_s` and `attention_s` are the whole model's, seconds per token) and,
// on the last stage, the output head (`head_s`). Equal to `compute` without
// a pipeline and for DualPipe (each rank holds a stage from either end).
double slowest_rank_compute(const training::TrainingConfig& c, const training::PipelinePlan& plan,
                            double compute, double layers_s, double head_s, double attention_s);

// Wave quantization of a GEMM M x N x K on `sms` SMs with tile_m x tile_n
// tiles: tiles = ceil(M/tm) ceil(N/tn), waves = ceil(tiles / sms); value =
// tiles / (waves x sms), the fraction of the last wave's SMs kept busy on
// average (1 = no loss).
Line wave_efficiency_line(const std::string& gemm, double m, double n, double k, int sms,
                          int tile_m = 128, int tile_n = 256);

struct TrainingTimeEstimate {
  Line model_flops;     // per step, whole cluster
  Line hardware_flops;  // plus recompute
  Line rate;            // calibrated tensor rate of one GPU
  Line compute;         // per GPU: hardware FLOPs / GPUs / rate
  std::vector<Line> comm;     // per dimension: total ideal time per step
  std::vector<Line> exposed;  // per dimension: what the step is estimated to wait for
  Line bubble_fraction;
  Line bubble;
  Line optimizer;       // the optimizer step's HBM passes (training/optimizer_step.h)
  Line step;
  Line mfu;
  std::vector<Line> waves;  // the layer's GEMMs, wave quantization
  std::vector<Line> lines() const;
  // Estimated exposed time of a dimension ("TP", "DP", ...); 0 when none.
  double exposed_of(const std::string& dimension) const;
};

// Achieved tensor-core fraction of the config's attention kernel (its family,
// one micro-batch's causal shape on one TP rank), forward or backward.
double attention_efficiency(const training::TrainingConfig& c, const models::gpu::GpuSpec& gpu,
                            bool backward);

TrainingTimeEstimate estimate_training_time(const training::TrainingConfig& c,
                                            const models::gpu::GpuSpec& gpu,
                                            const std::vector<CommRow>& comm,
                                            const training::PipelinePlan* plan = nullptr);

}  // namespace gcsim::workloads::estimate
