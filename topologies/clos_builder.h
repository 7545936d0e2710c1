// Lays switches and cables of one Clos network (clos_sizing.h) over NICs
// already placed on leaves: leaves "leaf<i>", spines "spine<j>" (pod p holds
// spines p*u .. p*u+u-1) and, with 3 tiers, cores "core<c>" (group j holds
// cores j*u2 .. j*u2+u2-1), each name after the plane prefix. Every cable
// runs at the plane's port bandwidth with the hop latency.
#pragma once

#include <string>
#include <vector>

#include "models/network/fabric.h"
#include "topologies/clos_sizing.h"
#include "topologies/topology_spec.h"

namespace gcsim::topologies {

struct ClosPlane {
  std::string prefix;  // "" or "p1/"
  int plane = 0;
  sim::Bandwidth port_bandwidth;
  sim::Duration hop_latency;
  ClosLayout layout;
};

// `leaf_nics[l]` are the NICs cabled to leaf l in port order; `leaf_rail[l]`
// is the rail leaf l serves, or -1. Creates leaves, spines, cores, then the
// cables bottom up, so link ids follow that order.
void build_clos(models::network::Fabric& fabric, const ClosPlane& plane,
                const std::vector<std::vector<models::network::NodeId>>& leaf_nics,
                const std::vector<int>& leaf_rail);

}  // namespace gcsim::topologies
