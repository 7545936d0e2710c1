// PFC deadlock detection: a cycle in the wait-for graph of paused ports. A
// paused egress port A waits on port B when the ingress whose Xoff paused A
// holds packets queued at B, and B is paused too; a cycle of such waits
// never drains (Hu et al., "Deadlocks in Datacenter Networks: Why Do They
// Form, and How to Avoid Them", HotNets 2016).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace gcsim::models::network {

// A port of the wait-for graph: a link's egress and a priority.
struct WaitPort {
  int32_t link = -1;
  int priority = 0;
  auto operator<=>(const WaitPort&) const = default;
};

// One cycle per strongly connected component that holds a cycle (a
// component of two or more ports, or a port waiting on itself), each
// listed in wait order starting from its smallest port; components in
// ascending order of that port. Deterministic for a given edge set.
std::vector<std::vector<WaitPort>> find_wait_cycles(
    const std::vector<std::pair<WaitPort, WaitPort>>& waits_on);

}  // namespace gcsim::models::network
