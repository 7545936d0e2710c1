// The strategies `gcsim plan` considers for one model, cluster and global
// batch. The value lists are wide on purpose (every power of two for TP up
// to two nodes, CP up to 8, every PP that divides the GPUs left, every
// divisor of a stage's layers as virtual stages, micro-batches 1..16, all
// five schedules, three recompute policies, four ZeRO stages, SP on and
// off): the strategy's constraints and the memory model prune what cannot
// run, and `gcsim plan` counts what each rule pruned. DP takes the GPUs that
// TP x CP x PP leave; EP (MoE models only) is carved out of DP.
#pragma once

#include <vector>

#include "workloads/plan/strategy.h"
#include "workloads/training/training_config.h"

namespace gcsim::workloads::plan {

struct SearchSpace {
  std::vector<int> tp;           // powers of two up to 2 x GPUs per node (TP across two nodes)
  std::vector<int> cp;           // 1, 2, 4, 8
  std::vector<int64_t> micro;    // 1, 2, 4, 8, 16
  std::vector<training::Schedule> schedules;  // with PP > 1; PP 1 runs 1f1b only
  std::vector<training::Recompute> recompute;
  std::vector<int> zero_stages;  // 0..3
  int max_virtual_stages = 16;   // interleaved: chunks per rank, a divisor of the stage's layers
};

SearchSpace default_search_space(const training::TrainingConfig& base, int gpus, int gpus_per_node);

// Every candidate, in a fixed order (TP, CP, PP, EP, schedule and virtual
// stages, micro-batch, recompute, ZeRO, SP; the last varies fastest), so that
// a candidate's index names it in every run. Only combinations whose
// TP x CP x PP divides `gpus` are produced (DP is what is left).
std::vector<Strategy> enumerate_strategies(const SearchSpace& space,
                                           const training::TrainingConfig& base, int gpus);

}  // namespace gcsim::workloads::plan
