// network.model: packet. Transfers are cut into packets of `mtu` bytes that
// cross the Fabric store-and-forward: each hop serializes a packet at the
// link's effective bandwidth, then it arrives one link latency later. Every
// link's sender has eight priority queues (EgressPort); every forwarding
// node (switch, NIC, NVSwitch) has a shared buffer with dynamic thresholds
// (SwitchBuffer), PFC per ingress port and priority with headroom
// (PfcIngress), and network switches mark ECN (EcnMarker). Sending NICs rate
// limit each flow with DCQCN (DcqcnRateControl). Paths: ECMP per flow
// (Routing::hash_at per switch), per-packet round-robin spraying, or
// adaptive (least queued bytes among the equal-cost next hops).
//
// Modelling choices (see PacketConfig for every default and its source):
// - A flow's packets are made when its first link is free to send them;
//   sources hold no queue. Flows sharing a GPU port take turns per packet.
// - CNPs and acknowledgements are not packets: a CNP reaches the sender one
//   path latency after the marked packet arrives.
// - Without PFC a packet that does not fit is dropped and resent `rto` after
//   it was first sent, alone (selective repeat, as IRN); the receiver keeps
//   out-of-order packets. Senders learn of a loss only by the timer.
// - A link that goes down loses the packets on its wire (resent after the
//   timeout; drops counts every lost packet, overflow or link failure); packets queued for it are rerouted at once
//   at the node that holds them; ECMP flows crossing it take their new path
//   (counted in reroutes).
// - PFC pause statistics count pauses on network links; NVLink and PCIe
//   links use the same mechanism as their credit-based flow control, and
//   their pauses show only in each link's pfc_pause_s.
// - A PFC deadlock (a cycle of paused ports) is counted and reported; its
//   packets stay stuck, so the transfers through it never complete and the
//   simulator runs out of events instead of spinning.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "models/network/link_ledger.h"
#include "models/network/unroutable_log.h"
#include "models/network/network_model.h"
#include "models/network/packet/dcqcn.h"
#include "models/network/packet/deadlock_detector.h"
#include "models/network/packet/ecn_marker.h"
#include "models/network/packet/egress_port.h"
#include "models/network/packet/next_hop_cache.h"
#include "models/network/packet/packet.h"
#include "models/network/packet/packet_config.h"
#include "models/network/packet/pfc.h"
#include "models/network/packet/switch_buffer.h"
#include "sim/engine/random.h"

namespace gcsim::models::network {

class PacketModel : public NetworkModel, private sim::EventHandler {
 public:
  PacketModel(sim::Simulator& sim, Fabric& fabric, const Routing& routing,
              PacketConfig config = {}, RoutingPolicy policy = RoutingPolicy::ecmp);
  PacketModel(const PacketModel&) = delete;
  PacketModel& operator=(const PacketModel&) = delete;

  void start(const Transfer& t, TransferDone done) override;
  void on_link_state_changed(LinkId link) override;
  NetworkStats stats(sim::Duration elapsed) const override;
  LinkFootprint closed_form_footprint(const std::vector<RankTraffic>& traffic) const override {
    return footprint_of(routing_, traffic);
  }
  void count_closed_form(const LinkFootprint& footprint, double scale) override;
  void set_counter_listener(LinkCounterListener l) override;

  // One PFC deadlock: the ports (link names, sender side) of a cycle of
  // paused ports, in wait order, and the priority they are paused on.
  struct Deadlock {
    sim::Time detected_at;
    int priority = 0;
    std::vector<std::string> ports;
  };
  const std::vector<Deadlock>& deadlocks() const { return deadlocks_; }

  // A flow in progress, for tests and reports.
  struct FlowState {
    int src_rank = 0;
    int dst_rank = 0;
    uint32_t qp = 0;
    int64_t bytes = 0;
    int64_t delivered = 0;
    bool rate_controlled = false;  // DCQCN limits it
    double rate_bytes_per_s = 0.0;  // DCQCN's current rate (when rate controlled)
    int64_t cnps = 0;               // CNPs it has received
  };
  std::vector<FlowState> active_flows() const;

