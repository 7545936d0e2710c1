#include "models/cluster/cluster_model.h"

#include <algorithm>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "models/cluster/collective_hbm.h"
#include "models/collectives/p2p_split.h"
#include "models/gpu/hbm.h"
#include "models/gpu/kernel_cost_model.h"

namespace gcsim::models::cluster {

using workloads::CollectiveKind;
using workloads::Op;

namespace {
network::CollectiveAlgo algo_for(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::all_reduce: return network::CollectiveAlgo::all_reduce;
    case CollectiveKind::all_gather: return network::CollectiveAlgo::all_gather;
    case CollectiveKind::reduce_scatter: return network::CollectiveAlgo::reduce_scatter;
    case CollectiveKind::broadcast: return network::CollectiveAlgo::broadcast;
    case CollectiveKind::reduce: return network::CollectiveAlgo::reduce;
    case CollectiveKind::all_to_all: return network::CollectiveAlgo::all_to_all;
  }
  return network::CollectiveAlgo::all_reduce;
}

// A callback that runs `then` on its `count`-th call.
std::function<void()> after_all(size_t count, std::function<void()> then) {
  auto left = std::make_shared<size_t>(count);
  auto fn = std::make_shared<std::function<void()>>(std::move(then));
  return [left, fn] {
    if (--*left == 0) (*fn)();
  };
}

size_t waited(const std::shared_ptr<const sim::SiblingGroups>& s) {
  return s == nullptr ? 0 : s->waited;
}

struct KernelBuilder {
  const gpu::GpuSpec& spec;
  gpu::KernelDesc operator()(const gpu::GemmShape& s) const { return gpu::gemm_kernel(spec, s); }
  gpu::KernelDesc operator()(const gpu::AttentionShape& s) const {
    return gpu::attention_kernel(spec, s);
  }
  gpu::KernelDesc operator()(const gpu::MemoryOpShape& s) const {
    return gpu::memory_kernel(spec, s);
  }
};
}  // namespace

gpu::KernelDesc kernel_for(const gpu::GpuSpec& spec, const workloads::ComputeOp& op) {
  return std::visit(KernelBuilder{spec}, op.shape);
}

ClusterModel::ClusterModel(sim::Simulator& sim, ClusterModelConfig config)
    : sim_(sim), config_(std::move(config)), holds_(sim, gpus_) {
  spec_of_rank_.assign(static_cast<size_t>(config_.num_ranks), 0);
  specs_.push_back(config_.gpu);
  for (const auto& [rank, spec] : config_.rank_gpu) {
    if (rank < 0 || rank >= config_.num_ranks) {
      throw std::invalid_argument("rank_gpu names rank " + std::to_string(rank) + " of " +
                                  std::to_string(config_.num_ranks));
    }
    spec_of_rank_[static_cast<size_t>(rank)] = static_cast<int>(specs_.size());
    specs_.push_back(spec);
  }
  if (!config_.clock_rank_start.empty() &&
      config_.clock_rank_start.size() != static_cast<size_t>(config_.num_ranks)) {
    throw std::invalid_argument("clock_rank_start has " + std::to_string(config_.clock_rank_start.size()) +
                                " states for " + std::to_string(config_.num_ranks) + " ranks");
  }
  kernels_.resize(specs_.size());
  gpus_.reserve(static_cast<size_t>(config_.num_ranks));
  for (int r = 0; r < config_.num_ranks; ++r) {
    gpu::GpuOptions options;
    options.clock_model = config_.clock_model;
    options.initial_state = static_cast<size_t>(r) < config_.clock_rank_start.size()
                                ? config_.clock_rank_start[static_cast<size_t>(r)]
                                : config_.clock_model_start;
    options.interference = config_.interference;
    gpus_.push_back(std::make_unique<gpu::Gpu>(
        sim_, specs_[static_cast<size_t>(spec_of_rank_[static_cast<size_t>(r)])], r, options));
  }
}

void ClusterModel::set_power_listener(
    std::function<void(int rank, sim::Time when, double mhz, double watts)> l) {
  if (!config_.clock_model) return;
  for (auto& g : gpus_) {
    g->set_power_listener([l, rank = g->rank()](sim::Time t, double mhz, double w) { l(rank, t, mhz, w); });
  }
}

