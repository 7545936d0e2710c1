#include "workloads/inference/serving_system.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace gcsim::workloads::inference {

struct ServingSystem::Handoff {
  int prefill = -1;        // prefill replica
  int decode = -1;         // decode replica (-1 until chosen)
  int pending = 0;         // transfers started and not ended
  bool sent = false;       // every transfer has been started
  bool admitted = false;   // the decode replica holds blocks for the prompt
  bool prefilled = false;  // the prefill replica has finished the prompt
  bool delivered = false;
};

ServingSystem::ServingSystem(const ServingConfig& config, ReplicaMemory memory,
                             ReplicaMemory prefill_memory, ServingEnvironment env, uint64_t seed)
    : config_(config),
      memory_(memory),
      prefill_memory_(prefill_memory),
      env_(env),
      seed_(seed) {
  const bool disagg = config_.disaggregation.enabled;
  int rank = 0;
  if (disagg) {
    const auto& d = config_.disaggregation;
    ParallelShape p{d.prefill_tp, 1, std::min(config_.parallel.ep, d.prefill_tp)};
    for (int i = 0; i < d.prefill_replicas; ++i) {
      std::vector<int> ranks;
      for (int g = 0; g < p.gpus(); ++g) ranks.push_back(rank++);
      prefill_.push_back(make_replica(i, ReplicaRole::prefill, p, ranks, prefill_memory_));
    }
    prefill_router_ = std::make_unique<Router>(config_.router, d.prefill_replicas);
  }
  const int n = disagg ? config_.disaggregation.decode_replicas : config_.replicas;
  for (int i = 0; i < n; ++i) {
    std::vector<int> ranks;
    for (int g = 0; g < config_.parallel.gpus(); ++g) ranks.push_back(rank++);
    replicas_.push_back(make_replica(i, disagg ? ReplicaRole::decode : ReplicaRole::unified,
                                     config_.parallel, ranks, memory_));
  }
  router_ = std::make_unique<Router>(config_.router, n);
}

ServingSystem::~ServingSystem() = default;

std::unique_ptr<Replica> ServingSystem::make_replica(int index, ReplicaRole role,
                                                     const ParallelShape& p,
                                                     std::vector<int> ranks, ReplicaMemory mem) {
  IterationCostConfig c;
  c.model = config_.model;
  c.gpu = env_.gpu;
  c.parallel = p;
  c.dtype = config_.dtype;
  c.kv_dtype = config_.kv_dtype;
  c.attention_kernel = config_.attention_kernel;
  c.ranks = std::move(ranks);
  c.cuda_graphs = config_.cuda_graphs;
  c.max_capture_size = config_.max_capture_size;
  c.pad_mixed_steps = config_.scheduler.mode == SchedulerMode::v1;
  c.step_overhead = config_.step_overhead;
  c.framework = config_.framework;
  c.host_per_kernel = config_.host_per_kernel;
  c.eager_traits = config_.eager_traits;
  std::unique_ptr<IterationCost> draft;
  const SpeculativeConfig& spec = config_.speculative;
  const bool speculates = spec.enabled() && role != ReplicaRole::prefill;
  if (speculates && spec.method != SpecMethod::ngram) {
    IterationCostConfig dc = c;
    dc.step_overhead = sim::Duration::zero();
    dc.parallel.pp = 1;
    if (spec.method == SpecMethod::draft_model) {
      dc.model = spec.draft;
    } else {
      // An MTP head (DeepSeek-V3): one more transformer layer of the target's
      // shape and the shared output head.
      dc.model.layers = 1;
      dc.model.moe.dense_layers = 0;
    }
    dc.parallel.ep = std::min(dc.parallel.ep, dc.parallel.tp);
    draft = std::make_unique<IterationCost>(std::move(dc), *env_.comm);
  }
  ReplicaSetup s;
  s.index = index;
  s.role = role;
  s.scheduler = config_.scheduler;
  if (!speculates) s.scheduler.num_spec_tokens = 0;
  s.num_blocks = mem.num_blocks;
  s.block_bytes = mem.block_bytes;
  s.pcie = env_.gpu.pcie_bandwidth;
  s.speculative = spec;
  s.seed = seed_ + (role == ReplicaRole::prefill ? 1'000'003u : 0u);
  s.clocks = env_.clocks;
  s.scheduler.swap_blocks =
      mem.block_bytes > 0 ? config_.swap_space.count() / mem.block_bytes : 0;
  ReplicaHooks h;
  const bool prefill_side = role == ReplicaRole::prefill;
  h.on_tokens = [this, prefill_side](Request& r, int64_t t, bool f) {
    on_tokens(r, t, f, prefill_side);
  };
  if (role == ReplicaRole::decode) h.on_remote_admit = [this](Request* r) { on_remote_admit(r); };
  if (role == ReplicaRole::prefill && config_.disaggregation.layerwise) {
    h.on_step_start = [this, index](const StepPlan& plan, sim::Time start, const StepCost& cost) {
      layerwise_start(plan, start, cost, index);
    };
  }
  if (env_.record_steps) {
    h.on_step = [this, prefill_side](const StepRecord& rec) {
      out_.steps.push_back(rec);
      // Prefill replicas are numbered after the decode pool in records.
      if (prefill_side) out_.steps.back().replica += static_cast<int>(replicas_.size());
    };
  }
  return std::make_unique<Replica>(*env_.sim, s, std::make_unique<IterationCost>(c, *env_.comm),
                                   std::move(draft), std::move(h));
}

