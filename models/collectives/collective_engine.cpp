#include "models/collectives/collective_engine.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace gcsim::models::collectives {

namespace {
sim::Duration seconds(double s) { return sim::Duration::from_seconds(s); }
sim::Duration max_of(sim::Duration a, sim::Duration b) { return a < b ? b : a; }
// Flows the schedule cache holds at most (see schedule_for).
constexpr size_t kMaxScheduleFlows = size_t{1} << 20;
}  // namespace

struct CollectiveEngine::RunState {
  CollectiveRequest req;
  const GroupLayout* layout = nullptr;
  std::shared_ptr<const Schedule> schedule;  // held: the cache may drop it meanwhile
  Plan plan;
  Done done;
  size_t phase = 0;
  size_t pending = 0;
  sim::Time phase_start;
  PhaseCost cost;
  // Stepwise rings: per channel and ring position, rounds sent, finished
  // and received.
  std::vector<std::vector<int>> orders;
  std::vector<std::vector<int>> started, sent, received;
  int rounds = 0;
  double round_payload = 0.0;
  int unfinished = 0;
};

CollectiveEngine::CollectiveEngine(sim::Simulator& sim, network::NetworkModel& network,
                                   const network::Fabric& fabric, CollectiveParams params,
                                   uint64_t seed)
    : sim_(sim), network_(network), fabric_(fabric), params_(std::move(params)),
      routing_(fabric, seed),
      // Without contention every flow would get a whole link: one flow per
      // GPU pair keeps channels that share a NIC from multiplying it.
      one_flow_per_pair_(network.stats(sim::Duration::from_ps(1)).model == "analytical") {
  const auto n = static_cast<size_t>(fabric.num_gpus());
  sent_up_.assign(n, 0.0);
  sent_out_.assign(n, 0.0);
  recv_up_.assign(n, 0.0);
  recv_out_.assign(n, 0.0);
  channels_up_.assign(n, 0);
  channels_out_.assign(n, 0);
}

std::string CollectiveEngine::check(const CollectiveRequest& req) const {
  if (req.ranks.empty()) return "the group is empty";
  std::vector<int> sorted = req.ranks;
  std::sort(sorted.begin(), sorted.end());
  if (sorted.front() < 0 || sorted.back() >= fabric_.num_gpus()) {
    return "rank " + std::to_string(sorted.front() < 0 ? sorted.front() : sorted.back()) +
           " is not a GPU of the fabric (ranks 0.." + std::to_string(fabric_.num_gpus() - 1) +
           ")";
  }
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    return "a rank appears twice in the group";
  }
  if (req.bytes.count() <= 0) return "bytes must be positive";
  if (req.one_way && (req.op != CollectiveOp::send_recv || req.ranks.size() != 2)) {
    return "a one-way transfer is a send_recv between two ranks";
  }
  if (req.root < 0 || req.root >= static_cast<int>(req.ranks.size())) {
    return "root " + std::to_string(req.root) + " is not an index into the group";
  }
  if (req.splits) {
    if (req.op != CollectiveOp::all_to_all) return "split sizes are for all_to_all only";
    const std::string why = check_split_matrix(*req.splits, static_cast<int>(req.ranks.size()));
    if (!why.empty()) return why;
  }
  const GroupLayout layout(fabric_, req.ranks);
  if (req.algorithm) {
    const std::string why = check_algorithm(req.op, *req.algorithm, layout, params_.nvls);
    if (!why.empty()) return why;
  }
  if (req.protocol && req.algorithm == Algorithm::nvls && *req.protocol != Protocol::simple) {
    return "nvls runs the Simple protocol only";
  }
  return "";
}

const GroupLayout& CollectiveEngine::layout_for(const std::vector<int>& ranks) {
  auto it = layouts_.find(ranks);
  if (it == layouts_.end()) {
    it = layouts_.emplace(ranks, std::make_unique<GroupLayout>(fabric_, ranks)).first;
  }
  return *it->second;
}

