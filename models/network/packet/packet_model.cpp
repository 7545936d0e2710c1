#include "models/network/packet/packet_model.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace gcsim::models::network {

namespace {

// An event's tag: its kind in the top bits, its subject below.
enum Kind : uint64_t {
  kPortFree = 1,   // a busy link's serializer is free and packets wait; payload: link
  kArrive,         // a packet reached the far end of its link; payload: packet
  kPause,          // a PFC frame reached the upstream port; payload: link, priority, on
  kFlowWake,       // a paced flow may send again; payload: flow, generation
  kCnp,            // a CNP reached the sender; payload: flow, generation
  kRetransmit,     // a lost packet's timer fired; payload: packet
  kDeadlockCheck,  // search paused ports for a cycle
  kCounterTick,    // sample trace counters
};
constexpr int kKindShift = 59;
constexpr uint64_t kPayloadMask = (uint64_t{1} << kKindShift) - 1;

uint64_t tag_of(Kind k, uint64_t payload) { return (static_cast<uint64_t>(k) << kKindShift) | payload; }
uint64_t flow_payload(uint32_t flow, uint32_t generation) {
  return (static_cast<uint64_t>(generation & 0x7FFFFFF) << 32) | flow;
}
uint64_t pause_payload(LinkId l, int priority, bool on) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(l)) << 4) |
         (static_cast<uint64_t>(priority) << 1) | (on ? 1u : 0u);
}

bool is_forwarding(NodeKind k) { return k != NodeKind::gpu; }

}  // namespace

PacketModel::PacketModel(sim::Simulator& sim, Fabric& fabric, const Routing& routing,
                         PacketConfig config, RoutingPolicy policy)
    : sim_(sim),
      fabric_(fabric),
      routing_(routing),
      cfg_(std::move(config)),
      policy_(policy),
      mtu_(cfg_.mtu.count()),
      ecn_(cfg_.ecn),
      rng_(sim.random_stream("network/packet/ecn")),
      hops_(routing),
      ledger_(fabric) {
  if (mtu_ <= 0) throw std::invalid_argument("packet model: mtu must be positive");
  if (cfg_.pfc.enabled && !(cfg_.pfc.xon <= cfg_.pfc.xoff && cfg_.pfc.xoff.count() > 0)) {
    throw std::invalid_argument("packet model: PFC needs 0 < xon <= xoff");
  }
  const size_t nl = fabric.num_links(), nn = fabric.num_nodes();
  links_.resize(nl);
  ports_.resize(nl);
  source_index_.assign(nl, -1);
  headroom_.assign(nl, 0);
  pause_since_ps_.assign(nl * kPriorities, 0);
  pause_total_ps_.assign(nl, 0);
  is_gpu_.resize(nn);
  for (size_t n = 0; n < nn; ++n) {
    is_gpu_[n] = fabric.node(static_cast<NodeId>(n)).kind == NodeKind::gpu;
  }
  std::vector<int64_t> headroom_in(nn, 0);  // per node, reserved over its ingress ports
  for (size_t i = 0; i < nl; ++i) {
    const auto l = static_cast<LinkId>(i);
    const Link& link = fabric.link(l);
    LinkInfo& info = links_[i];
    info.from = link.from;
    info.to = link.to;
    info.network = link.kind == LinkKind::network;
    info.from_gpu = is_gpu_[static_cast<size_t>(link.from)];
    info.marks_ecn = fabric.node(link.from).kind == NodeKind::network_switch;
    refresh_link(l);
    if (info.from_gpu) {
      source_index_[i] = static_cast<int32_t>(sources_.size());
      sources_.emplace_back();
    }
    if (cfg_.pfc.enabled && is_forwarding(fabric.node(link.to).kind)) {
      int64_t h;
      if (cfg_.pfc.headroom) {
        h = cfg_.pfc.headroom->count();
      } else {
        // Bytes one link delay holds at the nominal rate.
        const double wire = link.bandwidth.bytes_per_s() * link.latency.seconds();
        h = static_cast<int64_t>(std::ceil(std::max(3.0 * wire, 2.0 * wire + 2.0 * static_cast<double>(mtu_))));
      }
      headroom_[i] = h;
      headroom_in[static_cast<size_t>(link.to)] += h;
    }
  }
  buffers_.resize(nn);
  for (size_t n = 0; n < nn; ++n) {
    if (!is_gpu_[n]) buffers_[n] = SwitchBuffer(cfg_.buffer.count() - headroom_in[n]);
  }
  if (cfg_.pfc.enabled) {
    pfc_ = PfcIngress(headroom_, {cfg_.pfc.xoff.count(), cfg_.pfc.xon.count(), cfg_.dt_alpha});
  }
}

void PacketModel::refresh_link(LinkId l) {
  const Link& link = fabric_.link(l);
  LinkInfo& info = links_[static_cast<size_t>(l)];
  const bool was_usable = info.usable;
  info.usable = link.usable();
  if (was_usable && !info.usable) ++info.gen;
  info.latency_ps = link.latency.ps();
  info.bandwidth = link.effective_bandwidth();
  info.mtu_ser_ps = sim::transfer_time(cfg_.mtu, info.bandwidth).ps();
}

