// The instances of one communication that a mirrored run's simulated
// instance stands for. Mirrored ranks have coordinate 0 on every mirrored
// axis (rank_grid.h); the ranks they stand for differ only there, and run
// the same communication at the same moments among ranks shifted the same
// way. Shifting every member by one offset per mirrored axis (modulo the
// axis's extent) gives each such instance: the data-parallel all-reduces of
// the other TP ranks, the pipeline sends of every other replica and TP
// rank, the other hops of a context-parallel ring. Those of the same
// data-parallel replica (no shift on the DP axis: TP, CP or EP peers of the
// simulated ranks) meet them again at the next layer's collective, so the
// simulated op waits for them; the other replicas meet only at the
// gradient collectives and just load the links (sim::SiblingGroups).
#pragma once

#include <array>
#include <vector>

#include "sim/engine/replayer.h"
#include "workloads/training/rank_grid.h"

namespace gcsim::workloads::training {

// Every shift of `ranks` along the `mirrored` axes that is another
// instance, each listed in the order of `ranks` (member i shifted stands
// for member i), without repeats and without `ranks` itself: first those of
// the same replica (the waited ones), then the others, each part in the
// order of the offsets. `ordered`: the order is part of the instance (a
// p2p pair, sender and receiver: 2 -> 0 and 0 -> 2 differ); otherwise a
// group is its set of ranks (a group shifted along its own axis is itself).
sim::SiblingGroups mirror_siblings(const RankGrid& grid, const std::array<bool, kAxes>& mirrored,
                                   const std::vector<int>& ranks, bool ordered);

}  // namespace gcsim::workloads::training