std::shared_ptr<const Schedule> CollectiveEngine::schedule_for(const CollectiveRequest& req,
                                                               Algorithm a, int channels) {
  const GroupLayout& layout = layout_for(req.ranks);
  const Key key{&layout, static_cast<uint8_t>(req.op), req.bytes.count(), req.root,
                static_cast<int>(a), channels, req.one_way,
                req.splits ? req.splits->fingerprint() : 0};
  auto it = schedules_.find(key);
  if (it == schedules_.end()) {
    // Bounded by the flows held (24 B each: 1M flows, ~24 MB), not by a
    // count: DeepSeek-V3 on 2,048 GPUs cycles through more than 64 EP 64
    // all-to-all schedules of 7,616 flows (16 stages, several sizes), and
    // a cap of 64 schedules rebuilt one per call (16% of its flow run).
    auto built = std::make_shared<const Schedule>(
        build_schedule(req, a, layout, channels, params_.pxn, one_flow_per_pair_, params_.p2p));
    size_t flows = 0;
    for (const Phase& ph : built->phases) flows += ph.flows.size();
    if (schedules_.size() >= 4096 || schedule_flows_ + flows > kMaxScheduleFlows) {
      schedules_.clear();
      schedule_flows_ = 0;
    }
    schedule_flows_ += flows;
    it = schedules_.emplace(key, std::move(built)).first;
  }
  return it->second;
}

int CollectiveEngine::channels_for(const CollectiveRequest& req, Algorithm a,
                                   Protocol p) const {
  // NCCL drops channels while a channel would get less than max_threads x
  // thread_threshold bytes (the ring LL threshold grows with the group).
  const ProtocolParams& pp = params_.protocol_of(p);
  const int n = static_cast<int>(req.ranks.size());
  const double per_channel = static_cast<double>(pp.max_threads) * pp.thread_threshold *
                             (a == Algorithm::ring && p == Protocol::ll ? n : 1);
  int nc = std::max(1, params_.channels);
  while (nc > 1 && req.bytes.as_double() < nc * per_channel) --nc;
  return nc;
}

CollectiveEngine::TierSample CollectiveEngine::sample(int src, int dst) const {
  TierSample t;
  const std::vector<network::LinkId> path = routing_.ecmp_path({src, dst, 0});
  if (path.empty()) return t;
  t.latency = routing_.latency(path);
  t.bandwidth = routing_.bottleneck(path);
  t.known = true;
  return t;
}

CollectiveEngine::TierSample CollectiveEngine::tier(const GroupLayout& layout, bool inter) {
  const auto key = std::make_pair(&layout, inter);
  auto it = tiers_.find(key);
  if (it != tiers_.end()) return it->second;
  TierSample t;
  const auto& hosts = layout.hosts();
  if (inter && hosts.size() > 1) {
    t = sample(hosts[0][0], hosts[1][0]);
  } else if (!inter) {
    for (const auto& h : hosts) {
      if (h.size() > 1) {
        t = sample(h[0], h[1]);
        break;
      }
    }
  }
  tiers_.emplace(key, t);
  return t;
}

double CollectiveEngine::tier_efficiency(bool inter) const {
  return inter ? params_.scale_out_efficiency : params_.scale_up_efficiency;
}

double CollectiveEngine::algorithm_efficiency(Algorithm a) const {
  double e = 1.0;
  if (a == Algorithm::tree) e *= params_.tree_efficiency;
  if (a == Algorithm::nvls) e *= params_.nvls_efficiency;
  return e;
}

sim::Bandwidth CollectiveEngine::gpu_ceiling(Protocol p, int hosts) const {
  const ProtocolParams& pp = params_.protocol_of(p);
  if (hosts <= 1) return pp.max_per_gpu;
  return hosts == 2 ? pp.max_per_gpu_two_nodes : pp.max_per_gpu_many_nodes;
}

