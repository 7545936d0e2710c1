#include "workloads/training/mirror_siblings.h"

#include <algorithm>
#include <set>

namespace gcsim::workloads::training {

sim::SiblingGroups mirror_siblings(const RankGrid& grid, const std::array<bool, kAxes>& mirrored,
                                   const std::vector<int>& ranks, bool ordered) {
  std::vector<size_t> axes;
  size_t shifts = 1;
  for (size_t a = 0; a < kAxes; ++a) {
    const int extent = grid.extent(static_cast<Axis>(a));
    if (mirrored[a] && extent > 1) {
      axes.push_back(a);
      shifts *= static_cast<size_t>(extent);
    }
  }
  std::vector<RankGrid::Coord> coords;
  coords.reserve(ranks.size());
  for (int r : ranks) coords.push_back(grid.coord(r));
  auto key = [ordered](std::vector<int> v) {
    if (!ordered) std::sort(v.begin(), v.end());
    return v;
  };
  std::set<std::vector<int>> seen{key(ranks)};
  std::vector<std::vector<int>> same_replica, other_replicas;
  for (size_t s = 1; s < shifts; ++s) {
    // Offset per mirrored axis: the digits of s, the first axis fastest.
    RankGrid::Coord offset{};
    size_t rest = s;
    for (size_t a : axes) {
      const auto extent = static_cast<size_t>(grid.extent(static_cast<Axis>(a)));
      offset[a] = static_cast<int>(rest % extent);
      rest /= extent;
    }
    std::vector<int> shifted;
    shifted.reserve(ranks.size());
    for (RankGrid::Coord c : coords) {
      for (size_t a : axes) c[a] = (c[a] + offset[a]) % grid.extent(static_cast<Axis>(a));
      shifted.push_back(grid.rank(c));
    }
    if (!seen.insert(key(shifted)).second) continue;
    const bool same = offset[static_cast<size_t>(Axis::edp)] == 0;
    (same ? same_replica : other_replicas).push_back(std::move(shifted));
  }
  sim::SiblingGroups out;
  out.waited = same_replica.size();
  out.groups = std::move(same_replica);
  for (auto& g : other_replicas) out.groups.push_back(std::move(g));
  return out;
}

}  // namespace gcsim::workloads::training
