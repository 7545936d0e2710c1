// How large a training step's IR will be, counted from the config before
// the step is generated: a million layers or a hundred million sequences
// per batch would otherwise take minutes and gigabytes to generate before
// anything could say so. The per-layer op counts come from emitting one
// layer of each kind (dense, MoE) into a scratch program with the same
// kernels the generator uses (layer_kernels.h), so they follow the
// strategy (TP collectives, SP, CP ring, recompute); the rest (embedding,
// head, pipeline messages, allocations, ZeRO-3 gathers) is counted per
// micro-batch and stage as training_generator.cpp emits it.
#pragma once

#include <cstdint>

#include "workloads/training/training_config.h"
#include "workloads/training/training_generator.h"

namespace gcsim::workloads::training {

struct TrainingScale {
  int64_t micro_batches = 0;      // per pipeline, per step
  double ops_per_layer = 0;       // forward + backward of one layer, one micro-batch (mean)
  double max_layers_per_rank = 0; // layers a micro-batch crosses on the busiest pipeline rank
  int programs = 0;               // distinct programs (pipeline ranks x uneven EP ranks)
  int simulated_ranks = 0;        // ranks that run a program
  double program_ops = 0;         // ops stored, all programs together
  double executed_ops = 0;        // ops run, over every simulated rank
};

// `mirrored`: whether symmetric ranks will be mirrored (the generator
// decides; pass what it would do: options.mirror and no asymmetry).
// The caller has checked the strategy (check_strategy).
TrainingScale estimate_training_scale(const TrainingConfig& c, bool mirrored, int gpus);

}  // namespace gcsim::workloads::training