sim::Bytes CollectiveEngine::wire_bytes(const Flow& f, Protocol p) const {
  // Only the protocol's flag bytes are real wire bytes; link headers and
  // the algorithm's shortfall are time (the phase's endpoint floor).
  return sim::Bytes(
      std::max<int64_t>(1, std::llround(f.payload / params_.protocol_of(p).wire_efficiency)));
}

CollectiveEngine::PhaseCost CollectiveEngine::phase_cost(const Phase& phase,
                                                         const GroupLayout& layout, Algorithm a,
                                                         Protocol p) {
  PhaseCost c;
  const StepLatency& lat = params_.latency_of(a, p);
  const ProtocolParams& pp = params_.protocol_of(p);
  const TierSample up = tier(layout, false);
  const TierSample out = tier(layout, true);
  bool has_inter = false;
  for (const Flow& f : phase.flows) {
    if (!layout.same_host(f.src, f.dst)) {
      has_inter = true;
      break;
    }
  }
  // NCCL: (steps - inter steps) x intra latency + inter steps x inter latency.
  const sim::Duration steps =
      (lat.step_scale_up + up.latency) * phase.steps_scale_up +
      (lat.step_scale_out + out.latency) * phase.steps_scale_out;
  c.first_latency = has_inter ? out.latency : up.latency;
  c.extra_latency = max_of(sim::Duration::zero(), steps - c.first_latency);
  if (phase.chain) {
    // What the ranks downstream trail the root by: the hops, and the fill
    // added below. A protocol that flags whole steps (Simple: the sender
    // fences its writes and then posts the step) makes the root pay its own
    // hop in every call, so only the hops beyond it trail; LL and LL128
    // flag every line and never wait, so every hop trails. (NCCL's tuning
    // model prices a broadcast ring at its base latency plus one hop, for
    // any group, when every channel runs the same ring: tuning.cc.)
    c.chain_lag = steps;
    if (pp.step.count() > 0) {
      const bool first_up = phase.steps_scale_up > 0;
      c.chain_lag = max_of(sim::Duration::zero(),
                           steps - (first_up ? lat.step_scale_up + up.latency
                                             : lat.step_scale_out + out.latency));
    }
  }

  // Per GPU: payload sent and received over each tier, channel edges
  // leaving it over each tier.
  // Member scratch: a fresh vector of 2 x 7,616 ranks per EP 64
  // all-to-all made malloc consolidate its free lists every phase.
  std::vector<int>& touched = touched_;
  touched.clear();
  double max_channel_payload = 0.0;
  for (const Flow& f : phase.flows) {
    const bool inter = !layout.same_host(f.src, f.dst);
    const auto s = static_cast<size_t>(f.src), d = static_cast<size_t>(f.dst);
    (inter ? sent_out_ : sent_up_)[s] += f.payload;
    (inter ? recv_out_ : recv_up_)[d] += f.payload;
    (inter ? channels_out_ : channels_up_)[s] += f.channels;
    touched.push_back(f.src);
    touched.push_back(f.dst);
    max_channel_payload = std::max(max_channel_payload, f.payload / f.channels);
  }
  const double algo_eff = algorithm_efficiency(a) * pp.wire_efficiency;
  // A direction of a GPU's NVLink also carries the in-band responses to
  // what the other direction carries (CollectiveParams::scale_up_reverse_overhead).
  const double reverse = params_.scale_up_reverse_overhead;
  const double bw_up = up.known ? up.bandwidth.bytes_per_s() * tier_efficiency(false) * algo_eff
                                : 0.0;
  const double bw_out =
      out.known ? out.bandwidth.bytes_per_s() * tier_efficiency(true) * algo_eff : 0.0;
  // One channel's rate over each tier at its busiest GPU (bytes/s).
  constexpr double kNone = std::numeric_limits<double>::max();
  // max_moved: the most payload one GPU's channels handle, sent plus
  // received (the same SMs store what leaves and load what arrives).
  double max_moved = 0.0, endpoint_s = 0.0, rate_up = kNone, rate_out = kNone;
  // A grouped send/recv's connections: each byte a GPU sends waits its
  // connection window's round trip besides its turn on the link
  // (CollectiveParams::p2p_connection_rate), payload per second.
  const double window =
      phase.p2p_rounds > 0 ? params_.p2p_connection_rate.bytes_per_s() * pp.wire_efficiency : 0.0;
  auto windowed = [window](double sent, double link_bytes, int connections, double link) {
    return sent / (connections * window) + link_bytes / link;
  };
  for (int r : touched) {
    const auto i = static_cast<size_t>(r);
    max_moved = std::max(max_moved, sent_up_[i] + sent_out_[i] + recv_up_[i] + recv_out_[i]);
    if (bw_up > 0) {
      const double out_bytes = sent_up_[i] + reverse * recv_up_[i];
      const double in_bytes = recv_up_[i] + reverse * sent_up_[i];
      endpoint_s = std::max({endpoint_s, out_bytes / bw_up, in_bytes / bw_up});
      if (channels_up_[i] > 0) rate_up = std::min(rate_up, bw_up / channels_up_[i]);
      if (window > 0 && channels_up_[i] > 0) {
        endpoint_s = std::max(endpoint_s, windowed(sent_up_[i], out_bytes, channels_up_[i], bw_up));
      }
    }
    if (bw_out > 0) {
      endpoint_s = std::max({endpoint_s, sent_out_[i] / bw_out, recv_out_[i] / bw_out});
      if (channels_out_[i] > 0) rate_out = std::min(rate_out, bw_out / channels_out_[i]);
      if (window > 0 && channels_out_[i] > 0) {
        endpoint_s = std::max(endpoint_s,
                              windowed(sent_out_[i], sent_out_[i], channels_out_[i], bw_out));
      }
    }
  }
  for (int r : touched) {
    const auto i = static_cast<size_t>(r);
    sent_up_[i] = sent_out_[i] = recv_up_[i] = recv_out_[i] = 0.0;
    channels_up_[i] = channels_out_[i] = 0;
  }
  c.endpoint_time = seconds(endpoint_s);

  // The SMs' ceilings: per channel and per GPU. A grouped send/recv's
  // channels have their own (add_p2p_cost).
  const bool p2p = phase.p2p_rounds > 0;
  double sm_s = 0.0;
  if (pp.max_per_channel.bytes_per_s() > 0 && !p2p) {
    sm_s = std::max(sm_s, max_channel_payload / pp.max_per_channel.bytes_per_s());
    // Only a tier the collective uses gets the cap (kNone stays "not used").
    if (rate_up < kNone) rate_up = std::min(rate_up, pp.max_per_channel.bytes_per_s());
    if (rate_out < kNone) rate_out = std::min(rate_out, pp.max_per_channel.bytes_per_s());
  }
  const sim::Bandwidth ceiling = gpu_ceiling(p, layout.num_hosts());
  if (ceiling.bytes_per_s() > 0) sm_s = std::max(sm_s, max_moved / ceiling.bytes_per_s());
  c.sm_time = seconds(sm_s);

  // Pipeline start-up: fill hops of one slice (no larger than a step's
  // payload per channel), each at one channel's rate on its own tier: a
  // tree's chain inside a host crosses NVLink, only its host-to-host edges
  // the NICs (the slower tier takes the hops when only one is known). A
  // chain stores and forwards whole buffer steps (ProtocolParams::step).
  const double protocol_slice =
      (phase.chain && pp.step.count() > 0 ? pp.step : pp.slice).as_double();
  const double slice = std::min(protocol_slice, std::max(0.0, phase.step_payload_per_channel));
  const double slowest = std::min(rate_up, rate_out);
  if (phase.fill_hops > 0 && slice > 0 && slowest < kNone) {
    const int hops_out =
        rate_out < kNone ? std::min(phase.fill_hops, phase.steps_scale_out) : 0;
    const int hops_up = phase.fill_hops - hops_out;
    const double up = rate_up < kNone ? rate_up : slowest;
    c.fill = seconds(slice * (hops_up / up + hops_out / rate_out));
  }
  if (phase.chain) c.chain_lag += c.fill;
  // The ring's turnaround, once per loop of one chunk per step and channel.
  if (phase.ring_loops && pp.chunk.count() > 0 && phase.step_payload_per_channel > 0) {
    const double loops = std::ceil(phase.step_payload_per_channel / pp.chunk.as_double());
    c.turnaround = pp.ring_loop_overhead * static_cast<int64_t>(loops);
  }
  if (p2p) add_p2p_cost(phase, p, c);
  return c;
}

