// The one interface the three network models (analytical, flow, packet)
// share. A model moves a Transfer — bytes from one GPU to another — over
// the Fabric and calls back when its last byte has arrived. Collectives are
// built from transfers; the models know nothing of collectives.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "models/network/alpha_beta.h"
#include "models/network/fabric.h"
#include "models/network/routing.h"
#include "sim/engine/simulator.h"
#include "sim/engine/time.h"
#include "sim/config/units.h"

namespace gcsim::models::network {

enum class RoutingPolicy : uint8_t {
  ecmp,      // one path per flow, by 5-tuple hash
  spray,     // per-packet round robin over every equal-cost hop
  adaptive,  // per hop, the least-loaded equal-cost link
};

struct Transfer {
  int src_rank = 0;
  int dst_rank = 0;
  sim::Bytes bytes;
  uint32_t qp = 0;    // queue pair / UDP source port: part of the ECMP hash
  int priority = 0;   // traffic class (PFC priority), 0..7
};

// Called once, when the transfer's last byte reaches the destination GPU.
using TransferDone = std::function<void()>;

// Where some traffic's bytes go: bytes on each link and delivered bytes
// per unit of `scale` (the message size), and how many transfers it is.
struct LinkFootprint {
  std::vector<std::pair<LinkId, double>> per_link;  // ascending link id
  double delivered = 0.0;
  int64_t transfers = 0;
};

// Per-link figures for the report and the trace.
struct LinkLoad {
  LinkId link = kNoLink;
  std::string name;
  sim::Bytes bytes;          // carried over the run
  double utilization = 0.0;  // bytes / (bandwidth × simulated time)
  double pfc_pause_s = 0.0;  // time this link's sender was paused (packet model)
};

// A transfer that found no path: the fabric was cut between its endpoints
// by link faults. Kept so that the run can name who could not reach whom
// and which links were down, instead of a bare deadlock.
struct UnroutableTransfer {
  int src_rank = 0;
  int dst_rank = 0;
  sim::Bytes bytes;
  sim::Time when;                   // when it found no path (start or reroute)
  std::vector<LinkId> down_links;   // every link down at that moment, ascending id
};

struct NetworkStats {
  std::string model;
  sim::Bytes bytes_delivered;     // payload that reached its destination GPU
  int64_t transfers = 0;          // completed
  double max_link_utilization = 0.0;
  double pfc_pause_time_s = 0.0;  // summed over paused ports (packet model)
  int64_t pfc_pauses = 0;         // Xoff frames sent (packet model)
  int64_t ecn_marks = 0;          // packets marked CE (packet model)
  int64_t drops = 0;              // packets dropped (0 with PFC and enough headroom)
  int64_t deadlocks = 0;          // cycles of paused ports found (packet model)
  int64_t reroutes = 0;           // flows moved off a link that went down
  int64_t unroutable = 0;         // transfers with no path (a partitioned fabric)
  std::vector<UnroutableTransfer> unroutable_transfers;  // the first few, in time order
  std::vector<LinkLoad> busiest_links;  // most loaded first, at most 10
};

// Trace counters: a link's utilization (0..1) or queue depth (bytes)
// changed at `when`. Models call it only for links a caller asked about.
struct LinkCounterSample {
  LinkId link = kNoLink;
  sim::Time when;
  double utilization = 0.0;
  int64_t queue_bytes = 0;
};
using LinkCounterListener = std::function<void(const LinkCounterSample&)>;

class NetworkModel {
 public:
  virtual ~NetworkModel() = default;

  // Starts moving `t` now. `done` runs at the simulated time its last byte
  // arrives. A transfer between a rank and itself completes at once. A
  // transfer with no path counts as unroutable and never completes (the
  // replayer then reports a deadlock naming the waiting ops).
  virtual void start(const Transfer& t, TransferDone done) = 0;

  // Traffic a closed form timed (the analytical model's collectives: see
  // collective_traffic in alpha_beta.h) is counted on the links, so that
  // link utilization covers all traffic; nothing moves and nothing is
  // called back. The footprint says where each (src, dst) pair's bytes go
  // (its ECMP path; an unreachable pair counts nowhere); a caller keeps it
  // for a group that repeats, and counts it scaled to each message size.
  virtual LinkFootprint closed_form_footprint(const std::vector<RankTraffic>& traffic) const = 0;
  virtual void count_closed_form(const LinkFootprint& footprint, double scale) = 0;

  // A link's state changed in the Fabric (a fault): reroute what used it,
  // rescale what crosses it.
  virtual void on_link_state_changed(LinkId link) = 0;

  // Totals so far; `elapsed` is the simulated time to divide by for
  // utilization.
  virtual NetworkStats stats(sim::Duration elapsed) const = 0;

  virtual void set_counter_listener(LinkCounterListener l) { counters_ = std::move(l); }

 protected:
  LinkCounterListener counters_;
};

}  // namespace gcsim::models::network
