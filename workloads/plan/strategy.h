// One parallel layout of a training step as `gcsim plan` searches it: the
// values a planner chooses (TP with or without sequence parallelism, CP, PP
// with its schedule and virtual stages, DP, EP, micro-batch, recompute and
// ZeRO stage), applied onto a base TrainingConfig that fixes the model, the
// global batch, precision and everything else.
#pragma once

#include <cstdint>
#include <string>

#include "workloads/training/training_config.h"

namespace gcsim::workloads::plan {

struct Strategy {
  int tp = 1, cp = 1, pp = 1, dp = 1, ep = 1;
  int virtual_stages = 1;  // > 1 only with the interleaved schedule
  int64_t micro = 1;       // sequences per micro-batch
  training::Schedule schedule = training::Schedule::one_f_one_b;
  training::Recompute recompute = training::Recompute::none;
  int zero_stage = 0;
  bool sequence_parallel = false;

  bool operator==(const Strategy&) const = default;
};

// `base` with the strategy's values; every other field kept.
training::TrainingConfig apply(const training::TrainingConfig& base, const Strategy& s);

// The strategy a config already has.
Strategy strategy_of(const training::TrainingConfig& c);

// "TP8 SP, PP8 interleaved v2, DP16, mb 1, recompute full, ZeRO-1": the
// dimensions of size 1 (CP, EP) left out.
std::string label(const Strategy& s);

}  // namespace gcsim::workloads::plan