void CollectiveEngine::add_p2p_cost(const Phase& phase, Protocol p, PhaseCost& c) const {
  // A p2p channel (one CTA) moves its parts' wire bytes at most at its
  // ceiling, all of them together: the busiest channel bounds the phase.
  const double per_channel = params_.p2p_max_per_channel.bytes_per_s() *
                             params_.protocol_of(p).wire_efficiency;
  double floor_s = c.sm_time.seconds();
  if (per_channel > 0) {
    floor_s = std::max(floor_s, phase.p2p_channel_load / per_channel);
    // Start-up: a part's first step is written into the peer's buffer
    // before the peer can copy it out, each at the half of the channel
    // that serves that direction.
    c.fill += seconds(phase.p2p_first_step / (per_channel / 2.0));
  }
  // The rank's own slice is a local copy on its own channels, beside the
  // transfers: the phase lasts at least as long.
  if (params_.local_copy.bytes_per_s() > 0) {
    floor_s = std::max(floor_s, phase.self_copy_bytes / params_.local_copy.bytes_per_s());
  }
  c.sm_time = seconds(floor_s);
  c.extra_latency += params_.p2p_round_overhead * static_cast<int64_t>(phase.p2p_rounds);
}

sim::Duration CollectiveEngine::estimate(const CollectiveRequest& req, Algorithm a, Protocol p) {
  const GroupLayout& layout = layout_for(req.ranks);
  if (layout.size() <= 1) return sim::Duration::zero();
  const int channels = channels_for(req, a, p);
  const std::shared_ptr<const Schedule> sch = schedule_for(req, a, channels);
  sim::Duration t = params_.latency_of(a, p).base;
  for (const Phase& ph : sch->phases) {
    const PhaseCost c = phase_cost(ph, layout, a, p);
    t += c.first_latency + max_of(c.endpoint_time, c.sm_time) + c.tail();
  }
  return t;
}