const gpu::KernelDesc& ClusterModel::kernel_of(const Op& op, int spec) const {
  auto& cache = kernels_[static_cast<size_t>(spec)];
  auto it = cache.find(&op);
  if (it == cache.end()) {
    it = cache
             .emplace(&op, kernel_for(specs_[static_cast<size_t>(spec)],
                                      std::get<workloads::ComputeOp>(op.payload)))
             .first;
  }
  return it->second;
}

void ClusterModel::run_compute(int rank, const Op& op, sim::OpDone done) {
  const auto r = static_cast<size_t>(rank);
  gpus_[r]->launch(kernel_of(op, spec_of_rank_[r]), std::move(done));
}

sim::Duration ClusterModel::communication_time(const Op& op, const std::vector<int>& ranks) const {
  if (const auto* c = std::get_if<workloads::CollectiveOp>(&op.payload)) {
    if (c->splits) {
      auto key = std::make_pair(c->splits->fingerprint(), ranks);
      auto it = split_times_.find(key);
      if (it == split_times_.end()) {
        it = split_times_
                 .emplace(std::move(key),
                          network::all_to_all_v_time(config_.fabric, ranks, c->splits->bytes()))
                 .first;
      }
      return it->second;
    }
    return network::collective_time(config_.fabric, algo_for(c->kind), ranks, c->bytes);
  }
  const auto& p = std::get<workloads::P2pOp>(op.payload);
  return network::p2p_time(config_.fabric, ranks.front(), ranks.back(), p.bytes);
}

void ClusterModel::count_closed_form(const Op& op, const std::vector<int>& ranks, sim::Time end) {
  const auto* c = std::get_if<workloads::CollectiveOp>(&op.payload);
  if (c == nullptr || c->bytes.count() == 0) return;
  closed_form_end_ = std::max(closed_form_end_, end);
  // A training step repeats each group's collectives thousands of times:
  // the footprint per byte is found once per group (and again after a
  // fault changes the paths), then scaled to each message.
  if (footprint_version_ != fabric_->version()) {
    footprints_.clear();
    split_footprints_.clear();
    footprint_version_ = fabric_->version();
  }
  if (c->splits) {  // its pairs as they are, once per matrix and group
    auto key = std::make_pair(c->splits->fingerprint(), ranks);
    auto it = split_footprints_.find(key);
    if (it == split_footprints_.end()) {
      const auto traffic = network::all_to_all_v_traffic(ranks, c->splits->bytes());
      it = split_footprints_.emplace(std::move(key), network_->closed_form_footprint(traffic)).first;
    }
    network_->count_closed_form(it->second, 1.0);
    return;
  }
  const network::CollectiveAlgo algo = algo_for(c->kind);
  auto key = std::make_tuple(static_cast<int>(algo), c->root, ranks);
  auto it = footprints_.find(key);
  if (it == footprints_.end()) {
    const auto traffic = network::collective_traffic(algo, ranks, sim::Bytes(1), c->root);
    it = footprints_.emplace(std::move(key), network_->closed_form_footprint(traffic)).first;
  }
  network_->count_closed_form(it->second, c->bytes.as_double());
}

void ClusterModel::attach_network(network::NetworkModel& n, const network::Fabric& fabric) {
  network_ = &n;
  fabric_ = &fabric;
  contention_ = std::make_unique<SiblingContention>(fabric);
  counted_siblings_.clear();
  build_engine();
}

bool ClusterModel::loads_siblings() const {
  // choice_.on_network: the flow and packet models, whose links are shared;
  // the analytical model keeps its closed forms and has no contention.
  return engine_ != nullptr && choice_.on_network && contention_->any();
}

void ClusterModel::run_communication_beside(const Op& op, const std::vector<int>& ranks,
                                            const sim::SiblingGroups& siblings,
                                            sim::OpDone done) {
  if (!loads_siblings()) {
    communicate(op, ranks, nullptr, std::move(done));
    return;
  }
  CountedSiblings& counted = counted_siblings_[&siblings];
  if (counted.groups == nullptr || counted.version != fabric_->version()) {
    auto kept = std::make_shared<sim::SiblingGroups>();
    for (size_t k : contention_->sharing(ranks, siblings.groups)) {
      kept->groups.push_back(siblings.groups[k]);
      if (k < siblings.waited) ++kept->waited;  // indices ascend: the waited stay first
    }
    counted.groups = std::move(kept);
    counted.version = fabric_->version();
  }
  communicate(op, ranks, counted.groups->groups.empty() ? nullptr : counted.groups,
              std::move(done));
}