// ---------------------------------------------------------------- transfers

void PacketModel::start(const Transfer& t, TransferDone done) {
  if (t.src_rank == t.dst_rank) {
    sim_.call_in(sim::Duration::zero(), std::move(done));
    return;
  }
  if (t.priority < 0 || t.priority >= kPriorities) {
    throw std::invalid_argument("packet model: a transfer's priority lies in 0..7");
  }
  if (t.bytes.count() < 0) throw std::invalid_argument("packet model: negative transfer size");
  const FlowKey key{t.src_rank, t.dst_rank, t.qp};
  std::vector<LinkId> path = routing_.ecmp_path(key);
  if (path.empty()) {
    unroutable_.record(fabric_, t.src_rank, t.dst_rank, t.bytes, sim_.now());
    return;
  }
  uint32_t id;
  if (!free_flows_.empty()) {
    id = free_flows_.back();
    free_flows_.pop_back();
  } else {
    id = static_cast<uint32_t>(flows_.size());
    flows_.emplace_back();
    routes_.emplace_back();
  }
  Flow& f = flows_[id];
  const uint32_t generation = f.generation;
  f = Flow{};
  f.generation = generation;
  f.transfer = t;
  f.done = std::move(done);
  f.key = key;
  f.src_node = fabric_.gpu_node(t.src_rank);
  f.dst_node = fabric_.gpu_node(t.dst_rank);
  f.total_bytes = t.bytes.count();
  const int64_t n = (f.total_bytes + mtu_ - 1) / mtu_;
  if (n >= int64_t{UINT32_MAX}) throw std::invalid_argument("packet model: transfer too large");
  f.packets = static_cast<uint32_t>(std::max<int64_t>(1, n));  // an empty transfer is one empty packet
  f.feedback_delay = routing_.latency(path);
  for (LinkId l : path) {
    if (fabric_.link(l).kind != LinkKind::network) continue;
    f.ecn_capable = true;
    if (cfg_.dcqcn.enabled && !f.rate_controlled) {
      // The line rate is the sending NIC's: the first network link.
      f.rate_controlled = true;
      f.cc = DcqcnRateControl(cfg_.dcqcn, fabric_.link(l).bandwidth.bytes_per_s(), sim_.now());
    }
  }
  routes_[id].dst_node = f.dst_node;
  routes_[id].ecn_capable = f.ecn_capable;
  set_path(id, std::move(path));
  f.next_send = sim_.now();
  f.active = true;
  ++active_flows_;
  if (counters_) arm_counter_tick();
  make_ready(id);
}

void PacketModel::set_path(uint32_t id, std::vector<LinkId> path) {
  FlowRoute& fr = routes_[id];
  fr.hops = 0;
  if (path.size() <= static_cast<size_t>(kInlineHops)) {
    std::copy(path.begin(), path.end(), fr.path.begin());
    fr.hops = static_cast<uint8_t>(path.size());
  }
  flows_[id].path = std::move(path);
}

uint32_t PacketModel::packet_bytes(const Flow& f, uint32_t seq) const {
  if (seq + 1 < f.packets) return static_cast<uint32_t>(mtu_);
  return static_cast<uint32_t>(f.total_bytes - static_cast<int64_t>(f.packets - 1) * mtu_);
}

LinkId PacketModel::first_hop(Flow& f) {
  if (policy_ == RoutingPolicy::ecmp) {
    if (f.path.empty() || !links_[static_cast<size_t>(f.path.front())].usable) return kNoLink;
    return f.path.front();
  }
  return spray_or_adaptive(hops_.lookup(f.src_node, f.transfer.dst_rank));
}

LinkId PacketModel::spray_or_adaptive(NextHopCache::Entry& e) {
  if (e.links.empty()) return kNoLink;
  if (policy_ == RoutingPolicy::spray) return e.links[e.cursor++ % e.links.size()];
  // Adaptive: an idle port first, then the one with the least queued.
  LinkId best = e.links.front();
  int64_t best_load = INT64_MAX;
  for (LinkId l : e.links) {
    const int64_t load = queued_bytes(l);
    if (load < best_load) {
      best = l;
      best_load = load;
    }
  }
  return best;
}

void PacketModel::make_ready(uint32_t id) {
  Flow& f = flows_[id];
  if (!f.active || f.ready || f.waiting || !has_data(f)) return;
  const LinkId l = first_hop(f);
  if (l == kNoLink) return;  // partitioned: a link coming up re-readies it
  SourceQueue& q = sources_[static_cast<size_t>(source_index_[static_cast<size_t>(l)])];
  const int p = f.transfer.priority;
  f.ready = true;
  f.ready_next = UINT32_MAX;
  if (q.tail[static_cast<size_t>(p)] == UINT32_MAX) {
    q.head[static_cast<size_t>(p)] = id;
  } else {
    flows_[q.tail[static_cast<size_t>(p)]].ready_next = id;
  }
  q.tail[static_cast<size_t>(p)] = id;
  q.nonempty |= static_cast<uint8_t>(1u << p);
  try_start(l);
}

