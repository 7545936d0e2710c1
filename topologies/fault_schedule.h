// Link faults from the config (network.faults) as events: at its time each
// fault sets the state of one link ("leaf0->spine1") or of both directions
// of a cable ("leaf0<->spine1") in the Fabric, then tells the network model,
// which reroutes or rescales the flows that used it.
#pragma once

#include <string>
#include <vector>

#include "models/network/fabric.h"
#include "models/network/network_model.h"
#include "sim/engine/simulator.h"
#include "sim/engine/time.h"

namespace gcsim::topologies {

struct FaultSpec {
  std::string link;  // "a->b": that direction; "a<->b": the cable, both directions
  sim::Time at;      // simulated time the state changes
  models::network::LinkState state = models::network::LinkState::down;
  double bandwidth_fraction = 1.0;  // share of nominal bandwidth left when degraded, (0, 1]
  int config_line = 0;              // where the config gives it (0: unknown), for messages
};

// The links a fault names, a->b first; throws TopologyError (key "link")
// with a suggestion when the fabric has no such link or cable.
std::vector<models::network::LinkId> fault_links(const models::network::Fabric& fabric,
                                                 const std::string& link);

// Schedules every fault on `sim` (same-time faults apply in list order); one
// at the current time applies now, before the workload starts.
// Names are resolved now, so a bad one throws before anything runs. The
// fabric and the model must outlive the run.
void schedule_faults(sim::Simulator& sim, models::network::Fabric& fabric,
                     models::network::NetworkModel& model, const std::vector<FaultSpec>& faults);

}  // namespace gcsim::topologies