void ClusterModel::set_collective_choice(const CollectiveChoice& choice) {
  choice_ = choice;
  if (network_ != nullptr) build_engine();
}

void ClusterModel::build_engine() {
  collectives::CollectiveParams p;
  if (config_.collective_params) {
    p = *config_.collective_params;
  } else {
    p = collectives::params_for(config_.gpu);
    // One channel per SM the collective kernel holds.
    if (config_.collective_sms > 0) p.channels = config_.collective_sms;
  }
  if (choice_.nvls) p.nvls = p.nvls && *choice_.nvls;
  const double shared_share = p.scale_up_shared_efficiency;
  engine_ = std::make_unique<collectives::CollectiveEngine>(sim_, *network_, *fabric_,
                                                            std::move(p), sim_.seed());
  ports_.reset();
  if (config_.share_scale_up_ports && config_.fabric.scale_up_bandwidth.bytes_per_s() > 0.0) {
    ports_ = std::make_unique<ScaleUpPorts>(
        sim_, config_.num_ranks, config_.fabric.scale_up_bandwidth.bytes_per_s() * shared_share);
  }
}

std::vector<PortLoad> ClusterModel::port_loads(const Op& op, const std::vector<int>& ranks,
                                               sim::Duration planned) const {
  std::vector<PortLoad> loads;
  if (ports_ == nullptr || planned <= sim::Duration::zero() || ranks.size() < 2) return loads;
  for (int r : ranks) {
    if (!same_host(r, ranks.front())) return loads;  // crosses the NICs: not this port's
  }
  std::vector<network::RankTraffic> traffic;
  if (const auto* c = std::get_if<workloads::CollectiveOp>(&op.payload)) {
    if (c->bytes.count() <= 0) return loads;
    traffic = c->splits ? network::all_to_all_v_traffic(ranks, c->splits->bytes())
                        : network::collective_traffic(algo_for(c->kind), ranks, c->bytes, c->root);
  } else {
    const auto& p2p = std::get<workloads::P2pOp>(op.payload);
    if (p2p.bytes.count() <= 0) return loads;
    const bool lower_sends = op.kind == workloads::OpKind::send;
    traffic.push_back({lower_sends ? ranks.front() : ranks.back(),
                       lower_sends ? ranks.back() : ranks.front(), p2p.bytes.as_double(), 0});
  }
  // Wire bytes each GPU sends and receives, spread over the time alone.
  std::map<int, std::pair<double, double>> bytes;  // rank -> (out, in)
  for (const auto& t : traffic) {
    bytes[t.src].first += t.bytes;
    bytes[t.dst].second += t.bytes;
  }
  const double s = planned.seconds();
  for (const auto& [rank, b] : bytes) loads.push_back({rank, b.first / s, b.second / s});
  return loads;
}

collectives::CollectiveRequest ClusterModel::collective_request(
    const Op& op, const std::vector<int>& ranks) const {
  const auto& c = std::get<workloads::CollectiveOp>(op.payload);
  collectives::CollectiveRequest req;
  req.op = workloads::collective_op(c.kind);
  req.ranks = ranks;
  req.bytes = c.bytes;
  req.root = c.root;
  req.splits = c.splits;
  if (choice_.algorithm && collectives::algorithm_supports(*choice_.algorithm, req.op)) {
    req.algorithm = choice_.algorithm;
  }
  req.protocol = choice_.protocol;
  return req;
}

void ClusterModel::run_communication(const Op& op, const std::vector<int>& ranks,
                                     sim::OpDone done) {
  communicate(op, ranks, nullptr, std::move(done));
}

