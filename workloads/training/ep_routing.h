// The routed traffic of a training step's MoE layers under expert
// parallelism, from the same code as the graph `moe` op (workloads/moe):
// per MoE layer the routing of a micro-batch (Zipf skew, auxiliary-loss-free
// balance, placement by index or a seeded permutation per layer), the rows
// each EP rank's local experts get, and the dispatch and combine as uneven
// all_to_all_single split matrices in bytes: one leg, or under DeepSeek-V3's
// node-limited routing across nodes the IB leg then the NVLink leg
// (moe_layer.h, dispatch_legs). Expected counts, the same for every
// micro-batch (the op's `sample` is not offered here).
//
// Mirrored EP (training_generator.h) runs one EP rank per pipeline rank; it
// then stands for each layer's slowest rank: its experts get the rows of
// the layer's hot rank (most rows received) while its all-to-alls carry the
// whole group's matrices. Every EP rank waits at each dispatch for the
// last sender and at each combine for the hot rank's experts, so a layer
// takes its slowest rank's time on every rank: exact when the same rank is
// hot in every layer (placement: index), an upper bound when the hot rank
// moves between layers and DualPipe overlaps two layers on one GPU.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "models/collectives/split_matrix.h"
#include "workloads/moe/moe_routing.h"
#include "workloads/training/training_config.h"

namespace gcsim::workloads::training {

// Which all-to-all of a MoE layer: the role (dispatch: tokens to experts in
// forward and their gradients back in backward; combine: the reverse) and
// whether it runs in the dispatch direction.
enum class EpExchange : uint8_t {
  dispatch,      // forward dispatch: sources -> experts, dispatch dtype (fp8 under fp8)
  combine,       // forward combine: experts -> sources, activation dtype
  combine_bwd,   // backward of the combine: sources -> experts, activation dtype
  dispatch_bwd,  // backward of the dispatch: experts -> sources, dispatch dtype
};

class EpRouting {
 public:
  // `ranks_per_node`: EP ranks per node when the EP group spans nodes with
  // the same count on each (node-limited routing), else 0 (one leg).
  EpRouting(const TrainingConfig& c, int ranks_per_node);

  int ranks() const { return config_.ranks; }
  const moe::RoutingConfig& config() const { return config_; }
  // The routing of MoE layer `layer` (a model layer index).
  const moe::Routing& routing(int layer) const;
  // The EP index whose experts get the most rows in `layer`.
  int hot_rank(int layer) const;
  // Rows of each local expert of EP index `ep_index`, or of the layer's hot
  // rank when `ep_index` < 0 (a mirrored EP rank).
  const std::vector<int64_t>& local_rows(int layer, int ep_index) const;
  // One leg: bytes per (source, destination) in the communicator's order,
  // and its largest send buffer (the collective's nccl-tests size).
  struct Leg {
    models::collectives::SplitMatrixPtr bytes;
    int64_t largest = 0;
  };
  // The legs of one exchange in the order they run, in EP order, or its
  // reverse for a lane whose communicator lists the group backwards.
  const std::vector<Leg>& legs(int layer, EpExchange x, bool reversed) const;
  // "ib" / "nvlink" for each leg of a two-leg exchange, in running order;
  // empty names for one leg.
  std::vector<const char*> leg_names(EpExchange x) const;
  // Rows an EP index's experts get relative to the mean (1 = balanced), the
  // most over the MoE layers.
  std::vector<double> loads() const;

 private:
  moe::RoutingConfig config_;
  int ranks_per_node_ = 0;
  int max_route_nodes_ = 0;
  int first_moe_layer_ = 0;
  int64_t row_elements_ = 0;              // hidden width
  int64_t dispatch_bytes_ = 2, act_bytes_ = 2;  // per element
  std::vector<std::shared_ptr<const moe::Routing>> routings_;  // by MoE layer
  // Per MoE layer: the hot rank and every rank's local expert rows (the
  // generator asks for them every micro-batch).
  std::vector<int> hot_;
  std::vector<std::vector<std::vector<int64_t>>> local_;
  // Built on first use: (layer, exchange, reversed) -> legs.
  mutable std::map<std::tuple<int, int, bool>, std::vector<Leg>> legs_;
};

}  // namespace gcsim::workloads::training