namespace {
std::vector<int64_t> outstanding_of(const std::vector<std::unique_ptr<Replica>>& rs) {
  std::vector<int64_t> v;
  v.reserve(rs.size());
  for (const auto& r : rs) v.push_back(r->outstanding);
  return v;
}
}  // namespace

void ServingSystem::arrive(Request* r) {
  const int64_t max_len = config_.scheduler.max_model_len;
  if (r->prompt_len >= max_len) {
    // vLLM refuses a prompt that leaves no room for output; never retried.
    r->state = RequestState::rejected;
    ++out_.rejected;
    return;
  }
  r->output_len = std::min(r->output_len, max_len - r->prompt_len);
  if (!config_.disaggregation.enabled) {
    const int i = router_->pick(*r, outstanding_of(replicas_));
    ++replicas_[static_cast<size_t>(i)]->outstanding;
    replicas_[static_cast<size_t>(i)]->submit(r);
    return;
  }
  Request& copy = copies_[static_cast<size_t>(r->id)];
  copy = *r;
  copy.prefill_only = true;
  copy.output_len = 1;
  const int p = prefill_router_->pick(copy, outstanding_of(prefill_));
  handoffs_[static_cast<size_t>(r->id)].prefill = p;
  ++prefill_[static_cast<size_t>(p)]->outstanding;
  prefill_[static_cast<size_t>(p)]->submit(&copy);
}

void ServingSystem::on_tokens(Request& r, int64_t tokens, bool finished, bool prefill_side) {
  const sim::Time now = env_.sim->now();
  if (prefill_side) {
    // The prompt is computed: its KV goes to a decode replica (the token the
    // prefill replica sampled is not shown to the client).
    Handoff& h = handoffs_[static_cast<size_t>(r.id)];
    Request* main = &requests_[static_cast<size_t>(r.id)];
    h.prefilled = true;
    --prefill_[static_cast<size_t>(h.prefill)]->outstanding;
    if (h.decode < 0) {
      h.decode = router_->pick(*main, outstanding_of(replicas_));
      ++replicas_[static_cast<size_t>(h.decode)]->outstanding;
    }
    replicas_[static_cast<size_t>(h.decode)]->submit_remote(main);
    if (h.sent && h.pending == 0) prefill_[static_cast<size_t>(h.prefill)]->release(&r);
    return;
  }
  if (!r.has_first_token()) {
    r.first_token = now;
  } else {
    out_.itl_s.push_back((now - r.last_token).seconds());
  }
  r.last_token = now;
  (void)tokens;
  if (finished) {
    r.finish = now;
    --replicas_[static_cast<size_t>(r.replica)]->outstanding;
  }
}