  // Packets serialized onto links so far: the unit of the speed figure.
  uint64_t packet_hops() const { return packet_hops_; }
  // Bytes queued at a link's sender, all priorities, the one on the wire included.
  int64_t queued_bytes(LinkId l) const;
  // PFC headroom reserved at a link's receiving end (0 at GPUs).
  int64_t headroom(LinkId l) const { return headroom_[static_cast<size_t>(l)]; }
  // Time a link's sender has spent paused, summed over priorities, seconds.
  double pause_seconds(LinkId l) const;
  const PacketConfig& config() const { return cfg_; }

 private:
  // Per-flow state: the transfer, its sender's DCQCN limiter, its packets.
  struct Flow {
    Transfer transfer;
    TransferDone done;
    FlowKey key;
    NodeId src_node = kNoNode;
    NodeId dst_node = kNoNode;
    std::vector<LinkId> path;  // its ECMP path (forwarding under ecmp; feedback delay always)
    int64_t total_bytes = 0;
    uint32_t packets = 0;    // packets it is cut into
    uint32_t next_seq = 0;   // first packet never sent
    uint32_t arrived = 0;    // packets delivered
    int64_t delivered = 0;   // bytes delivered
    PacketFifo retransmit;   // lost packets waiting to be resent
    DcqcnRateControl cc;
    bool rate_controlled = false;
    bool ecn_capable = false;  // crosses network links
    sim::Time next_send;       // pacing: the earliest start of its next packet
    double paced_rate = 0.0;   // the rate paced_mtu_ps was computed for, bytes/s
    int64_t paced_mtu_ps = 0;  // pacing gap after a full packet
    sim::Time last_send;
    sim::Duration feedback_delay;  // a CNP's trip back to the sender
    sim::Time last_cnp;
    bool cnp_sent = false;
    int64_t cnps = 0;
    uint32_t generation = 0;  // bumped when the slot is freed: stale events see it
    uint32_t ready_next = UINT32_MAX;
    bool active = false;
    bool ready = false;    // in a source port's ready list
    bool waiting = false;  // a pacing wake-up is scheduled
  };

  // What forwarding reads of a flow at every hop, packed in one cache line
  // apart from the rest: its destination and its ECMP path (inline when it
  // has at most kInlineHops links; longer paths are hashed hop by hop).
  static constexpr int kInlineHops = 10;
  struct FlowRoute {
    NodeId dst_node = kNoNode;
    uint8_t hops = 0;
    bool ecn_capable = false;
    std::array<LinkId, kInlineHops> path{};
  };

  // A GPU's side of one of its links: flows ready to send, per priority,
  // linked through Flow::ready_next.
  struct SourceQueue {
    std::array<uint32_t, kPriorities> head;
    std::array<uint32_t, kPriorities> tail;
    uint8_t nonempty = 0;
    uint8_t last = kPriorities - 1;
    SourceQueue() {
      head.fill(UINT32_MAX);
      tail.fill(UINT32_MAX);
    }
  };

  // What the per-packet path needs of a link, packed.
  struct LinkInfo {
    NodeId from = kNoNode;
    NodeId to = kNoNode;
    int64_t latency_ps = 0;
    int64_t mtu_ser_ps = 0;  // serialization of one full packet at the effective bandwidth
    sim::Bandwidth bandwidth;  // effective
    uint16_t gen = 0;        // bumped when the link goes down
    bool usable = true;
    bool network = false;    // LinkKind::network
    bool from_gpu = false;   // a source port
    bool marks_ecn = false;  // sender is a network switch
  };

  void handle_event(uint64_t tag) override;
  void on_port_free(LinkId l);
  void on_arrive(uint32_t packet);
  // A packet that arrived through `in` at a switch joins the queue of `out`
  // (PFC admission or drop, ECN marking) and the port starts if free.
  void arrive_at_port(uint32_t packet, LinkId in, LinkId out);
  void on_pause(LinkId l, int priority, bool on);
  void on_flow_wake(uint32_t flow, uint32_t generation);
  void on_cnp(uint32_t flow, uint32_t generation);
  void on_retransmit(uint32_t packet);
  void on_deadlock_check();
  void on_counter_tick();

