// Where each parallel coordinate lives: global rank <-> (tp, cp, ep, edp,
// pp) by a placement order, innermost first ("tp-cp-ep-dp-pp" puts a TP
// group on consecutive ranks, so inside a node). DP is ep x edp: expert
// parallelism is carved out of data parallelism as in Megatron-LM, and the
// expert data-parallel group (edp = dp / ep) reduces the experts' gradients.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "workloads/training/training_config.h"

namespace gcsim::workloads::training {

enum class Axis { tp, cp, ep, edp, pp };
inline constexpr int kAxes = 5;

// The groups a rank communicates in.
enum class Group {
  tp,          // tensor parallel
  cp,          // context parallel (ring)
  ep,          // expert parallel (all-to-all)
  dp,          // gradients of dense parameters: dp x cp ranks with the same tp and pp
  expert_dp,   // gradients of expert parameters: edp x cp ranks
  embedding,   // first and last pipeline stage (tied embedding gradients)
  model_parallel,  // ranks holding different parameters of one replica: tp x ep x pp
  world,           // every rank
};

class RankGrid {
 public:
  using Coord = std::array<int, kAxes>;  // indexed by Axis

  // Throws std::invalid_argument naming what is wrong with `order`.
  explicit RankGrid(const ParallelConfig& p);

  int size() const { return size_; }
  int extent(Axis a) const { return extent_[static_cast<size_t>(a)]; }
  Coord coord(int rank) const;
  int rank(const Coord& c) const;
  int at(int rank, Axis a) const { return coord(rank)[static_cast<size_t>(a)]; }
  // The same rank moved to another coordinate along one axis.
  int moved(int rank, Axis a, int value) const;
  // The rank that stands for `rank` when the axes in `mirrored` are
  // mirrored: its coordinate 0 on each of them.
  int mirror(int rank, const std::array<bool, kAxes>& mirrored) const;
  // Members of `g` containing `rank`, in increasing rank order.
  std::vector<int> group(Group g, int rank) const;
  // "tp-cp-ep-dp-pp" as given (ep added before dp when absent).
  std::string order_text() const;

 private:
  std::array<int, kAxes> extent_{};
  std::array<int, kAxes> stride_{};
  std::vector<Axis> order_;
  int size_ = 1;
};

// Parses one name of the placement order ("tp", "cp", "ep", "dp", "pp").
bool parse_axis(const std::string& name, Axis* out);

}  // namespace gcsim::workloads::training