std::vector<std::pair<int, int>> ServingSystem::rank_pairs(const Replica& from,
                                                           const Replica& to) const {
  const auto& src = from.ranks();
  const auto& dst = to.ranks();
  const int tp_p = static_cast<int>(src.size());
  const int tp_d = static_cast<int>(dst.size());
  const auto& m = config_.model;
  std::vector<std::pair<int, int>> pairs;
  const bool replicated = m.attention == models::AttentionKind::mla || m.kv_heads < tp_d;
  for (int j = 0; j < tp_d; ++j) {
    if (replicated || tp_p < tp_d) {
      // Each decode rank's shard lies whole on one prefill rank.
      const int i = replicated ? j % tp_p : j / (tp_d / tp_p);
      pairs.emplace_back(src[static_cast<size_t>(i)], dst[static_cast<size_t>(j)]);
    } else {
      // It is spread over tp_p / tp_d prefill ranks.
      const int r = tp_p / tp_d;
      for (int k = 0; k < r; ++k) {
        pairs.emplace_back(src[static_cast<size_t>(j * r + k)], dst[static_cast<size_t>(j)]);
      }
    }
  }
  return pairs;
}

sim::Bytes ServingSystem::pair_bytes(const Request& r, size_t pairs) const {
  // Each decode rank receives its per-GPU KV of the prompt, split evenly
  // over the pairs that feed it.
  const ParallelShape d{config_.parallel.tp, 1, 1};
  const int64_t per_rank = r.prompt_len * kv_bytes_per_token_per_gpu(config_.model, config_.kv_dtype, d);
  const auto per_decode_rank = static_cast<int64_t>(pairs) / config_.parallel.tp;
  return sim::Bytes(per_rank / std::max<int64_t>(1, per_decode_rank));
}

void ServingSystem::start_transfer(Request* main, int src, int dst, sim::Bytes bytes) {
  Handoff& h = handoffs_[static_cast<size_t>(main->id)];
  ++h.pending;
  Op op;
  op.kind = src < dst ? OpKind::send : OpKind::recv;
  P2pOp p;
  p.bytes = bytes;
  op.payload = p;
  transfer_ops_.push_back(op);
  const std::vector<int> ranks{std::min(src, dst), std::max(src, dst)};
  TransferRecord rec;
  rec.request = main->id;
  rec.src_replica = h.prefill;
  rec.dst_replica = h.decode;
  rec.src_rank = src;
  rec.dst_rank = dst;
  rec.start = env_.sim->now();
  rec.bytes = bytes;
  env_.transport->run_communication(transfer_ops_.back(), ranks,
                                    [this, main, rec](sim::Time, sim::Time end) mutable {
                                      rec.end = end;
                                      out_.transfers.push_back(rec);
                                      transfer_done(main);
                                    });
}

void ServingSystem::start_transfers(Request* main) {
  Handoff& h = handoffs_[static_cast<size_t>(main->id)];
  const auto pairs = rank_pairs(*prefill_[static_cast<size_t>(h.prefill)],
                                *replicas_[static_cast<size_t>(h.decode)]);
  const sim::Bytes bytes = pair_bytes(*main, pairs.size());
  for (const auto& [src, dst] : pairs) start_transfer(main, src, dst, bytes);
  h.sent = true;
}

void ServingSystem::layerwise_start(const StepPlan& plan, sim::Time start, const StepCost& cost,
                                    int replica) {
  const int layers = config_.model.layers;
  const int group = std::max(1, config_.disaggregation.layers_per_transfer);
  for (const ScheduledItem& it : plan.items) {
    if (it.context + it.tokens < it.req->num_tokens()) continue;  // prompt not finished here
    Request* main = &requests_[static_cast<size_t>(it.req->id)];
    Handoff& h = handoffs_[static_cast<size_t>(main->id)];
    h.prefill = replica;
    if (h.decode < 0) {
      h.decode = router_->pick(*main, outstanding_of(replicas_));
      ++replicas_[static_cast<size_t>(h.decode)]->outstanding;
    }
    const auto pairs = rank_pairs(*prefill_[static_cast<size_t>(replica)],
                                  *replicas_[static_cast<size_t>(h.decode)]);
    const sim::Bytes all = pair_bytes(*main, pairs.size());
    // Layer l's KV is complete (l + 1) / layers of the way through the step.
    for (int first = 0; first < layers; first += group) {
      const int last = std::min(layers, first + group);
      const sim::Bytes bytes(all.count() * (last - first) / layers);
      const sim::Time at = start + cost.total.scaled(static_cast<double>(last) / layers);
      ++h.pending;  // counted now so that delivery waits for every group
      env_.sim->call_at(at, [this, main, pairs, bytes] {
        Handoff& hh = handoffs_[static_cast<size_t>(main->id)];
        --hh.pending;
        for (const auto& [src, dst] : pairs) start_transfer(main, src, dst, bytes);
      });
    }
    h.sent = true;
  }
}

