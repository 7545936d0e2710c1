#include "workloads/training/rank_grid.h"

#include <algorithm>
#include <stdexcept>

namespace gcsim::workloads::training {

bool parse_axis(const std::string& name, Axis* out) {
  static const std::pair<const char*, Axis> kNames[] = {
      {"tp", Axis::tp}, {"cp", Axis::cp}, {"ep", Axis::ep}, {"dp", Axis::edp}, {"pp", Axis::pp}};
  for (const auto& [n, a] : kNames) {
    if (name == n) {
      *out = a;
      return true;
    }
  }
  return false;
}

RankGrid::RankGrid(const ParallelConfig& p) {
  extent_[static_cast<size_t>(Axis::tp)] = p.tp;
  extent_[static_cast<size_t>(Axis::cp)] = p.cp;
  extent_[static_cast<size_t>(Axis::ep)] = p.ep;
  extent_[static_cast<size_t>(Axis::edp)] = p.dp / p.ep;
  extent_[static_cast<size_t>(Axis::pp)] = p.pp;
  std::array<bool, kAxes> seen{};
  for (const std::string& name : p.order) {
    Axis a;
    if (!parse_axis(name, &a)) {
      throw std::invalid_argument("unknown dimension '" + name + "' (use tp, cp, ep, dp, pp)");
    }
    if (seen[static_cast<size_t>(a)]) throw std::invalid_argument("'" + name + "' appears twice");
    seen[static_cast<size_t>(a)] = true;
    if (a == Axis::edp && !seen[static_cast<size_t>(Axis::ep)]) {
      // EP not named: it sits just inside DP, as Megatron carves it.
      order_.push_back(Axis::ep);
      seen[static_cast<size_t>(Axis::ep)] = true;
    }
    order_.push_back(a);
  }
  for (const char* need : {"tp", "cp", "dp", "pp"}) {
    Axis a;
    parse_axis(need, &a);
    if (!seen[static_cast<size_t>(a)]) {
      throw std::invalid_argument(std::string("the order must name ") + need +
                                  " (all of tp, cp, dp, pp; ep optional)");
    }
  }
  int stride = 1;
  for (Axis a : order_) {
    stride_[static_cast<size_t>(a)] = stride;
    stride *= extent_[static_cast<size_t>(a)];
  }
  size_ = stride;
}

RankGrid::Coord RankGrid::coord(int rank) const {
  Coord c{};
  for (size_t a = 0; a < kAxes; ++a) c[a] = (rank / stride_[a]) % extent_[a];
  return c;
}

int RankGrid::rank(const Coord& c) const {
  int r = 0;
  for (size_t a = 0; a < kAxes; ++a) r += c[a] * stride_[a];
  return r;
}

int RankGrid::moved(int rank, Axis a, int value) const {
  const size_t i = static_cast<size_t>(a);
  return rank + (value - (rank / stride_[i]) % extent_[i]) * stride_[i];
}

int RankGrid::mirror(int rank, const std::array<bool, kAxes>& mirrored) const {
  for (size_t a = 0; a < kAxes; ++a) {
    if (mirrored[a]) rank = moved(rank, static_cast<Axis>(a), 0);
  }
  return rank;
}

std::vector<int> RankGrid::group(Group g, int rank) const {
  std::vector<Axis> axes;
  switch (g) {
    case Group::tp: axes = {Axis::tp}; break;
    case Group::cp: axes = {Axis::cp}; break;
    case Group::ep: axes = {Axis::ep}; break;
    case Group::dp: axes = {Axis::ep, Axis::edp, Axis::cp}; break;
    case Group::expert_dp: axes = {Axis::edp, Axis::cp}; break;
    case Group::model_parallel: axes = {Axis::tp, Axis::ep, Axis::pp}; break;
    case Group::world: axes = {Axis::tp, Axis::cp, Axis::ep, Axis::edp, Axis::pp}; break;
    case Group::embedding: {
      std::vector<int> v{moved(rank, Axis::pp, 0), moved(rank, Axis::pp, extent(Axis::pp) - 1)};
      std::sort(v.begin(), v.end());
      v.erase(std::unique(v.begin(), v.end()), v.end());
      return v;
    }
  }
  std::vector<int> members{rank};
  for (Axis a : axes) {
    std::vector<int> next;
    for (int m : members) {
      for (int v = 0; v < extent(a); ++v) next.push_back(moved(m, a, v));
    }
    members = std::move(next);
  }
  std::sort(members.begin(), members.end());
  members.erase(std::unique(members.begin(), members.end()), members.end());
  return members;
}

std::string RankGrid::order_text() const {
  std::string s;
  for (Axis a : order_) {
    static const char* kNames[] = {"tp", "cp", "ep", "dp", "pp"};
    s += (s.empty() ? "" : "-") + std::string(kNames[static_cast<size_t>(a)]);
  }
  return s;
}

}  // namespace gcsim::workloads::training