void PacketModel::schedule_wake(uint32_t id) {
  Flow& f = flows_[id];
  f.waiting = true;
  sim_.schedule_at(f.next_send, *this, tag_of(kFlowWake, flow_payload(id, f.generation)));
}

// ---------------------------------------------------------------- links

bool PacketModel::has_waiting(LinkId l) const {
  const EgressPort& port = ports_[static_cast<size_t>(l)];
  const int32_t si = source_index_[static_cast<size_t>(l)];
  if (si < 0) return port.waiting() != 0;
  return (sources_[static_cast<size_t>(si)].nonempty & static_cast<uint8_t>(~port.paused_mask())) != 0;
}

void PacketModel::try_start(LinkId l) {
  EgressPort& port = ports_[static_cast<size_t>(l)];
  const LinkInfo& info = links_[static_cast<size_t>(l)];
  if (!info.usable) return;
  if (sim_.now().ps() < port.busy_until_ps()) {
    // Serializing: come back when it is done, if anything waits.
    if (!port.wake_pending() && has_waiting(l)) {
      port.set_wake_pending(true);
      sim_.schedule_at(sim::Time::from_ps(port.busy_until_ps()), *this,
                       tag_of(kPortFree, static_cast<uint64_t>(l)));
    }
    return;
  }
  const bool source = info.from_gpu;
  const uint32_t pk = source ? next_source_packet(l) : port.dequeue(pool_);
  if (pk == kNilPacket) return;
  transmit(l, pk);
}

void PacketModel::transmit(LinkId l, uint32_t pk) {
  EgressPort& port = ports_[static_cast<size_t>(l)];
  const LinkInfo& info = links_[static_cast<size_t>(l)];
  Packet& p = pool_[pk];
  // It leaves its node's buffer as it starts serializing (the ingress it
  // came through may now resume its upstream); a train passing a free
  // port never entered it.
  if (!info.from_gpu) {
    if (p.flags & Packet::kUnbuffered) {
      p.flags &= static_cast<uint8_t>(~Packet::kUnbuffered);
    } else {
      release_from_node(info.from, p);
    }
  }
  p.link = l;
  p.in_link = l;  // its ingress at the next node
  p.link_gen = info.gen;
  const int64_t now = sim_.now().ps();
  int64_t free_at;  // when the serializer is done with it
  int64_t arrive;   // when its arrival event fires at the next node
  if (p.count > 1) {
    // A train of full packets: the first leaves one serialization from
    // now; each later one leaves one spacing after the one before, the
    // spacing being the slower of this link's serialization and the gap
    // they arrived with. The destination takes it when its last packet is
    // in; a switch takes it as its first packet arrives.
    const int64_t ser = info.mtu_ser_ps;
    const int64_t spacing = std::max(ser, p.spacing_ps);
    const int64_t rest = static_cast<int64_t>(p.count - 1) * spacing;
    p.spacing_ps = spacing;
    free_at = now + ser + rest;
    arrive = now + ser + info.latency_ps + (info.to == routes_[p.flow].dst_node ? rest : 0);
    port.start(free_at, static_cast<uint32_t>(mtu_));  // one packet serializes at a time
  } else {
    const int64_t ser = p.bytes == static_cast<uint32_t>(mtu_)
                            ? info.mtu_ser_ps
                            : sim::transfer_time(sim::Bytes(p.bytes), info.bandwidth).ps();
    free_at = now + ser;
    // Store and forward: the next node has all of it one serialization and
    // one link latency from now.
    arrive = free_at + info.latency_ps;
    port.start(free_at, p.bytes);
  }
  ledger_.add(l, static_cast<double>(p.bytes));
  packet_hops_ += p.count;
  if (counters_) {
    touch(l);
    interval_bytes_[static_cast<size_t>(l)] += p.bytes;
  }
  sim_.schedule_at(sim::Time::from_ps(arrive), *this, tag_of(kArrive, pk));
  if (info.from_gpu) after_source_send(p.flow, p.bytes);
  if (!port.wake_pending() && has_waiting(l)) {
    port.set_wake_pending(true);
    sim_.schedule_at(sim::Time::from_ps(free_at), *this, tag_of(kPortFree, static_cast<uint64_t>(l)));
  }
}

