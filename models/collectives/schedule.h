// NCCL's algorithms as traffic: a collective becomes phases run one after
// another, each a set of long-lived flows that run together. A pipelined
// ring's steady state is one flow per ring edge per channel carrying that
// edge's total bytes, not 2(n-1) rounds; the rounds survive as latency
// steps (and a pipeline fill) that the engine adds to the phase.
//
// Ring order per channel is NCCL's: each host's members in rank order,
// rotated by the channel so that channel c enters and leaves every host
// through the GPU at local position c mod k (its rail); hosts follow one
// another. With PXN (NCCL >= 2.12, on by default) the hop out of a host
// goes over NVLink to that rail GPU and out of its NIC, so every
// inter-host flow of a channel stays on one rail.
//
// Trees are NCCL's double binary tree over hosts (Sanders et al. 2009; the
// second tree mirrors the first, or shifts it by one for an odd count, so
// that a host is interior in at most one), a chain inside each host, half
// the channels on each tree.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/collectives/collective.h"
#include "models/collectives/group_layout.h"
#include "models/collectives/p2p_split.h"

namespace gcsim::models::collectives {

struct Flow {
  int src = 0;
  int dst = 0;
  double payload = 0.0;  // bytes over the whole phase, every channel it carries
  int channels = 1;      // channel edges merged into this flow
  uint32_t qp = 0;       // ECMP key: the channel for flows between hosts
};

struct Phase {
  std::vector<Flow> flows;
  int steps_scale_up = 0;   // latency steps inside hosts
  int steps_scale_out = 0;  // latency steps between hosts
  int fill_hops = 0;        // pipeline start-up, in slices
  double step_payload_per_channel = 0.0;  // one step's payload per channel: bounds a slice
  bool ring_loops = false;  // a ring of dependent steps: pays the per-loop turnaround
  // A pipelined chain from (or to) a root (broadcast, reduce): its pipeline
  // fills with one buffer step per hop (ProtocolParams::step), and no rank
  // waits for a rank downstream, so each rank trails the root by the hops
  // and fill above it and back-to-back calls overlap by that much (all but
  // the root's own first hop, which it pays in every call).
  bool chain = false;
  // A grouped send/recv (all-to-all direct): its rounds (every peer and the
  // rank itself), the most bytes one p2p channel handles (sends + receives
  // + local copy, p2p_split.h), each rank's local copy, and one part's
  // first step (the pipeline's start-up). All 0 for other phases.
  int p2p_rounds = 0;
  double p2p_channel_load = 0.0;
  double self_copy_bytes = 0.0;
  double p2p_first_step = 0.0;
};

struct Schedule {
  std::vector<Phase> phases;
};

// "" when `a` can run `op` on this group, else why not (NVLS needs one host
// with NVLink SHARP, hierarchical the same number of members on every host).
std::string check_algorithm(CollectiveOp op, Algorithm a, const GroupLayout& layout,
                            bool nvls_available);

// The phases of `req` (its op, bytes and root) run by `a` with `channels`
// channels. Flows inside a host merge across channels (they share the
// host's switch); flows between hosts stay one per channel.
// `one_flow_per_pair` merges the channels between hosts too (for a network
// model without contention, where 24 flows on one NIC would each get all of it).
// `p2p`: NCCL's point-to-point channels, for all-to-all (direct).
Schedule build_schedule(const CollectiveRequest& req, Algorithm a, const GroupLayout& layout,
                        int channels, bool pxn, bool one_flow_per_pair = false,
                        const P2pConfig& p2p = P2pConfig{});

// NCCL's ring order of channel `c` (global ranks).
std::vector<int> ring_order(const GroupLayout& layout, int channel);

// Parent of host `node` (0..num_nodes-1) in binary tree `tree` (0 or 1) of
// the double binary tree; -1 for the root.
int tree_parent(int node, int num_nodes, int tree);
// Edges from `node` up to the root of `tree`.
int tree_depth(int node, int num_nodes, int tree);

}  // namespace gcsim::models::collectives