sim::Duration CollectiveEngine::back_to_back_overlap(const CollectiveRequest& req,
                                                     const Plan& plan) {
  const GroupLayout& layout = layout_for(req.ranks);
  sim::Duration lag;
  if (layout.size() <= 1) return lag;
  const std::shared_ptr<const Schedule> sch = schedule_for(req, plan.algorithm, plan.channels);
  for (const Phase& ph : sch->phases) {
    if (ph.chain) lag += phase_cost(ph, layout, plan.algorithm, plan.protocol).chain_lag;
  }
  return lag;
}

Plan CollectiveEngine::plan(const CollectiveRequest& req) {
  const GroupLayout& layout = layout_for(req.ranks);
  const PlanKey key{&layout,
                    static_cast<uint8_t>(req.op),
                    req.bytes.count(),
                    req.root,
                    req.algorithm ? static_cast<int>(*req.algorithm) : -1,
                    req.protocol ? static_cast<int>(*req.protocol) : -1,
                    req.one_way,
                    req.splits ? req.splits->fingerprint() : 0};
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;

  std::vector<Algorithm> algos;
  if (req.algorithm) {
    algos.push_back(*req.algorithm);
  } else {
    for (Algorithm a : algorithms_for(req.op)) {
      if (check_algorithm(req.op, a, layout, params_.nvls).empty()) algos.push_back(a);
    }
  }
  if (algos.empty()) throw std::logic_error("collective: no algorithm can run this request");
  Plan best;
  bool have = false;
  for (Algorithm a : algos) {
    for (Protocol p : kAllProtocols) {
      if (req.protocol && p != *req.protocol) continue;
      if (a == Algorithm::nvls && p != Protocol::simple) continue;
      // NCCL's grouped send/recv picks its protocol by size, not by cost:
      // LL up to the p2p LL threshold per peer, Simple above.
      if (a == Algorithm::direct && !req.protocol) {
        const double per_peer = req.op == CollectiveOp::all_to_all
                                    ? req.bytes.as_double() / layout.size()
                                    : req.bytes.as_double();
        const bool ll = per_peer <= params_.p2p.ll_threshold.as_double();
        if (p != (ll ? Protocol::ll : Protocol::simple)) continue;
      }
      const sim::Duration t = estimate(req, a, p);
      if (!have || t < best.estimate) {
        best = Plan{a, p, channels_for(req, a, p), t};
        have = true;
      }
    }
  }
  if (!have) throw std::logic_error("collective: no protocol can run this request");
  if (plans_.size() >= 4096) plans_.clear();
  plans_.emplace(key, best);
  return best;
}