uint32_t PacketModel::train_length(const Flow& f, uint32_t id, LinkId l, int priority) const {
  // Lossless fabrics and ECMP only: without PFC a train's passage changes
  // which packets a full buffer drops, and each drop costs a timeout; sprayed
  // and adaptive routing choose per packet.
  if (!cfg_.trains.enabled || !cfg_.pfc.enabled || policy_ != RoutingPolicy::ecmp) return 1;
  // Full packets only (the last, short one goes alone), at least two.
  const int64_t full = f.total_bytes / mtu_;
  const int64_t left = full - static_cast<int64_t>(f.next_seq);
  if (left < 2) return 1;
  // DCQCN has cut it: the fabric is congested, and pacing spaces packets.
  if (f.rate_controlled && f.cc.rate() < f.cc.line_rate()) return 1;
  const FlowRoute& fr = routes_[id];
  if (fr.hops == 0 || fr.path[0] != l) return 1;
  // Flows sharing the port take turns per train instead of per packet: only
  // among flows on the same path (a ring's channels), whose turns load the
  // same links; flows to other places would see bursts where they meet.
  const SourceQueue& q = sources_[static_cast<size_t>(source_index_[static_cast<size_t>(l)])];
  if ((q.nonempty & ~(1u << priority)) != 0) return 1;
  for (uint32_t o = q.head[static_cast<size_t>(priority)]; o != UINT32_MAX; o = flows_[o].ready_next) {
    const FlowRoute& other = routes_[o];
    if (other.hops != fr.hops || !std::equal(fr.path.begin(), fr.path.begin() + fr.hops, other.path.begin())) {
      return 1;
    }
  }
  for (uint8_t h = 0; h < fr.hops; ++h) {
    const LinkId hop = fr.path[h];
    const EgressPort& port = ports_[static_cast<size_t>(hop)];
    if (port.queued_mask() != 0 || port.paused(priority)) return 1;
    if (h > 0 && buffers_[static_cast<size_t>(links_[static_cast<size_t>(hop)].from)].used() != 0) {
      return 1;
    }
  }
  return static_cast<uint32_t>(std::min<int64_t>(left, cfg_.trains.packets));
}

bool PacketModel::train_passes(LinkId l, int priority) const {
  const EgressPort& port = ports_[static_cast<size_t>(l)];
  const LinkInfo& info = links_[static_cast<size_t>(l)];
  return info.usable && sim_.now().ps() >= port.busy_until_ps() && port.queued_mask() == 0 &&
         !port.paused(priority) && buffers_[static_cast<size_t>(info.from)].used() == 0;
}

uint32_t PacketModel::cut_first_packet(uint32_t train, uint16_t hop_before) {
  const uint32_t first = pool_.allocate();  // may move the pool: no references before it
  Packet& t = pool_[train];
  Packet& p = pool_[first];
  p = t;  // routed already: its hop is the next node's
  p.next = kNilPacket;
  p.count = 1;
  p.bytes = static_cast<uint32_t>(mtu_);
  p.spacing_ps = 0;
  t.hop = hop_before;  // the rest still arrives here
  ++t.seq;
  --t.count;
  t.bytes -= static_cast<uint32_t>(mtu_);
  sim_.schedule_at(sim_.now() + sim::Duration::from_ps(t.spacing_ps), *this, tag_of(kArrive, train));
  return first;
}

void PacketModel::on_port_free(LinkId l) {
  ports_[static_cast<size_t>(l)].set_wake_pending(false);
  try_start(l);
}

uint32_t PacketModel::next_source_packet(LinkId l) {
  SourceQueue& q = sources_[static_cast<size_t>(source_index_[static_cast<size_t>(l)])];
  const int prio = next_priority_round_robin(
      q.nonempty & static_cast<uint8_t>(~ports_[static_cast<size_t>(l)].paused_mask()), q.last);
  if (prio < 0) return kNilPacket;
  const auto ps = static_cast<size_t>(prio);
  q.last = static_cast<uint8_t>(prio);
  const uint32_t id = q.head[ps];
  Flow& f = flows_[id];
  q.head[ps] = f.ready_next;
  if (q.head[ps] == UINT32_MAX) {
    q.tail[ps] = UINT32_MAX;
    q.nonempty &= static_cast<uint8_t>(~(1u << prio));
  }
  f.ready = false;
  uint32_t pk;
  if (!f.retransmit.empty()) {
    pk = f.retransmit.pop(pool_);
    Packet& p = pool_[pk];
    p.flags = 0;
  } else {
    pk = pool_.allocate();
    Packet& p = pool_[pk];
    p.flow = id;
    p.seq = f.next_seq;
    const uint32_t n = train_length(f, id, l, prio);
    p.count = static_cast<uint16_t>(n);
    p.bytes = n > 1 ? n * static_cast<uint32_t>(mtu_) : packet_bytes(f, p.seq);
    f.next_seq += n;
    p.priority = static_cast<uint8_t>(prio);
  }
  Packet& p = pool_[pk];
  p.sent_ps = sim_.now().ps();
  p.spacing_ps = 0;
  p.in_link = kNoLink;
  // ECMP packets follow the flow's path; index 1 is the next link.
  p.hop = (!f.path.empty() && f.path.front() == l) ? 1 : 0;
  return pk;
}