  void refresh_link(LinkId l);
  void try_start(LinkId l);
  void transmit(LinkId l, uint32_t packet);
  // Trains (network.trains): how many full packets flow `id` sends as one
  // train on its source link `l` now (1: a plain packet); whether a train
  // may cross port `l` whole now (free, nothing queued, not paused, its
  // node's shared buffer empty); and
  // cutting a train's first packet off where it may not (the rest arrives
  // one spacing later). `hop_before` is the train's hop index on arrival.
  uint32_t train_length(const Flow& f, uint32_t id, LinkId l, int priority) const;
  bool train_passes(LinkId l, int priority) const;
  uint32_t cut_first_packet(uint32_t train, uint16_t hop_before);
  bool has_waiting(LinkId l) const;
  uint32_t next_source_packet(LinkId l);
  void after_source_send(uint32_t flow, uint32_t bytes);
  void make_ready(uint32_t flow);
  LinkId first_hop(Flow& f);
  // Spraying or adaptive routing's pick among the next hops `e` (kNoLink if
  // none): round-robin, or the port with the least queued.
  LinkId spray_or_adaptive(NextHopCache::Entry& e);
  LinkId route(Packet& p, NodeId at);
  void deliver(uint32_t packet);
  void lose(uint32_t packet);
  void release_from_node(NodeId node, const Packet& p);
  void send_pause(LinkId ingress, int priority, bool on);
  void arm_deadlock_check();
  void arm_counter_tick();
  void touch(LinkId l);
  void schedule_wake(uint32_t flow);
  void set_path(uint32_t flow, std::vector<LinkId> path);
  bool has_data(const Flow& f) const { return f.next_seq < f.packets || !f.retransmit.empty(); }
  uint32_t packet_bytes(const Flow& f, uint32_t seq) const;
  double open_pause_ps(LinkId l) const;

  sim::Simulator& sim_;
  Fabric& fabric_;
  const Routing& routing_;
  const PacketConfig cfg_;
  const RoutingPolicy policy_;
  const int64_t mtu_;

  std::vector<LinkInfo> links_;
  std::vector<EgressPort> ports_;
  std::vector<int32_t> source_index_;  // link -> index into sources_, -1 unless from a GPU
  std::vector<SourceQueue> sources_;
  std::vector<uint8_t> is_gpu_;        // per node
  std::vector<SwitchBuffer> buffers_;  // per node (unused at GPUs)
  std::vector<int64_t> headroom_;      // per link, at its receiving end
  PfcIngress pfc_;
  EcnMarker ecn_;
  sim::RandomStream rng_;
  NextHopCache hops_;
  PacketPool pool_;
  std::vector<Flow> flows_;
  std::vector<FlowRoute> routes_;  // per flow slot
  std::vector<uint32_t> free_flows_;
  size_t active_flows_ = 0;

  // Pause bookkeeping, per link × priority and per link.
  std::vector<int64_t> pause_since_ps_;
  std::vector<int64_t> pause_total_ps_;

  // Deadlock detection.
  bool deadlock_check_armed_ = false;
  uint64_t hops_at_last_check_ = 0;
  std::vector<std::vector<WaitPort>> reported_cycles_;  // each sorted, to report a cycle once
  std::vector<Deadlock> deadlocks_;

  // Trace counters (only with a listener).
  bool counter_tick_armed_ = false;
  std::vector<int64_t> interval_bytes_;
  std::vector<int64_t> last_queue_sample_;
  std::vector<uint8_t> touched_;       // per link: in touched_links_
  std::vector<LinkId> touched_links_;  // enqueued or sent since the last sample
  std::vector<LinkId> queued_links_;   // held a queue at the last sample

  LinkLedger ledger_;
  uint64_t packet_hops_ = 0;
  sim::Bytes bytes_delivered_;
  int64_t transfers_ = 0;
  int64_t pfc_pauses_ = 0;
  int64_t ecn_marks_ = 0;
  int64_t drops_ = 0;
  int64_t reroutes_ = 0;
  UnroutableLog unroutable_;
};

}  // namespace gcsim::models::network