void ClusterModel::communicate(const Op& op, const std::vector<int>& ranks,
                               std::shared_ptr<const sim::SiblingGroups> siblings,
                               sim::OpDone done) {
  const sim::Time start = sim_.now();
  // The parties' NCCL kernels, resident (or waiting for SMs) since each
  // rank issued the op.
  std::vector<std::shared_ptr<KernelHold>> holds = holds_.take_meeting();
  using Finished = std::function<void()>;
  std::function<void(Finished)> move;     // the data movement, once every kernel is resident
  sim::Duration planned = sim::Duration::zero();  // the data movement's time alone
  const bool p2p = op.kind == workloads::OpKind::send || op.kind == workloads::OpKind::recv;
  // The ranks whose GPUs hold SMs for it, and each one's send posting.
  std::vector<int> holders = ranks;
  int src_rank = -1;
  if (p2p) {
    // `ranks` is sorted; `op` is the lower rank's half of the pair.
    const auto& p = std::get<workloads::P2pOp>(op.payload);
    const bool lower_sends = op.kind == workloads::OpKind::send;
    src_rank = lower_sends ? ranks.front() : ranks.back();
    const int dst_rank = lower_sends ? ranks.back() : ranks.front();
    holders = {src_rank, dst_rank};
    if (network_ != nullptr) {
      network::Transfer t;
      t.src_rank = src_rank;
      t.dst_rank = dst_rank;
      t.bytes = p.bytes;
      t.qp = next_qp_++;
      if (engine_ != nullptr && choice_.p2p_as_nccl && p.bytes.count() > 0) {
        collectives::CollectiveRequest req;
        req.op = collectives::CollectiveOp::send_recv;
        req.ranks = {t.src_rank, t.dst_rank};
        req.bytes = p.bytes;
        req.one_way = true;
        req.protocol = choice_.protocol;
        move = [this, req, lower_sends, name = op.name, siblings](Finished f) mutable {
          auto finished = after_all(1 + waited(siblings), std::move(f));
          const sim::Time began = sim_.now();
          engine_->run(req, [this, began, name, ranks = req.ranks,
                             finished](const collectives::Plan& plan) {
            if (record_collectives_) {
              collective_records_.push_back({name, ranks, plan, began, sim_.now()});
            }
            finished();
          });
          for (size_t k = 0; siblings != nullptr && k < siblings->groups.size(); ++k) {
            const auto& sg = siblings->groups[k];
            req.ranks = {lower_sends ? sg.front() : sg.back(), lower_sends ? sg.back() : sg.front()};
            engine_->run(req, [finished, wait = k < waited(siblings)](const collectives::Plan&) {
              if (wait) finished();
            });
          }
        };
      } else {
        move = [this, t, lower_sends, siblings](Finished f) {
          auto finished = after_all(1 + waited(siblings), std::move(f));
          network_->start(t, finished);
          // Each sibling pair in the same roles (the same end sends).
          for (size_t k = 0; siblings != nullptr && k < siblings->groups.size(); ++k) {
            const auto& sg = siblings->groups[k];
            network::Transfer st = t;
            st.src_rank = lower_sends ? sg.front() : sg.back();
            st.dst_rank = lower_sends ? sg.back() : sg.front();
            st.qp = next_qp_++;
            network_->start(st, [finished, wait = k < waited(siblings)] {
              if (wait) finished();
            });
          }
        };
      }
    }
  }
  const int sms = kernel_sms(op, holders.front(), holders.back());
  const bool on_engine = engine_ != nullptr && choice_.on_network &&
                         op.kind == workloads::OpKind::collective &&
                         std::get<workloads::CollectiveOp>(op.payload).bytes.count() > 0;
  // The transfer's time alone, for the loads it offers its GPUs' NVLink.
  sim::Duration alone = sim::Duration::zero();
  if (move) {
    // p2p on the attached network, set above.
    if (ports_ != nullptr) alone = communication_time(op, ranks);
  } else if (on_engine) {
    if (ports_ != nullptr) alone = planned_time(collective_request(op, ranks));
    if (sms > 0 && config_.interference.enabled) planned = planned_time(collective_request(op, ranks));
    move = [this, req = collective_request(op, ranks), name = op.name, &op,
            siblings = std::move(siblings)](Finished finished) {
      const sim::Time began = sim_.now();
      // The groups this one stands for start with it, as their ranks'
      // identical timelines would (siblings: flow and packet models only;
      // the memo: analytical only).
      auto all_done = after_all(1 + waited(siblings), std::move(finished));
      run_on_engine(req, [this, began, name, ranks = req.ranks,
                          all_done](const collectives::Plan& plan) {
        if (record_collectives_) {
          collective_records_.push_back({name, ranks, plan, began, sim_.now()});
        }
        all_done();
      });
      for (size_t k = 0; siblings != nullptr && k < siblings->groups.size(); ++k) {
        engine_->run(collective_request(op, siblings->groups[k]),
                     [all_done, wait = k < waited(siblings)](const collectives::Plan&) {
                       if (wait) all_done();
                     });
      }
    };
  } else {
    planned = communication_time(op, ranks);
    alone = planned;
    move = [this, d = planned, &op, ranks](Finished finished) {
      if (network_ != nullptr) count_closed_form(op, ranks, sim_.now() + d);
      sim_.call_in(d, std::move(finished));
    };
  }
  std::vector<PortLoad> loads = port_loads(op, ranks, alone);
  if (sms == 0 && holds.empty()) {
    if (loads.empty()) {
      move([this, start, done = std::move(done)] { done(start, sim_.now()); });
      return;
    }
    auto use = ports_->begin(std::move(loads));
    move([this, start, use, done = std::move(done)] {
      ports_->moved(use, [this, start, done] { done(start, sim_.now()); });
    });
    return;
  }
  // Data moves only once every GPU's channel blocks are resident: each
  // rank's kernel waits for the SMs of its own GPU (Gpu::hold_sms) from
  // its issue, the data for the last of them (measured: an all-reduce
  // beside a persistent GEMM starts when that GEMM ends). The op ends d
  // after the last grant.
  struct Pending {
    std::vector<int> ranks;
    int sms = 0;
    std::function<void(Finished)> move;
    sim::Time start;
    sim::OpDone done;
    std::vector<std::shared_ptr<KernelHold>> holds;
    size_t waiting = 0;  // holds not yet granted
    // Interference: the HBM bytes/s it streams on each GPU of the group
    // (0: none), when its data started moving, and each GPU's activity then.
    double hbm_load = 0.0;
    sim::Time began;
    std::vector<gpu::GpuActivityIntegral> activity;
    // Its NVLink loads (empty: not shared) and their registration.
    std::vector<PortLoad> loads;
    std::shared_ptr<ScaleUpPorts::Use> port_use;
  };
  auto p = std::make_shared<Pending>(Pending{ranks, sms, std::move(move), start, std::move(done),
                                              std::move(holds), 0, 0.0, sim::Time::zero(), {},
                                              std::move(loads), nullptr});
  if (config_.interference.enabled && planned > sim::Duration::zero() &&
      op.kind == workloads::OpKind::collective) {
    const auto& c = std::get<workloads::CollectiveOp>(op.payload);
    p->hbm_load = collective_hbm_bytes(workloads::collective_op(c.kind),
                                       static_cast<double>(c.bytes.count()),
                                       static_cast<int>(ranks.size()),
                                       config_.interference.staging_in_hbm) /
                  planned.seconds();
  }
  auto begin = [this, p] {
    start_streaming(p->ranks, p->hbm_load, p->activity, p->began);
    if (!p->loads.empty()) p->port_use = ports_->begin(std::move(p->loads));
    p->move([this, p] {
      // The kernels beside it (HBM) and the transfers beside it (NVLink)
      // stretch its data movement: it ends when both allow, its SMs and
      // HBM load held meanwhile (its NVLink load until the ports end it).
      const sim::Duration extra =
          stretch_beyond(p->ranks, p->sms, p->hbm_load, p->activity, p->began);
      auto finish = [this, p] {
        if (p->hbm_load > 0.0) {
          for (int r : p->ranks) gpus_[static_cast<size_t>(r)]->remove_hbm_load(p->hbm_load);
        }
        for (const auto& h : p->holds) {
          h->on_grant = nullptr;  // it refers to p: break the cycle
          holds_.release(*h);
        }
        p->done(p->start, sim_.now());
      };
      std::function<void()> end = std::move(finish);
      if (p->port_use != nullptr) {
        end = after_all(2, std::move(end));
        ports_->moved(p->port_use, end);
      }
      if (extra > sim::Duration::zero()) {
        sim_.call_in(extra, std::move(end));
      } else {
        end();
      }
    });
  };
  auto granted = [p, begin] {
    if (--p->waiting == 0) begin();
  };
  // GPUs whose rank issued nothing here (a rank a mirrored one stands for,
  // a caller outside the replayer, a GPU with no room for another hold at
  // the issue) ask for their SMs now, after every kernel launched at this
  // instant.
  if (sms > 0) {
    std::map<int, int> issued;  // party holds per rank
    for (const auto& h : p->holds) ++issued[h->rank];
    const std::optional<sim::Duration> posting =
        p2p ? send_posting(op, holders.front(), holders.back()) : std::nullopt;
    for (int r : holders) {
      if (issued[r] > 0) {
        --issued[r];
        continue;
      }
      p->holds.push_back(holds_.hold(r, sms, r == src_rank ? posting : std::nullopt, true));
    }
  }
  for (const auto& h : p->holds) {
    if (h->granted) continue;
    ++p->waiting;
    h->on_grant = granted;
  }
  if (p->waiting == 0) begin();
}