void PacketModel::after_source_send(uint32_t id, uint32_t bytes) {
  Flow& f = flows_[id];
  const sim::Time now = sim_.now();
  f.last_send = now;
  if (f.rate_controlled) {
    f.cc.on_sent(bytes, now);
    // The pacing gap for a full packet changes only with the rate.
    if (f.cc.rate() != f.paced_rate) {
      f.paced_rate = f.cc.rate();
      f.paced_mtu_ps = sim::transfer_time(cfg_.mtu, sim::Bandwidth::bytes_per_s(f.paced_rate)).ps();
    }
    const int64_t gap =
        bytes == static_cast<uint32_t>(mtu_)
            ? f.paced_mtu_ps
            : sim::transfer_time(sim::Bytes(bytes), sim::Bandwidth::bytes_per_s(f.paced_rate)).ps();
    f.next_send = now + sim::Duration::from_ps(gap);
  }
  if (!has_data(f)) return;
  if (f.rate_controlled && f.next_send > now) {
    schedule_wake(id);
  } else {
    make_ready(id);
  }
}

void PacketModel::release_from_node(NodeId node, const Packet& p) {
  SwitchBuffer& buf = buffers_[static_cast<size_t>(node)];
  if (!cfg_.pfc.enabled) {
    buf.give_back(p.bytes);
    return;
  }
  if (pfc_.release(p.in_link, p.priority, p.bytes, buf)) {
    send_pause(p.in_link, p.priority, false);
  }
}

void PacketModel::on_arrive(uint32_t pk) {
  Packet& p = pool_[pk];
  const LinkId in = p.link;
  const LinkInfo& info = links_[static_cast<size_t>(in)];
  if (!info.usable || p.link_gen != info.gen) {
    lose(pk);  // the link went down under it
    return;
  }
  const NodeId at = info.to;
  const FlowRoute& fr = routes_[p.flow];
  if (at == fr.dst_node) {
    deliver(pk);
    return;
  }
  if (is_gpu_[static_cast<size_t>(at)]) {
    throw std::logic_error("packet model: a packet reached a GPU that is not its destination");
  }
  const uint16_t hop_before = p.hop;
  const LinkId out = route(p, at);
  if (out == kNoLink) {
    lose(pk);
    return;
  }
  if (p.count > 1) {
    if (train_passes(out, p.priority)) {
      p.flags |= Packet::kUnbuffered;
      transmit(out, pk);
      return;
    }
    // Queued or busy: from here on its packets go one by one.
    pk = cut_first_packet(pk, hop_before);
  }
  arrive_at_port(pk, in, out);
}

void PacketModel::arrive_at_port(uint32_t pk, LinkId in, LinkId out) {
  Packet& p = pool_[pk];
  const NodeId at = links_[static_cast<size_t>(out)].from;
  const FlowRoute& fr = routes_[p.flow];
  SwitchBuffer& buf = buffers_[static_cast<size_t>(at)];
  EgressPort& port = ports_[static_cast<size_t>(out)];
  if (cfg_.pfc.enabled) {
    const PfcIngress::Admission a = pfc_.admit(in, p.priority, p.bytes, buf);
    if (!a.accepted) {
      lose(pk);
      return;
    }
    if (a.send_xoff) send_pause(in, p.priority, true);
  } else {
    if (!buf.admits(port.queued_bytes(p.priority), p.bytes, cfg_.dt_alpha)) {
      lose(pk);
      return;
    }
    buf.take(p.bytes);
  }
  if (fr.ecn_capable && links_[static_cast<size_t>(out)].marks_ecn &&
      !(p.flags & Packet::kEcnMarked) && ecn_.mark(port.queued_bytes(p.priority), rng_)) {
    p.flags |= Packet::kEcnMarked;
    ++ecn_marks_;
  }
  p.link = out;
  port.enqueue(pool_, pk);
  if (counters_) touch(out);
  try_start(out);
}

LinkId PacketModel::route(Packet& p, NodeId at) {
  const FlowRoute& fr = routes_[p.flow];
  if (policy_ == RoutingPolicy::ecmp) {
    if (p.hop < fr.hops) {
      const LinkId l = fr.path[p.hop];
      const LinkInfo& info = links_[static_cast<size_t>(l)];
      if (info.from == at && info.usable) {
        ++p.hop;
        return l;
      }
    }
    // Off the flow's path (it changed under the packet, or is too long to
    // keep inline): hash here, as the path's own choice was made.
    p.hop = UINT16_MAX;
    const Flow& f = flows_[p.flow];
    NextHopCache::Entry& e = hops_.lookup(at, f.transfer.dst_rank);
    if (e.links.empty()) return kNoLink;
    return e.links[routing_.hash_at(at, f.key) % e.links.size()];
  }
  return spray_or_adaptive(hops_.lookup(at, flows_[p.flow].transfer.dst_rank));
}

