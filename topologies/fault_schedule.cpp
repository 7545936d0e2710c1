#include "topologies/fault_schedule.h"

#include "sim/config/did_you_mean.h"
#include "topologies/topology_error.h"

namespace gcsim::topologies {

using models::network::Fabric;
using models::network::kNoLink;
using models::network::LinkId;

std::vector<LinkId> fault_links(const Fabric& fabric, const std::string& link) {
  const size_t cable = link.find("<->");
  const bool both = cable != std::string::npos;
  const std::string name = both ? link.substr(0, cable) + "->" + link.substr(cable + 3) : link;
  const LinkId id = fabric.find_link(name);
  if (id != kNoLink) {
    if (both) return {id, Fabric::reverse(id)};
    return {id};
  }
  // Suggest among link names (a cable's spelling for a cable).
  std::vector<std::string> names;
  names.reserve(fabric.num_links());
  for (size_t l = 0; l < fabric.num_links(); ++l) {
    std::string n = fabric.link(static_cast<LinkId>(l)).name;
    if (both) n.replace(n.find("->"), 2, "<->");
    names.push_back(std::move(n));
  }
  std::string why = "the fabric has no " + std::string(both ? "cable '" : "link '") + link + "'" +
                    sim::config::did_you_mean(link, names);
  if (link.find("->") == std::string::npos) {
    why += " (write one direction as \"leaf0->spine1\" or the cable as \"leaf0<->spine1\")";
  } else {
    why += " (nodes are named like node3/nic5, leaf12, spine0, core1, p1/leaf0)";
  }
  throw TopologyError("link", why);
}

void schedule_faults(sim::Simulator& sim, Fabric& fabric, models::network::NetworkModel& model,
                     const std::vector<FaultSpec>& faults) {
  for (const FaultSpec& f : faults) {
    std::vector<LinkId> links = fault_links(fabric, f.link);
    auto apply = [&fabric, &model, links = std::move(links), f] {
      for (LinkId l : links) fabric.set_link_state(l, f.state, f.bandwidth_fraction);
      for (LinkId l : links) model.on_link_state_changed(l);
    };
    // A fault at the current time (`at: 0s`) is in place before anything
    // starts: the replayer issues the first ops before the event loop runs.
    if (f.at <= sim.now()) {
      apply();
    } else {
      sim.call_at(f.at, std::move(apply));
    }
  }
}

}  // namespace gcsim::topologies