void CollectiveEngine::run(const CollectiveRequest& req, Done done) {
  auto st = std::make_shared<RunState>();
  st->req = req;
  st->layout = &layout_for(req.ranks);
  st->done = std::move(done);
  if (st->layout->size() <= 1) {
    st->plan = Plan{};
    sim_.call_in(sim::Duration::zero(), [st] { st->done(st->plan); });
    return;
  }
  st->plan = plan(req);
  const sim::Duration base = params_.latency_of(st->plan.algorithm, st->plan.protocol).base;
  const bool stepwise = stepwise_rings_ && st->plan.algorithm == Algorithm::ring &&
                        (req.op == CollectiveOp::all_reduce || req.op == CollectiveOp::all_gather ||
                         req.op == CollectiveOp::reduce_scatter);
  if (stepwise) {
    if (params_.pxn && st->layout->num_hosts() > 1) {
      throw std::logic_error("stepwise rings across hosts need pxn off");
    }
    sim_.call_in(base, [this, st] { run_stepwise_ring(st); });
    return;
  }
  st->schedule = schedule_for(req, st->plan.algorithm, st->plan.channels);
  sim_.call_in(base, [this, st] { run_phase(st); });
}

void CollectiveEngine::run_phase(std::shared_ptr<RunState> st) {
  if (st->phase >= st->schedule->phases.size()) {
    st->done(st->plan);
    return;
  }
  const Phase& phase = st->schedule->phases[st->phase];
  const Algorithm a = st->plan.algorithm;
  const Protocol p = st->plan.protocol;
  // The endpoint floor holds the phase to the links' payload rate (NVLink
  // and NIC headers, the protocol's flags) however fast the network model
  // moved the wire bytes: every network model gives the same uncontended
  // time, and contention can only add to it.
  st->cost = phase_cost(phase, *st->layout, a, p);
  st->phase_start = sim_.now();
  st->pending = phase.flows.size();
  if (st->pending == 0) {
    finish_phase(std::move(st));
    return;
  }
  // The engine holds the run while its transfers fly, so that each
  // transfer's callback is two pointers (kept inside std::function, no
  // allocation per transfer) instead of a shared_ptr.
  RunState* const raw = st.get();
  running_.emplace(raw, st);
  for (const Flow& f : phase.flows) {
    network::Transfer t;
    t.src_rank = f.src;
    t.dst_rank = f.dst;
    t.bytes = wire_bytes(f, p);
    t.qp = f.qp;
    ++transfers_started_;
    network_.start(t, [this, raw] { transfer_done(raw); });
  }
}

void CollectiveEngine::transfer_done(RunState* raw) {
  if (--raw->pending != 0) return;
  auto it = running_.find(raw);
  std::shared_ptr<RunState> st = std::move(it->second);
  running_.erase(it);
  finish_phase(std::move(st));
}