void ServingSystem::on_remote_admit(Request* r) {
  Handoff& h = handoffs_[static_cast<size_t>(r->id)];
  h.admitted = true;
  // Deferred: this runs inside the decode replica's scheduling.
  env_.sim->call_in(sim::Duration::zero(), [this, r] {
    Handoff& hh = handoffs_[static_cast<size_t>(r->id)];
    if (!hh.sent) start_transfers(r);
    else if (hh.pending == 0) deliver(r);
  });
}

void ServingSystem::transfer_done(Request* main) {
  Handoff& h = handoffs_[static_cast<size_t>(main->id)];
  if (--h.pending > 0) return;
  if (h.prefilled) {
    prefill_[static_cast<size_t>(h.prefill)]->release(&copies_[static_cast<size_t>(main->id)]);
  }
  if (h.admitted) deliver(main);
}

void ServingSystem::deliver(Request* main) {
  Handoff& h = handoffs_[static_cast<size_t>(main->id)];
  if (h.delivered) return;
  h.delivered = true;
  replicas_[static_cast<size_t>(h.decode)]->remote_kv_arrived(main);
}

ServingOutcome ServingSystem::run() {
  return run(generate_requests(config_.requests, seed_));
}

ServingOutcome ServingSystem::run(std::vector<Request> requests) {
  requests_ = std::move(requests);
  for (size_t i = 0; i < requests_.size(); ++i) requests_[i].id = static_cast<int64_t>(i);
  if (config_.disaggregation.enabled) {
    if (env_.transport == nullptr) throw std::logic_error("disaggregation needs a KV transport");
    copies_.assign(requests_.size(), Request{});
    handoffs_.assign(requests_.size(), Handoff{});
  }
  for (Request& r : requests_) {
    Request* p = &r;
    env_.sim->call_at(r.arrival, [this, p] { arrive(p); });
  }
  env_.sim->run();

  out_.end = sim::Time::zero();
  for (const Request& r : requests_) {
    if (r.state == RequestState::finished) {
      out_.end = std::max(out_.end, r.finish);
    } else if (r.state != RequestState::rejected) {
      throw std::runtime_error("serving: request " + std::to_string(r.id) +
                               " never finished (state " + std::to_string(static_cast<int>(r.state)) +
                               ", " + std::to_string(r.num_computed) + " tokens computed)");
    }
  }
  const auto summarize_pool = [&](const std::vector<std::unique_ptr<Replica>>& pool, int offset) {
    for (const auto& rep : pool) {
      ReplicaSummary s;
      s.index = rep->index() + offset;
      s.role = rep->role();
      s.ranks = rep->ranks();
      s.blocks_total = rep->kv().num_blocks();
      s.peak_used_blocks = rep->kv().peak_used_blocks();
      s.preemptions = rep->scheduler().preemptions();
      s.rejections = rep->scheduler().rejections();
      s.steps = rep->steps();
      s.busy_s = rep->busy().seconds();
      s.energy_j = rep->energy_per_gpu_j(out_.end) * static_cast<double>(s.ranks.size());
      s.prefix_queried_tokens = rep->kv().queried_tokens();
      s.prefix_hit_tokens = rep->kv().hit_tokens();
      out_.preemptions += s.preemptions;
      out_.rejected += s.rejections;
      out_.replicas.push_back(s);
    }
  };
  summarize_pool(replicas_, 0);
  summarize_pool(prefill_, static_cast<int>(replicas_.size()));
  for (const Request& r : requests_) {
    if (r.replica >= 0 && r.state == RequestState::finished) {
      ++out_.replicas[static_cast<size_t>(r.replica)].requests;
    }
  }
  out_.requests = requests_;
  return std::move(out_);
}

}  // namespace gcsim::workloads::inference