void ClusterModel::communication_issued(int rank, const Op& op, int peer) {
  const bool send = op.kind == workloads::OpKind::send;
  const int sms = kernel_sms(op, rank, peer < 0 ? rank : peer);
  // No room left on the GPU (more NCCL kernels waiting at once than it has
  // SMs for): it asks at the meeting instead.
  if (!config_.holds_from_issue || sms == 0 || holds_.room(rank) < sms) return;
  holds_.issue(rank, op, sms, send && peer >= 0 ? send_posting(op, rank, peer) : std::nullopt,
               !config_.serial_launch_queue);
}

bool ClusterModel::same_host(int a, int b) const {
  if (fabric_ != nullptr) return fabric_->host_of(a) == fabric_->host_of(b);
  return config_.fabric.same_node(a, b);
}

int ClusterModel::kernel_sms(const Op& op, int a, int b) const {
  if (config_.collective_sms <= 0) return 0;
  if (op.kind == workloads::OpKind::collective) return config_.collective_sms;
  const auto& p = std::get<workloads::P2pOp>(op.payload);
  if (p.bytes.count() <= 0) return 0;
  const collectives::P2pConfig cfg = engine_ != nullptr ? engine_->params().p2p : collectives::P2pConfig{};
  // One CTA per channel the send (or recv) is split over, between the two.
  return collectives::p2p_parts(p.bytes.as_double(), 2, same_host(a, b) ? 1 : 2, cfg).parts;
}