void PacketModel::deliver(uint32_t pk) {
  const Packet& p = pool_[pk];
  const uint32_t id = p.flow;
  Flow& f = flows_[id];
  f.delivered += p.bytes;
  f.arrived += p.count;
  bytes_delivered_ += sim::Bytes(p.bytes);
  if ((p.flags & Packet::kEcnMarked) && f.rate_controlled &&
      (!f.cnp_sent || sim_.now() - f.last_cnp >= cfg_.dcqcn.cnp_interval)) {
    // The notification point: at most one CNP per flow per interval.
    f.cnp_sent = true;
    f.last_cnp = sim_.now();
    sim_.schedule_at(sim_.now() + f.feedback_delay, *this,
                     tag_of(kCnp, flow_payload(id, f.generation)));
  }
  pool_.release(pk);
  if (f.arrived < f.packets) return;
  ++transfers_;
  TransferDone done = std::move(f.done);
  f.done = nullptr;
  f.active = false;
  f.path.clear();
  ++f.generation;
  free_flows_.push_back(id);
  --active_flows_;
  if (done) done();
}

void PacketModel::lose(uint32_t pk) {
  const Packet& p = pool_[pk];
  drops_ += p.count;
  const sim::Time resend =
      std::max(sim_.now(), sim::Time::from_ps(p.sent_ps) + cfg_.rto);
  sim_.schedule_at(resend, *this, tag_of(kRetransmit, pk));
}

void PacketModel::on_retransmit(uint32_t pk) {
  Packet& p = pool_[pk];
  p.flags = 0;
  Flow& f = flows_[p.flow];
  f.retransmit.push(pool_, pk);
  make_ready(p.flow);
}

// ---------------------------------------------------------------- PFC

void PacketModel::send_pause(LinkId ingress, int priority, bool on) {
  const LinkInfo& info = links_[static_cast<size_t>(ingress)];
  if (on && info.network) ++pfc_pauses_;
  sim_.schedule_at(sim_.now() + sim::Duration::from_ps(info.latency_ps), *this,
                   tag_of(kPause, pause_payload(ingress, priority, on)));
}

void PacketModel::on_pause(LinkId l, int priority, bool on) {
  EgressPort& port = ports_[static_cast<size_t>(l)];
  const size_t i = static_cast<size_t>(l) * kPriorities + static_cast<size_t>(priority);
  if (on) {
    if (port.paused(priority)) return;
    port.pause(priority);
    pause_since_ps_[i] = sim_.now().ps();
    arm_deadlock_check();
    return;
  }
  if (!port.paused(priority)) return;
  port.resume(priority);
  pause_total_ps_[static_cast<size_t>(l)] += sim_.now().ps() - pause_since_ps_[i];
  try_start(l);
}

void PacketModel::arm_deadlock_check() {
  if (deadlock_check_armed_) return;
  deadlock_check_armed_ = true;
  hops_at_last_check_ = packet_hops_;
  sim_.schedule_in(cfg_.pfc.deadlock_check, *this, tag_of(kDeadlockCheck, 0));
}

void PacketModel::on_deadlock_check() {
  deadlock_check_armed_ = false;
  const int64_t now = sim_.now().ps();
  const int64_t quiet = cfg_.pfc.deadlock_check.ps();
  // Ports paused for at least a whole check interval.
  auto long_paused = [&](LinkId l, int prio) {
    return ports_[static_cast<size_t>(l)].paused(prio) &&
           now - pause_since_ps_[static_cast<size_t>(l) * kPriorities + static_cast<size_t>(prio)] >= quiet;
  };
  bool any_paused = false;
  std::vector<std::pair<WaitPort, WaitPort>> waits;
  for (size_t i = 0; i < ports_.size(); ++i) {
    const uint8_t mask = ports_[i].paused_mask();
    if (mask == 0) continue;
    any_paused = true;
    const auto l = static_cast<LinkId>(i);
    const NodeId down = links_[i].to;
    for (int prio = 0; prio < kPriorities; ++prio) {
      if (!long_paused(l, prio)) continue;
      // Port l waits on the ports of its downstream node that hold packets
      // which came in through l and are paused themselves.
      for (LinkId m : fabric_.out_links(down)) {
        if (!long_paused(m, prio)) continue;
        bool holds = false;
        const PacketFifo& q = ports_[static_cast<size_t>(m)].queue(prio);
        for (uint32_t pk = q.head; pk != kNilPacket && !holds; pk = pool_[pk].next) {
          holds = pool_[pk].in_link == l;
        }
        if (holds) waits.push_back({{l, prio}, {m, prio}});
      }
    }
  }
  for (std::vector<WaitPort>& cycle : find_wait_cycles(waits)) {
    std::vector<WaitPort> key = cycle;
    std::sort(key.begin(), key.end());
    if (std::find(reported_cycles_.begin(), reported_cycles_.end(), key) != reported_cycles_.end()) {
      continue;
    }
    reported_cycles_.push_back(std::move(key));
    Deadlock d;
    d.detected_at = sim_.now();
    d.priority = cycle.front().priority;
    for (const WaitPort& w : cycle) d.ports.push_back(fabric_.link(w.link).name);
    deadlocks_.push_back(std::move(d));
  }
  // Keep watching while ports are paused and packets still move somewhere;
  // paused ports with no transmission for a whole interval never resume, so
  // stop there and let the simulator run out of events.
  const bool moved = packet_hops_ != hops_at_last_check_;
  if (any_paused && moved) arm_deadlock_check();
}

