// Bytes one GPU sends in a training step, per parallel dimension, counted
// from the generated step itself: every collective at the wire bytes of
// NCCL's ring algorithm (nccl-tests' busbw convention: all-reduce
// 2(n-1)/n S, all-gather, reduce-scatter and all-to-all (n-1)/n S, with S
// the per-rank buffer), every send its payload. The whiteboard figure for
// "how much does TP/PP/DP put on the wire" that `gcsim explain` and
// `gcsim quiz` estimate, here as the simulated step issued it.
#pragma once

#include <array>

#include "sim/engine/ir.h"
#include "workloads/training/training_generator.h"

namespace gcsim::workloads::training {

struct StepTraffic {
  // Indexed by OpCategory (tp, cp, ep, pp, dp hold traffic; the rest 0).
  std::array<double, kCategories> by_category{};
  // The tied embedding's gradient all-reduce between the first and last
  // pipeline stage (Megatron's embedding group), kept out of `pp`, which
  // then holds the pipeline sends alone.
  double embedding = 0;
};

// Collectives of a mirrored rank count their real group's size.
StepTraffic bytes_sent(const WorkloadGraph& g, const TrainingWorkload& w, int rank);

}  // namespace gcsim::workloads::training
