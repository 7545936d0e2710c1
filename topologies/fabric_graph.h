// Whole-fabric questions answered on a Boost.Graph copy of a Fabric: can
// every GPU reach every other (connected_components over usable links), are
// the NICs of a custom fabric joined through switches, and how much
// bandwidth crosses a cut (push-relabel maximum flow, which by max-flow
// min-cut is the capacity of the narrowest cut between the two sides).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "models/network/fabric.h"
#include "sim/config/units.h"

namespace gcsim::topologies {

// nullopt when every GPU reaches every other over usable links (any node may
// relay, GPUs included: a GPU forwarding over NVLink to its neighbour's NIC
// is how multi-plane fabrics cross planes); else a sentence naming a GPU cut off.
std::optional<std::string> unreachable_gpu(const models::network::Fabric& fabric);

// nullopt when every NIC has a cable to a switch and all NICs are joined
// through switches alone; else a sentence naming the NIC left out.
std::optional<std::string> stranded_nic(const models::network::Fabric& fabric);

// The most traffic GPUs `from` can send to GPUs `to` at once over usable
// links at their effective bandwidth (a fluid maximum flow).
sim::Bandwidth cut_bandwidth(const models::network::Fabric& fabric, const std::vector<int>& from,
                             const std::vector<int>& to);

// cut_bandwidth from the GPUs of hosts [0, H/2) to those of [H/2, H): the
// bisection bandwidth of the usual half-and-half cut, one direction. Needs
// at least two hosts.
sim::Bandwidth bisection_bandwidth(const models::network::Fabric& fabric);

}  // namespace gcsim::topologies