// ---------------------------------------------------------------- flows

void PacketModel::on_flow_wake(uint32_t id, uint32_t generation) {
  Flow& f = flows_[id];
  if (!f.active || (f.generation & 0x7FFFFFF) != generation) return;
  f.waiting = false;
  if (f.next_send > sim_.now()) {
    schedule_wake(id);  // a CNP slowed it since
    return;
  }
  make_ready(id);
}

void PacketModel::on_cnp(uint32_t id, uint32_t generation) {
  Flow& f = flows_[id];
  if (!f.active || (f.generation & 0x7FFFFFF) != generation) return;
  ++f.cnps;
  f.cc.on_cnp(sim_.now());
  // The slower rate spaces the next packet from the last one sent.
  const sim::Time next =
      f.last_send + sim::transfer_time(cfg_.mtu, sim::Bandwidth::bytes_per_s(f.cc.rate()));
  if (next > f.next_send) f.next_send = next;
}

// ---------------------------------------------------------------- faults

void PacketModel::on_link_state_changed(LinkId l) {
  const bool was_usable = links_[static_cast<size_t>(l)].usable;
  refresh_link(l);
  const LinkInfo& info = links_[static_cast<size_t>(l)];
  std::vector<uint32_t> unready;
  if (was_usable && !info.usable) {
    if (info.from_gpu) {
      // Flows waiting to send on it choose again below.
      SourceQueue& q = sources_[static_cast<size_t>(source_index_[static_cast<size_t>(l)])];
      for (size_t p = 0; p < kPriorities; ++p) {
        for (uint32_t id = q.head[p]; id != UINT32_MAX;) {
          const uint32_t next = flows_[id].ready_next;
          flows_[id].ready = false;
          unready.push_back(id);
          id = next;
        }
        q.head[p] = q.tail[p] = UINT32_MAX;
      }
      q.nonempty = 0;
    } else {
      // Packets queued for it are rerouted by the node that holds them.
      PacketFifo queued = ports_[static_cast<size_t>(l)].take_all(pool_);
      while (!queued.empty()) {
        const uint32_t pk = queued.pop(pool_);
        Packet& p = pool_[pk];
        const LinkId out = route(p, info.from);
        if (out == kNoLink) {
          release_from_node(info.from, p);
          lose(pk);
          continue;
        }
        p.link = out;
        ports_[static_cast<size_t>(out)].enqueue(pool_, pk);
        try_start(out);
      }
    }
  }
  // ECMP flows take their new paths.
  for (uint32_t id = 0; id < flows_.size(); ++id) {
    Flow& f = flows_[id];
    if (!f.active) continue;
    std::vector<LinkId> path = routing_.ecmp_path(f.key);
    if (path != f.path) {
      const bool lost_link = std::any_of(f.path.begin(), f.path.end(), [&](LinkId x) {
        return !links_[static_cast<size_t>(x)].usable;
      });
      if (lost_link && policy_ == RoutingPolicy::ecmp) ++reroutes_;
      if (!path.empty()) f.feedback_delay = routing_.latency(path);
      // Stranded: it waits for a link to come back, and is counted once.
      if (path.empty() && !f.path.empty()) {
        unroutable_.record(fabric_, f.transfer.src_rank, f.transfer.dst_rank, f.transfer.bytes,
                           sim_.now());
      }
      set_path(id, std::move(path));
    }
  }
  for (uint32_t id : unready) make_ready(id);
  // Flows stuck without a route, or ready on a port that came back.
  for (uint32_t id = 0; id < flows_.size(); ++id) make_ready(id);
  try_start(l);
}

// ---------------------------------------------------------------- counters

void PacketModel::set_counter_listener(LinkCounterListener l) {
  NetworkModel::set_counter_listener(std::move(l));
  interval_bytes_.assign(links_.size(), 0);
  last_queue_sample_.assign(links_.size(), 0);
  touched_.assign(links_.size(), 0);
  touched_links_.clear();
  if (counters_) arm_counter_tick();
}

void PacketModel::touch(LinkId l) {
  if (touched_[static_cast<size_t>(l)]) return;
  touched_[static_cast<size_t>(l)] = 1;
  touched_links_.push_back(l);
}

void PacketModel::arm_counter_tick() {
  if (counter_tick_armed_) return;
  counter_tick_armed_ = true;
  sim_.schedule_in(cfg_.counter_interval, *this, tag_of(kCounterTick, 0));
}