std::optional<sim::Duration> ClusterModel::send_posting(const Op& op, int src, int dst) const {
  // Across hosts the network proxy sends only into buffers the receiver
  // has posted: the send waits for it.
  if (op.kind != workloads::OpKind::send && op.kind != workloads::OpKind::recv) return std::nullopt;
  if (!same_host(src, dst)) return std::nullopt;
  const auto& p = std::get<workloads::P2pOp>(op.payload);
  const collectives::P2pConfig cfg = engine_ != nullptr ? engine_->params().p2p : collectives::P2pConfig{};
  const collectives::P2pParts parts = collectives::p2p_parts(p.bytes.as_double(), 2, 1, cfg);
  // NCCL_STEPS (8) slots of one p2p chunk per channel's connection.
  constexpr double kNcclSteps = 8.0;
  if (parts.part_bytes > kNcclSteps * cfg.chunk.as_double()) return std::nullopt;
  return network::p2p_time(config_.fabric, src, dst, p.bytes);
}

sim::Duration ClusterModel::planned_time(const collectives::CollectiveRequest& req) {
  MemoKey key = memo_key(req);
  auto it = planned_.find(key);
  if (it == planned_.end()) it = planned_.emplace(std::move(key), engine_->plan(req).estimate).first;
  return it->second;
}

void ClusterModel::start_streaming(const std::vector<int>& ranks, double hbm_load,
                                   std::vector<gpu::GpuActivityIntegral>& activity,
                                   sim::Time& began) {
  began = sim_.now();
  if (hbm_load <= 0.0) return;
  activity.clear();
  for (int r : ranks) {
    gpu::Gpu& g = *gpus_[static_cast<size_t>(r)];
    g.add_hbm_load(hbm_load);
    activity.push_back(g.activity_integral());
  }
}

