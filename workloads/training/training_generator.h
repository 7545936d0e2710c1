// Builds one training step as the IR: for every pipeline rank, the passes
// of its schedule turned into kernels (layer_kernels.h), pipeline sends and
// receives between consecutive model stages, DP gradient reduce-scatters or
// all-reduces in buckets as the backward produces them, ZeRO-3 parameter
// all-gathers one layer ahead, HBM allocations as activations come and go,
// and the optimizer step.
//
// Symmetric ranks are mirrored, not simulated: ranks that differ only in
// their TP, CP or data-parallel coordinate run identical timelines when
// every such group has the same shape on the machine and the routing is
// balanced, so only the ranks with coordinate 0 on those axes run (one per
// pipeline rank). Their collectives are timed over the whole group they
// stand for (SymmetricExecutor widens them), and a mirrored CP ring sends
// to itself, timed as the hop from its real neighbour. On an oversubscribed
// fabric the instances a simulated rank stands for also run as traffic
// (mirror_siblings.h, TrainingWorkload::grid). Under uneven expert load the
// mirrored EP rank stands for each MoE layer's slowest rank (ep_routing.h);
// groups that straddle nodes unevenly turn the shortcut off.
// tests/unit/test_training_generator.cpp shows the mirrored run equal to
// the full one.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/engine/ir.h"
#include "workloads/training/ep_routing.h"
#include "workloads/training/memory_model.h"
#include "workloads/training/op_emitter.h"
#include "workloads/training/pipeline_schedule.h"
#include "workloads/training/rank_grid.h"
#include "workloads/training/training_config.h"

namespace gcsim::workloads::training {

struct GeneratorOptions {
  bool mirror = true;       // simulate one rank per symmetric set
  bool memory_ops = true;   // allocate and free HBM in the simulated ledger
  int gpus_per_node = 8;    // node boundaries, for the symmetry test and EP routing
};

struct TrainingWorkload {
  std::unique_ptr<WorkloadGraph> graph;
  std::vector<std::vector<OpCategory>> categories;  // by program id, by op
  PipelinePlan plan;
  std::vector<int> simulated;     // ranks that run programs, ascending
  bool mirrored = false;          // some axes mirrored
  std::string mirrored_axes;      // e.g. "tp, cp, dp"
  // Per Axis: whether its coordinate is mirrored (simulated ranks have 0).
  std::array<bool, kAxes> mirrored_axis{};
  std::optional<RankGrid> grid;   // where each rank sits (set by generate_training)
  std::string mirror_note;        // why the shortcut is off, or ""
  // slot_key(rank, comm slot) -> every rank a reduced collective stands for.
  std::unordered_map<uint64_t, std::vector<int>> widened_groups;
  // slot_key(rank, peer slot) -> the real peer of a self-addressed p2p.
  std::unordered_map<uint64_t, int> widened_peers;

  static uint64_t slot_key(int rank, uint16_t slot) { return static_cast<uint64_t>(rank) << 16 | slot; }
  // The whole group a mirrored rank's collective on `slot` stands for, or null.
  const std::vector<int>* widened_group(int rank, uint16_t slot) const {
    const auto it = widened_groups.find(slot_key(rank, slot));
    return it == widened_groups.end() ? nullptr : &it->second;
  }
  // The real peer of a self-addressed p2p on `slot`, or null.
  const int* widened_peer(int rank, uint16_t slot) const {
    const auto it = widened_peers.find(slot_key(rank, slot));
    return it == widened_peers.end() ? nullptr : &it->second;
  }
  // By program id, by op: when the host has issued it, in ps after the step
  // starts (host_issue.h); empty when the framework's host never waits.
  std::vector<std::vector<int64_t>> host_issue_ps;
  sim::Duration host_per_kernel = sim::Duration::zero();
  std::vector<double> expert_load;  // per EP index (mean 1), the most over MoE layers
  double max_expert_load = 1.0;
  bool ep_spans_nodes = false;
  std::shared_ptr<const EpRouting> ep_routing;  // null for a dense model
};

// The caller has checked the strategy (check_strategy).
TrainingWorkload generate_training(const TrainingConfig& c, const GeneratorOptions& options);

// Rows each EP rank's experts get under the config's routing (skew,
// balance, placement), over the mean: the most over the MoE layers.
std::vector<double> expert_loads(const TrainingConfig& c);

// Why mirroring would be wrong for this placement ("" when it is exact):
// groups of one kind that sit differently across nodes time differently.
std::string asymmetry(const TrainingConfig& c, const RankGrid& grid, int gpus_per_node);

}  // namespace gcsim::workloads::training