void PacketModel::on_counter_tick() {
  counter_tick_armed_ = false;
  if (!counters_) return;
  const double interval_s = cfg_.counter_interval.seconds();
  // Links that sent or queued in the interval, and those still holding a
  // queue at the last sample (to report it draining); ascending id.
  std::vector<LinkId> links;
  links.swap(touched_links_);
  for (LinkId l : links) touched_[static_cast<size_t>(l)] = 0;
  for (LinkId l : queued_links_) {
    if (!touched_[static_cast<size_t>(l)]) links.push_back(l);
  }
  std::sort(links.begin(), links.end());
  links.erase(std::unique(links.begin(), links.end()), links.end());
  queued_links_.clear();
  for (LinkId l : links) {
    const auto i = static_cast<size_t>(l);
    const int64_t q = queued_bytes(l);
    const int64_t b = interval_bytes_[i];
    if (q > 0) queued_links_.push_back(l);
    if (b == 0 && q == last_queue_sample_[i]) continue;
    LinkCounterSample s;
    s.link = l;
    s.when = sim_.now();
    s.utilization = static_cast<double>(b) / (links_[i].bandwidth.bytes_per_s() * interval_s);
    s.queue_bytes = q;
    counters_(s);
    last_queue_sample_[i] = q;
    interval_bytes_[i] = 0;
  }
  if (active_flows_ > 0 || pool_.in_use() > 0) arm_counter_tick();
}

// ---------------------------------------------------------------- reports

int64_t PacketModel::queued_bytes(LinkId l) const {
  return static_cast<int64_t>(ports_[static_cast<size_t>(l)].queued_bytes(sim_.now().ps()));
}

double PacketModel::open_pause_ps(LinkId l) const {
  double open = 0.0;
  const EgressPort& port = ports_[static_cast<size_t>(l)];
  for (int prio = 0; prio < kPriorities; ++prio) {
    if (port.paused(prio)) {
      open += static_cast<double>(
          sim_.now().ps() -
          pause_since_ps_[static_cast<size_t>(l) * kPriorities + static_cast<size_t>(prio)]);
    }
  }
  return open;
}

double PacketModel::pause_seconds(LinkId l) const {
  return (static_cast<double>(pause_total_ps_[static_cast<size_t>(l)]) + open_pause_ps(l)) * 1e-12;
}

void PacketModel::count_closed_form(const LinkFootprint& footprint, double scale) {
  ledger_.add(footprint, scale);
  bytes_delivered_ += sim::Bytes(std::llround(footprint.delivered * scale));
  transfers_ += footprint.transfers;
}

NetworkStats PacketModel::stats(sim::Duration elapsed) const {
  NetworkStats s;
  s.model = "packet";
  s.bytes_delivered = bytes_delivered_;
  s.transfers = transfers_;
  s.pfc_pauses = pfc_pauses_;
  s.ecn_marks = ecn_marks_;
  s.drops = drops_;
  s.deadlocks = static_cast<int64_t>(deadlocks_.size());
  s.reroutes = reroutes_;
  unroutable_.fill(s);
  double pause = 0.0;
  for (size_t i = 0; i < links_.size(); ++i) {
    if (links_[i].network) pause += pause_seconds(static_cast<LinkId>(i));
  }
  s.pfc_pause_time_s = pause;
  ledger_.fill(s, elapsed);
  for (LinkLoad& load : s.busiest_links) load.pfc_pause_s = pause_seconds(load.link);
  return s;
}

std::vector<PacketModel::FlowState> PacketModel::active_flows() const {
  std::vector<FlowState> v;
  for (const Flow& f : flows_) {
    if (!f.active) continue;
    FlowState s;
    s.src_rank = f.transfer.src_rank;
    s.dst_rank = f.transfer.dst_rank;
    s.qp = f.transfer.qp;
    s.bytes = f.total_bytes;
    s.delivered = f.delivered;
    s.rate_controlled = f.rate_controlled;
    s.rate_bytes_per_s = f.rate_controlled ? f.cc.rate() : 0.0;
    s.cnps = f.cnps;
    v.push_back(s);
  }
  return v;
}

// ---------------------------------------------------------------- dispatch

void PacketModel::handle_event(uint64_t tag) {
  const uint64_t payload = tag & kPayloadMask;
  switch (static_cast<Kind>(tag >> kKindShift)) {
    case kPortFree: on_port_free(static_cast<LinkId>(payload)); return;
    case kArrive: on_arrive(static_cast<uint32_t>(payload)); return;
    case kPause:
      on_pause(static_cast<LinkId>(payload >> 4), static_cast<int>((payload >> 1) & 7),
               payload & 1);
      return;
    case kFlowWake:
      on_flow_wake(static_cast<uint32_t>(payload), static_cast<uint32_t>(payload >> 32));
      return;
    case kCnp: on_cnp(static_cast<uint32_t>(payload), static_cast<uint32_t>(payload >> 32)); return;
    case kRetransmit: on_retransmit(static_cast<uint32_t>(payload)); return;
    case kDeadlockCheck: on_deadlock_check(); return;
    case kCounterTick: on_counter_tick(); return;
  }
  throw std::logic_error("packet model: unknown event");
}

}  // namespace gcsim::models::network
