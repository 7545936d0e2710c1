// The routed traffic of a training step's MoE layers under expert
// parallelism, from the same code as the graph `moe` op (workloads/moe):
// per MoE layer the routing of a micro-batch (Zipf skew, auxiliary-loss-free
// balance, placement by index or a seeded permutation per layer, the
// capacity factor's drops), the rows each EP rank's local experts get, and
// the dispatch and combine as uneven all_to_all_single split matrices in
// bytes: one leg, or under DeepSeek-V3's node-limited routing across nodes
// the IB leg then the NVLink leg (moe_layer.h, dispatch_legs).
//
// By default the counts are expected ones, the same for every micro-batch
// (one draw per MoE layer, shared by all layers under index placement).
// With `moe.sample` each (MoE layer, micro-batch) is its own draw of the
// op's `route(config, layer, micro_batch)` under the run's seed: its split
// matrices, its experts' rows (wave quantisation) and its hot rank. Memory:
// one compact draw (rows per expert and the dispatch legs' rank matrices)
// per MoE layer and micro-batch, built at construction.
//
// Mirrored EP (training_generator.h) runs one EP rank per pipeline rank; it
// then stands for each draw's slowest rank: its experts get the rows of
// the (layer, micro-batch)'s hot rank (most rows received) while its
// all-to-alls carry the whole group's matrices. Every EP rank waits at each
// dispatch for the last sender and at each combine for the hot rank's
// experts, so a layer takes its slowest rank's time on every rank: exact
// when the same rank is hot in every layer and micro-batch (placement:
// index, expected counts), an upper bound when the hot rank moves between
// layers or, sampled, between micro-batches (no one GPU is hot in every
// draw) and DualPipe overlaps two of them on one GPU.
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

// One (MoE layer, micro-batch)'s routing, kept compact: what the kernels,
// the all-to-alls and the report need of a moe::Routing.
struct EpDraw {
  int hot = 0;                              // EP index whose experts get the most rows
  std::vector<int64_t> expert_rows;         // rows per expert over every source
  std::vector<std::vector<int64_t>> legs;   // dispatch legs: rows per (source, destination)
  double rank_imbalance = 1;                // most rows of a rank / mean
  double expert_imbalance = 1;              // most rows of an expert / mean
  int64_t dropped = 0;                      // copies over capacity, every source
  int64_t padded = 0;                       // padding rows (pad_to_capacity), every source
};

class EpRouting {
 public:
  // `ranks_per_node`: EP ranks per node when the EP group spans nodes with
  // the same count on each (node-limited routing), else 0 (one leg).
  EpRouting(const TrainingConfig& c, int ranks_per_node);

  int ranks() const { return config_.ranks; }
  const moe::RoutingConfig& config() const { return config_; }
  // Distinct draws per MoE layer: the step's micro-batches when sampled, else 1.
  int draws_per_layer() const { return per_layer_; }
  // The routing of MoE layer `layer` (a model layer index) in micro-batch
  // `micro` (ignored unless sampled).
  const EpDraw& draw(int layer, int micro) const;
  // The EP index whose experts get the most rows.
  int hot_rank(int layer, int micro) const { return draw(layer, micro).hot; }
  // Rows of each local expert of EP index `ep_index`, or of the draw's hot
  // rank when `ep_index` < 0 (a mirrored EP rank).
  std::vector<int64_t> local_rows(int layer, int micro, int ep_index) const;
  // One leg: bytes per (source, destination) in the communicator's order,
  // and its largest send buffer (the collective's nccl-tests size).
  struct Leg {
    models::collectives::SplitMatrixPtr bytes;
    int64_t largest = 0;
  };
  // The legs of one exchange in the order they run, in EP order, or its
  // reverse for a lane whose communicator lists the group backwards.
  const std::vector<Leg>& legs(int layer, int micro, EpExchange x, bool reversed) const;
  // "ib" / "nvlink" for each leg of a two-leg exchange, in running order;
  // empty names for one leg.
  std::vector<const char*> leg_names(EpExchange x) const;
  // Rows an EP index's experts get relative to the mean (1 = balanced), the
  // most over the MoE layers (and micro-batches when sampled).
  std::vector<double> loads() const;

 private:
  size_t index(int layer, int micro) const;
  moe::RoutingConfig config_;
  int ranks_per_node_ = 0;
  int max_route_nodes_ = 0;
  int first_moe_layer_ = 0;
  int moe_layers_ = 0;
  int per_layer_ = 1;                     // draws per MoE layer
  int64_t row_elements_ = 0;              // hidden width
  int64_t dispatch_bytes_ = 2, act_bytes_ = 2;  // per element
  // By MoE layer x draws_per_layer + micro-batch; shared when alike.
  std::vector<std::shared_ptr<const EpDraw>> draws_;
  // Built on first use: (draw index, exchange, reversed) -> legs.
  mutable std::map<std::tuple<size_t, int, bool>, std::vector<Leg>> legs_;
};

}  // namespace gcsim::workloads::training
