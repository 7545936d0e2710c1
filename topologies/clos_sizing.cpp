#include "topologies/clos_sizing.h"

#include <algorithm>
#include <cmath>

#include "topologies/topology_error.h"

namespace gcsim::topologies {

namespace {
// Port counts are small integers; the tolerance keeps 64 * 3 / 4 = 48 from
// flooring to 47 through rounding.
constexpr double kSlack = 1e-9;

std::string ratio(double r) {
  std::string s = std::to_string(r);
  s.erase(s.find_last_not_of('0') + 1);
  if (s.back() == '.') s.pop_back();
  return s + ":1";
}
}  // namespace

PortSplit split_ports(int radix, double oversubscription) {
  const double r = oversubscription;
  PortSplit p;
  p.down = std::max(1, static_cast<int>(std::floor(radix * r / (r + 1.0) + kSlack)));
  p.up = uplinks_for(p.down, r);
  return p;
}

int uplinks_for(int down_in_use, double oversubscription) {
  return std::max(1, static_cast<int>(std::ceil(down_in_use / oversubscription - kSlack)));
}

ClosLayout size_clos(const LeafDemand& demand, int radix, int tiers, double leaf_oversubscription,
                     double spine_oversubscription, const std::string& what) {
  ClosLayout l;
  l.tiers = tiers;
  l.leaves = demand.leaves;
  l.nics_per_leaf = demand.nics_per_leaf;
  l.leaf_uplinks = uplinks_for(demand.nics_per_leaf, leaf_oversubscription);
  const std::string needs = what + " needs " + std::to_string(demand.leaves) + " leaves for its " +
                            std::to_string(demand.ports) + " NIC ports (at most " +
                            std::to_string(demand.leaf_capacity) + " per leaf at " +
                            ratio(leaf_oversubscription) + ")";
  if (tiers == 2) {
    l.leaves_per_pod = l.leaves;
    if (l.leaves > radix) {
      throw TopologyError(
          "radix", "radix " + std::to_string(radix) + " is too small for the GPU count: with 2 "
                   "tiers a spine has one port per leaf, so at most " + std::to_string(radix) +
                   " leaves (" + std::to_string(radix * demand.leaf_capacity) + " NIC ports); " +
                   needs + ". Use tiers: 3 or a larger radix");
    }
    return l;
  }
  const PortSplit spine = split_ports(radix, spine_oversubscription);
  l.leaves_per_pod = std::min(spine.down, l.leaves);
  l.spine_uplinks = uplinks_for(l.leaves_per_pod, spine_oversubscription);
  l.pods = (l.leaves + l.leaves_per_pod - 1) / l.leaves_per_pod;
  if (l.pods > radix) {
    throw TopologyError(
        "radix",
        "radix " + std::to_string(radix) + " is too small for the GPU count: with 3 tiers a core "
        "has one port per pod of " + std::to_string(spine.down) + " leaves, so at most " +
            std::to_string(radix) + " pods (" +
            std::to_string(static_cast<long long>(radix) * spine.down * demand.leaf_capacity) +
            " NIC ports); " + needs + ", " + std::to_string(l.pods) +
            " pods. Use a larger radix");
  }
  return l;
}

}  // namespace gcsim::topologies
