// Mirrored ranks with a straggler. A slow GPU paces everything it meets
// through blocking communication: its TP and CP peers wait for it at every
// collective and ring step, the next and previous pipeline stages at every
// send, and the other data-parallel replicas at every gradient bucket. So
// when every straggler sits in one data-parallel replica (at most one per
// pipeline stage, no expert parallelism, whose all-to-alls would couple
// replicas unevenly), the step takes as long as if every replica were slow
// in the same place, and the mirrored run stays exact with the straggler's
// speed given to its stage's simulated rank (its "stand-in").
// tests/unit/test_straggler_mirror.cpp compares it with the full run.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "workloads/training/training_config.h"
#include "workloads/training/training_generator.h"

namespace gcsim::workloads::training {

// Slow rank -> the simulated rank that runs at its speed. Empty, with the
// reason in `*why`, when the mirrored run cannot stand for the stragglers.
std::map<int, int> straggler_stand_ins(const TrainingConfig& c, const TrainingWorkload& w,
                                       const std::vector<int>& slow_ranks, std::string* why);

}  // namespace gcsim::workloads::training
