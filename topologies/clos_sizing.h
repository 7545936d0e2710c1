// The arithmetic of a folded Clos (fat-tree) built from switches of one
// radix k, shared by the fat-tree, rail-optimized and multi-plane builders.
//
// Leaf (tier 1): d downlinks to NICs and u uplinks, d/u <= the leaf
// oversubscription r1: d = floor(k r1 / (r1 + 1)) ports may face NICs
// (k/2 when non-blocking) and u = ceil(NICs on the fullest leaf / r1) face up,
// so d + u <= k always. Each leaf has one cable to each of u spines.
//
// Two tiers: one group of u spines; every leaf reaches every spine, so a
// spine uses one port per leaf and the fabric holds at most k leaves
// (k = 64, non-blocking: 64 leaves x 32 NICs = 2,048 NICs).
//
// Three tiers: pods of P leaves and u spines (tier 2). A spine splits its
// ports the same way with the spine oversubscription r2: P = floor(k r2 /
// (r2 + 1)) leaves below it (capped at the leaves there are) and
// u2 = ceil(P / r2) cores above. Spine j of every pod joins core group j
// (u2 cores), one cable per spine and core, so a core uses one port per pod
// and the fabric holds at most k pods (k = 64, non-blocking: 64 x 32 x 32 =
// 65,536 NICs, the k^3/4 of a 3-tier fat-tree). Cores: u x u2.
//
// "Radix too small for the GPU count" means more leaves than a spine has
// ports (2 tiers) or more pods than a core has ports (3 tiers).
#pragma once

#include <string>

namespace gcsim::topologies {

// How a switch with `radix` ports splits them for a downlink:uplink ratio.
struct PortSplit {
  int down = 0;  // ports that may face down
  int up = 0;    // ports facing up when all `down` are in use
};
PortSplit split_ports(int radix, double oversubscription);
// Uplinks a switch with `down_in_use` downlinks needs for the ratio.
int uplinks_for(int down_in_use, double oversubscription);

// What a placement asks of the Clos: how many leaves it fills, and the NIC
// ports on the fullest one.
struct LeafDemand {
  int ports = 0;          // NIC ports in all (for messages)
  int leaves = 0;
  int nics_per_leaf = 0;  // on the fullest leaf
  int leaf_capacity = 0;  // NIC ports a leaf may take (for messages)
};

struct ClosLayout {
  int tiers = 2;
  int leaves = 0;
  int nics_per_leaf = 0;   // the fullest leaf
  int leaf_uplinks = 0;    // = spines per pod; one cable from each leaf to each
  int leaves_per_pod = 0;  // 2 tiers: every leaf
  int pods = 1;            // 2 tiers: 1
  int spine_uplinks = 0;   // 3 tiers: cores per core group; 0 with 2 tiers
  int spines() const { return pods * leaf_uplinks; }
  int cores() const { return tiers == 3 ? leaf_uplinks * spine_uplinks : 0; }
};

// Sizes the tiers above the leaves; throws TopologyError (key "radix") when
// the radix cannot connect that many leaves in `tiers` tiers. `what` names
// the network in messages ("the fabric", "plane 1").
ClosLayout size_clos(const LeafDemand& demand, int radix, int tiers, double leaf_oversubscription,
                     double spine_oversubscription, const std::string& what);

}  // namespace gcsim::topologies
