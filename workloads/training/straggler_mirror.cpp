#include "workloads/training/straggler_mirror.h"

#include <set>

#include "workloads/training/rank_grid.h"

namespace gcsim::workloads::training {

std::map<int, int> straggler_stand_ins(const TrainingConfig& c, const TrainingWorkload& w,
                                       const std::vector<int>& slow_ranks, std::string* why) {
  std::map<int, int> out;
  if (c.parallel.ep > 1) {
    *why = "expert all-to-alls couple data-parallel replicas";
    return out;
  }
  const RankGrid grid(c.parallel);
  std::set<int> stages;
  for (int r : slow_ranks) {
    if (grid.at(r, Axis::edp) != grid.at(slow_ranks.front(), Axis::edp)) {
      *why = "stragglers in more than one data-parallel replica";
      return {};
    }
    if (!stages.insert(grid.at(r, Axis::pp)).second) {
      *why = "two stragglers in one pipeline stage";
      return {};
    }
    // The simulated rank of its set (the generator's own rule).
    out[r] = grid.mirror(r, w.mirrored_axis);
  }
  return out;
}

}  // namespace gcsim::workloads::training