void CollectiveEngine::finish_phase(std::shared_ptr<RunState> st) {
  // The SMs' ceiling holds the phase even if the network was faster.
  const sim::Time floor =
      st->phase_start + st->cost.first_latency + max_of(st->cost.sm_time, st->cost.endpoint_time);
  const sim::Time end = std::max(sim_.now(), floor) + st->cost.tail();
  ++st->phase;
  sim_.call_at(end, [this, st] { run_phase(st); });
}

void CollectiveEngine::run_stepwise_ring(std::shared_ptr<RunState> st) {
  const GroupLayout& layout = *st->layout;
  const int n = layout.size();
  const int channels = st->plan.channels;
  const Protocol p = st->plan.protocol;
  st->rounds = st->req.op == CollectiveOp::all_reduce ? 2 * (n - 1) : n - 1;
  st->round_payload = st->req.bytes.as_double() / n / channels;
  st->orders.clear();
  for (int c = 0; c < channels; ++c) st->orders.push_back(ring_order(layout, c));
  const auto zeros = std::vector<int>(static_cast<size_t>(n), 0);
  st->started.assign(static_cast<size_t>(channels), zeros);
  st->sent.assign(static_cast<size_t>(channels), zeros);
  st->received.assign(static_cast<size_t>(channels), zeros);
  st->unfinished = channels * n;  // (channel, position) pairs with rounds left to receive

  const StepLatency& lat = params_.latency_of(Algorithm::ring, p);
  // A rank sends round j once it has sent round j-1 and received it (it
  // forwards, reduced, what its predecessor sent).
  auto advance = std::make_shared<std::function<void(int, int)>>();
  std::weak_ptr<std::function<void(int, int)>> weak = advance;
  *advance = [this, st, weak, n, &layout, p, lat](int c, int i) {
    auto& started = st->started[static_cast<size_t>(c)][static_cast<size_t>(i)];
    const int j = started;
    if (j >= st->rounds) return;
    if (st->sent[static_cast<size_t>(c)][static_cast<size_t>(i)] < j) return;
    if (j > 0 && st->received[static_cast<size_t>(c)][static_cast<size_t>(i)] < j) return;
    ++started;
    const auto& order = st->orders[static_cast<size_t>(c)];
    const int src = order[static_cast<size_t>(i)];
    const int dst = order[static_cast<size_t>((i + 1) % n)];
    const bool inter = !layout.same_host(src, dst);
    Flow f{src, dst, st->round_payload, 1, static_cast<uint32_t>(c)};
    network::Transfer t{src, dst, wire_bytes(f, p), static_cast<uint32_t>(c)};
    auto self = weak.lock();
    sim_.call_in(inter ? lat.step_scale_out : lat.step_scale_up, [this, st, self, t, c, i, n] {
      ++transfers_started_;
      network_.start(t, [st, self, c, i, n] {
        const int next = (i + 1) % n;
        ++st->sent[static_cast<size_t>(c)][static_cast<size_t>(i)];
        int& got = st->received[static_cast<size_t>(c)][static_cast<size_t>(next)];
        if (++got == st->rounds && --st->unfinished == 0) {
          st->done(st->plan);
          return;
        }
        (*self)(c, i);
        (*self)(c, next);
      });
    });
  };
  // Keep the driver alive for the run: every pending event holds it.
  for (int c = 0; c < channels; ++c) {
    for (int i = 0; i < n; ++i) (*advance)(c, i);
  }
}

std::vector<network::RankTraffic> CollectiveEngine::wire_traffic(const CollectiveRequest& req,
                                                               const Plan& plan) {
  std::vector<network::RankTraffic> out;
  if (layout_for(req.ranks).size() <= 1) return out;
  const std::shared_ptr<const Schedule> schedule = schedule_for(req, plan.algorithm, plan.channels);
  for (const Phase& phase : schedule->phases) {
    for (const Flow& f : phase.flows) {
      // As run_phase starts them; a rank's transfer to itself moves nothing.
      if (f.src == f.dst) continue;
      out.push_back({f.src, f.dst, wire_bytes(f, plan.protocol).as_double(), f.qp});
    }
  }
  return out;
}

}  // namespace gcsim::models::collectives