sim::Duration ClusterModel::stretch_beyond(const std::vector<int>& ranks, int sms, double hbm_load,
                                           const std::vector<gpu::GpuActivityIntegral>& activity,
                                           sim::Time began) const {
  const sim::Duration moved = sim_.now() - began;
  if (hbm_load <= 0.0 || moved <= sim::Duration::zero()) return sim::Duration::zero();
  const double dt = moved.seconds();
  double stretch = 1.0;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const gpu::Gpu& g = *gpus_[static_cast<size_t>(ranks[i])];
    const gpu::GpuActivityIntegral now = g.activity_integral();
    const double busy = (now.busy_sm_seconds - activity[i].busy_sm_seconds) /
                        (dt * g.spec().sm_count);
    const double demand = (now.hbm_demand_bytes - activity[i].hbm_demand_bytes) / dt;
    stretch = std::max(
        stretch, gpu::collective_stretch(gpu::achieved_hbm_bandwidth(g.spec()).bytes_per_s(),
                                         busy * g.spec().sm_count, demand, sms, hbm_load, busy,
                                         config_.interference.collective_sensitivity));
  }
  return moved.scaled(stretch - 1.0);
}

ClusterModel::MemoKey ClusterModel::memo_key(const collectives::CollectiveRequest& req) {
  return {static_cast<int>(req.op),
          req.bytes.count(),
          req.ranks,
          req.root,
          req.one_way,
          req.algorithm ? static_cast<int>(*req.algorithm) : -1,
          req.protocol ? static_cast<int>(*req.protocol) : -1,
          req.splits ? req.splits->fingerprint() : 0};
}

void ClusterModel::run_on_engine(const collectives::CollectiveRequest& req,
                                 std::function<void(const collectives::Plan&)> finished) {
  if (!memo_on_) {
    engine_->run(req, std::move(finished));
    return;
  }
  MemoKey key = memo_key(req);
  if (auto it = memo_.find(key); it != memo_.end()) {
    ++memo_hits_;
    const MemoEntry& m = it->second;
    // The links carry what the engine's transfers carried, counted at the
    // start as the network model counts a transfer's bytes.
    network_->count_closed_form(m.footprint, 1.0);
    sim_.call_in(m.duration, [plan = m.plan, finished = std::move(finished)] { finished(plan); });
    return;
  }
  ++memo_misses_;
  engine_->run(req, [this, req, key = std::move(key), began = sim_.now(),
                     finished = std::move(finished)](const collectives::Plan& plan) {
    memo_.emplace(key, MemoEntry{sim_.now() - began, plan,
                                 network_->closed_form_footprint(engine_->wire_traffic(req, plan))});
    finished(plan);
  });
}

sim::OpExecutor::MemoryResult ClusterModel::apply_memory(int rank, sim::Bytes delta) {
  gpu::Gpu& g = *gpus_[static_cast<size_t>(rank)];
  if (delta.count() >= 0) {
    if (!g.allocate(delta)) return MemoryResult::out_of_memory;
  } else {
    const sim::Bytes freed(-delta.count());
    if (freed > g.memory_used()) return MemoryResult::freed_more_than_allocated;
    g.free(freed);
  }
  if (memory_listener_) memory_listener_(rank, sim_.now(), g.memory_used());
  return MemoryResult::ok;
}

std::string ClusterModel::describe(const Op& op, int rank) const {
  nlohmann::ordered_json j;
  if (std::holds_alternative<workloads::ComputeOp>(op.payload)) {
    const int si = spec_of_rank_.at(static_cast<size_t>(rank));
    const gpu::GpuSpec& spec = specs_[static_cast<size_t>(si)];
    const gpu::KernelDesc& k = kernel_of(op, si);
    const int sms = spec.sm_count;
    const gpu::TileCost tile = gpu::tile_cost(spec, k, std::min<int64_t>(k.tiles, sms));
    j["kernel"] = k.name;
    j["tiles"] = k.tiles;
    j["waves_alone"] = gpu::wave_count(spec, k, sms);
    j["gflop"] = k.total_flops() * 1e-9;
    j["hbm_mb"] = k.total_bytes() * 1e-6;
    if (k.l2_resident) j["l2_resident"] = true;  // those bytes move from L2 (l2_cache.h)
    j["tile_bound"] = tile.bound();
    j["tile_us"] = tile.time().microseconds();
  } else if (const auto* p = std::get_if<workloads::P2pOp>(&op.payload)) {
    j["bytes"] = p->bytes.count();
  } else if (const auto* col = std::get_if<workloads::CollectiveOp>(&op.payload)) {
    j["collective"] = workloads::collective_name(col->kind);
    j["bytes"] = col->bytes.count();
  } else {
    return "";
  }
  return j.dump();
}

}  // namespace gcsim::models::cluster
