#include "workloads/moe/moe_layer.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "workloads/training/host_issue.h"

namespace gcsim::workloads::moe {

using models::collectives::SplitMatrix;
using models::collectives::SplitMatrixPtr;
using models::gpu::Dtype;
using models::gpu::GemmShape;
using models::gpu::MemoryOpKind;
using models::gpu::MemoryOpShape;

EagerKernelEfficiency EagerKernelEfficiency::on_gpu(int sm_count, double hbm_bytes_per_s) const {
  if (sm_count <= 0 || !(hbm_bytes_per_s > 0.0)) return *this;
  const double scale = kEagerFitHbmBytesPerS / hbm_bytes_per_s *
                       static_cast<double>(sm_count) / kEagerFitSmCount;
  EagerKernelEfficiency e;
  e.broadcast = std::min(1.0, broadcast * scale);
  e.atomic = std::min(1.0, atomic * scale);
  e.strided = std::min(1.0, strided * scale);
  return e;
}

double EagerHostCost::call_us(HostCall c) const {
  switch (c) {
    case HostCall::router: return router_us;
    case HostCall::permute: return permute_us;
    case HostCall::launch: return launch_us;
    case HostCall::nccl: return collective_us;
    case HostCall::expert: return expert_us;
  }
  return launch_us;
}

namespace {

// Per kind, µs, from calibration/fit/moe_host_costs.py (its docstring says
// which reading gives which; nothing fitted to the layer times). The
// expert loop's fixed cost per pass is F calls' worth of the machine's
// per-call cost, F (5.71 forward, 4.09 backward) measured on one host for
// every layer shape (calibration/measurements/h100-x2/
// moe_host_shapes_2026-11-26: the loop's first iteration and output
// allocation).
struct LoopCost {
  double expert, fwd, bwd;  // µs: per loop kernel call; per forward, backward loop
};
EagerHostCost profile(const char* name, double router, double permute, double launch,
                      double nccl, double sync, LoopCost loop, double slowest_rank = 1) {
  EagerHostCost c;
  c.slowest_rank = slowest_rank;
  c.profile = name;
  c.router_us = router;
  c.permute_us = permute;
  c.launch_us = launch;
  c.collective_us = nccl;
  c.sync_us = sync;
  c.expert_us = loop.expert;
  c.loop_fwd_us = loop.fwd;
  c.loop_bwd_us = loop.bwd;
  return c;
}

const std::vector<EagerHostCost>& profiles() {
  static const std::vector<EagerHostCost> all{
      // The H200 machines (2 and 4 GPUs): their instrumented phases where the
      // GPU waits for the host (4K tokens; the expert loop: the balanced
      // 2-GPU hidden-2048 points, the only host-bound ones; a call outside
      // the loop costs what one in it does, no reading telling them apart);
      // NCCL call and .tolist() split as the H100 host splits the counts phase.
      profile("h200", 36.3, 54.4, 25.8, 118.8, 53.4, {25.8, 147.7, 105.8}),
      // Two 4-H100 machines, one profile each (a host's speed is the
      // machine's: three machines of that kind measured 1.3-1.7x apart per
      // call; any other machine: calibrate it, calibration/fit/host_fit.h),
      // read from every call's host stamp in the MoE layer's plain passes
      // (calibration/microbench/moe_host_timeline.py, calibration/fit/
      // moe_host_timeline_read.py --profile): per kind its calls' time over
      // their number, the median over the ranks and blocks of the
      // hidden-2048 / 8-expert points (the other shapes held out); sync:
      // the .tolist()'s return after the exchange's end on the GPU (CUDA
      // events); slowest_rank: the slowest of the 4 ranks' loop cost per
      // call over the ranks' median, the median over the blocks.
      // The 23:13 UTC machine (calibration/measurements/h100-x4/
      // moe_host_timeline_4k_2026-11-26, steady; the 13:35 machine's
      // back-logged reading, 77.3, 66.8, 32.1, 129.9, 58.4, {26.3, 150.2,
      // 107.7}, was near it). Was "h100".
      profile("h100x4-20261126-2313", 58.4, 61.9, 30.5, 124.6, 67.4, {25.1, 89.4, 92.2}, 1.071),
      // The 22:12 UTC machine (moe_host_timeline_2026-11-26), 0.6-0.75x as
      // long per call, with stalls and a slow rank per block. Was "h100-fast".
      profile("h100x4-20261126-2212", 44.9, 41.5, 19.7, 72.6, 45.2, {17.1, 67.0, 59.2}, 1.177),
  };
  return all;
}

}  // namespace

const std::vector<std::string>& host_profile_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& p : profiles()) v.push_back(p.profile);
    return v;
  }();
  return names;
}

const EagerHostCost* host_profile(const std::string& name) {
  for (const auto& p : profiles()) {
    if (p.profile == name) return &p;
  }
  return nullptr;
}

EagerHostCost eager_host_cost() { return *host_profile("h200"); }

const char* role_name(MoeRole r) {
  switch (r) {
    case MoeRole::router: return "router";
    case MoeRole::permute: return "permute";
    case MoeRole::counts: return "counts";
    case MoeRole::dispatch: return "dispatch";
    case MoeRole::sort: return "sort";
    case MoeRole::experts: return "experts";
    case MoeRole::unsort: return "unsort";
    case MoeRole::combine: return "combine";
    case MoeRole::unpermute: return "unpermute";
    case MoeRole::host: return "host";
  }
  return "?";
}

std::vector<std::vector<int64_t>> dispatch_legs(const Routing& r, const MoeLayerSpec& spec) {
  const int n = r.ranks();
  const int g = spec.ranks_per_node > 0 ? spec.ranks_per_node : n;
  const int nodes = n / g;
  if (spec.max_route_nodes <= 0 || nodes <= 1) return {r.rank_matrix()};
  const auto idx = [n](int s, int d) { return static_cast<size_t>(s) * n + static_cast<size_t>(d); };
  std::vector<int64_t> ib(static_cast<size_t>(n) * n, 0), nvlink(static_cast<size_t>(n) * n, 0);
  const int reach = std::min({spec.max_route_nodes, r.top_k(), nodes});
  const std::vector<int64_t> rows = r.rank_matrix();
  for (int s = 0; s < n; ++s) {
    const int home = s / g, lane = s % g;
    std::vector<int64_t> to_node(static_cast<size_t>(nodes), 0);
    int64_t all = 0;
    for (int d = 0; d < n; ++d) {
      to_node[static_cast<size_t>(d / g)] += rows[idx(s, d)];
      all += rows[idx(s, d)];
    }
    for (int node = 0; node < nodes; ++node) {
      const int64_t copies = to_node[static_cast<size_t>(node)];
      if (node == home || copies == 0 || all == 0) continue;
      // Distinct tokens reaching `node`: its part of tokens x reach, no fewer
      // than copies / top_k (a token brings at most top_k copies), no more
      // than the copies or the tokens.
      const double share = static_cast<double>(r.tokens()) * reach *
                           static_cast<double>(copies) / static_cast<double>(all);
      const int64_t least = (copies + r.top_k() - 1) / r.top_k();
      const int64_t most = std::min(copies, r.tokens());
      const int64_t tokens = std::clamp(static_cast<int64_t>(std::llround(share)), least, most);
      ib[idx(s, node * g + lane)] += tokens;
    }
    for (int d = 0; d < n; ++d) {
      const int via = d / g == home ? s : (d / g) * g + lane;  // the rail GPU on d's node
      nvlink[idx(via, d)] += rows[idx(s, d)];
    }
  }
  return {ib, nvlink};
}

SplitMatrixPtr leg_bytes(const std::vector<int64_t>& rows, int n, int64_t bytes_per_row,
                         bool transpose) {
  std::vector<int64_t> b(rows.size());
  for (int s = 0; s < n; ++s) {
    for (int d = 0; d < n; ++d) {
      const int64_t v = rows[static_cast<size_t>(transpose ? d * n + s : s * n + d)];
      b[static_cast<size_t>(s * n + d)] = v * bytes_per_row;
    }
  }
  return std::make_shared<const SplitMatrix>(n, std::move(b));
}

namespace {

// Appends one rank's ops, each after the previous.
class RankEmitter {
 public:
  RankEmitter(WorkloadGraph& g, MoeLayerInfo& info, const std::string& prefix,
              uint16_t compute, uint16_t comm)
      : g_(g), info_(info), prefix_(prefix), compute_(compute), comm_(comm) {}

  // The kind of Python call the ops emitted from now on are (collectives: nccl).
  void calls(HostCall c) { call_ = c; }
  // A fixed host cost (µs) paid with the next op's launch (an expert loop's),
  // that launch's host delay named `what` (its duration differs from the
  // other launches of its kind).
  void before_next(double us, const std::string& what) {
    pending_us_ += us;
    pending_name_ = what;
  }
  void kernel(MoeRole role, const std::string& what, ComputeOp shape) {
    Op op;
    op.kind = OpKind::compute;
    op.stream = compute_;
    op.payload = std::move(shape);
    add(role, what, std::move(op));
  }
  void gemm(MoeRole role, const std::string& what, int64_t m, int64_t n, int64_t k, Dtype dt) {
    if (m <= 0 || n <= 0 || k <= 0) return;  // an expert with no rows launches nothing
    kernel(role, what, ComputeOp{GemmShape{m, n, k, 1, dt}});
  }
  // Elementwise over `elements` reading `inputs` tensors (0: a fill).
  void elementwise(MoeRole role, const std::string& what, int64_t elements, int inputs,
                   double flops, Dtype dt, double efficiency = 1.0) {
    if (elements <= 0) return;
    MemoryOpShape s;
    s.bandwidth_efficiency = efficiency;
    s.kind = MemoryOpKind::elementwise;
    s.elements = elements;
    s.inputs = inputs;
    s.flops_per_element = flops;
    s.dtype = dt;
    kernel(role, what, ComputeOp{s});
  }
  void softmax(MoeRole role, const std::string& what, int64_t rows, int64_t cols, Dtype dt) {
    MemoryOpShape s;
    s.kind = MemoryOpKind::softmax;
    s.rows = rows;
    s.cols = cols;
    s.elements = rows * cols;
    s.flops_per_element = 5;
    s.dtype = dt;
    kernel(role, what, ComputeOp{s});
  }
  void collective(MoeRole role, const std::string& what, CollectiveOp c) {
    Op op;
    op.kind = OpKind::collective;
    op.stream = comm_;
    op.payload = std::move(c);
    add(role, what, std::move(op));
  }
  // The op added last (for a host sync after it).
  size_t last() const { return ops_.size() - 1; }
  // The ops, with the host's timeline interleaved when `host.modelled`.
  // `pace`: every host cost x this (the group's slowest host, >= 1).
  std::vector<Op> take(const EagerHostCost& host, uint16_t host_stream,
                       const std::vector<size_t>& syncs_after, double pace) {
    if (!host.modelled) return std::move(ops_);
    const auto us = [pace](double v) { return sim::Duration::from_seconds(v * pace * 1e-6); };
    std::vector<training::HostSync> syncs;
    for (size_t i : syncs_after) syncs.push_back({i, us(host.sync_us)});
    // Each kind's delays under their own name ("host launch router", ...).
    const auto named = [&](const std::string& what) {
      const uint32_t id = g_.intern_name(prefix_ + "/" + what);
      info_.roles[id] = MoeRole::host;
      return id;
    };
    const uint32_t names[] = {named("host launch router"), named("host launch permute"),
                              named("host launch"), named("host launch nccl"),
                              named("host launch expert")};
    const uint32_t sync_name = named("host sync");
    std::vector<training::HostCallCost> launch;
    for (size_t i = 0; i < calls_.size(); ++i) {
      const HostCall c = calls_[i];
      const uint32_t name = extra_name_[i].empty() ? names[static_cast<int>(c)] : named(extra_name_[i]);
      launch.push_back({us(host.call_us(c) + extra_us_[i]), name});
    }
    return training::with_host_calls(ops_, host_stream, launch, syncs, sync_name);
  }

 private:
  void add(MoeRole role, const std::string& what, Op op) {
    op.name = g_.intern_name(prefix_ + "/" + what);
    info_.roles[op.name] = role;
    if (!ops_.empty()) op.deps.push_back(static_cast<uint32_t>(ops_.size() - 1));
    calls_.push_back(is_communication(op.kind) ? HostCall::nccl : call_);
    extra_us_.push_back(pending_us_);
    extra_name_.push_back(pending_name_);
    pending_us_ = 0;
    pending_name_.clear();
    ops_.push_back(std::move(op));
  }
  WorkloadGraph& g_;
  MoeLayerInfo& info_;
  std::string prefix_;
  uint16_t compute_, comm_;
  std::vector<Op> ops_;
  HostCall call_ = HostCall::launch;
  std::vector<HostCall> calls_;  // per op of ops_
  std::vector<double> extra_us_;  // per op of ops_: fixed host cost before its launch
  std::vector<std::string> extra_name_;  // per op of ops_: its launch delay's own name, or ""
  double pending_us_ = 0;
  std::string pending_name_;
};

}  // namespace

std::vector<std::vector<Op>> build_moe_layer(WorkloadGraph& g, const MoeLayerSpec& spec,
                                             const Routing& routing, const std::vector<int>& ranks,
                                             uint16_t compute_stream, uint16_t comm_stream,
                                             uint16_t host_stream, MoeLayerInfo& info) {
  const int n = routing.ranks();
  if (static_cast<int>(ranks.size()) != n) {
    throw std::invalid_argument("moe layer: routing for " + std::to_string(n) + " ranks, group of " +
                                std::to_string(ranks.size()));
  }
  info.spec = spec;
  info.ranks = ranks;
  const std::string& p = info.name;
  const Dtype dt = spec.dtype;
  const int64_t h = spec.hidden, f = spec.expert_ffn, t = routing.tokens();
  const int64_t e_all = routing.experts();
  const int64_t row_bytes = h * static_cast<int64_t>(models::gpu::dtype_bytes(dt));
  const bool swiglu = spec.activation == ExpertActivation::swiglu;
  const EagerKernelEfficiency& ek = spec.eager;
  const int64_t fc1_out = swiglu ? 2 * f : f;
  const uint32_t comm = g.add_communicator(ranks);

  // Dispatch legs (token rows) as byte matrices; combine runs them back.
  const std::vector<std::vector<int64_t>> legs = dispatch_legs(routing, spec);
  std::vector<SplitMatrixPtr> out_legs, back_legs;
  for (const auto& leg : legs) out_legs.push_back(leg_bytes(leg, n, row_bytes, false));
  for (auto it = legs.rbegin(); it != legs.rend(); ++it) {
    back_legs.push_back(leg_bytes(*it, n, row_bytes, true));
  }
  // Legs in dispatch order: one, or the IB leg then the NVLink leg.
  const auto leg_suffix = [&legs](size_t dispatch_index) {
    return legs.size() == 1 ? std::string() : std::string(dispatch_index == 0 ? " ib" : " nvlink");
  };
  const std::vector<int64_t> rows = routing.rank_matrix();

  std::vector<std::vector<Op>> out;
  for (int r = 0; r < n; ++r) {
    RankEmitter e(g, info, p, compute_stream, comm_stream);
    const uint16_t slot = g.comm_slot(ranks[static_cast<size_t>(r)], comm);
    const auto all_to_all = [&](MoeRole role, const std::string& what, SplitMatrixPtr splits) {
      CollectiveOp c;
      c.kind = CollectiveKind::all_to_all;
      c.comm = slot;
      c.bytes = sim::Bytes(std::max<int64_t>(1, splits->max_send_buffer()));
      c.splits = std::move(splits);
      e.collective(role, what, std::move(c));
    };
    int64_t sent_rows = 0;
    for (int d = 0; d < n; ++d) sent_rows += rows[static_cast<size_t>(r * n + d)];
    const std::vector<int64_t> local = routing.local_rows(r);
    int64_t recv_rows = 0;
    for (int64_t v : local) recv_rows += v;
    const int first_expert = r * routing.experts_per_rank();
    const auto expert = [&](size_t i) { return "expert" + std::to_string(first_expert + static_cast<int>(i)); };

    std::vector<size_t> syncs;  // ops the host waits for
    if (spec.pass != MoePass::bwd) {
      e.calls(HostCall::router);
      e.gemm(MoeRole::router, "router", t, e_all, h, dt);
      // logits.float() (bf16 in, fp32 out; counted as bf16: a launch-bound kernel)
      e.elementwise(MoeRole::router, "router cast fp32", t * e_all, 1, 0, dt);
      e.softmax(MoeRole::router, "router softmax", t, e_all, Dtype::fp32);
      e.elementwise(MoeRole::router, "router topk", t * e_all, 1, 2, Dtype::fp32);
      e.calls(HostCall::permute);
      e.elementwise(MoeRole::permute, "permute", sent_rows * h, 1, 0, dt);
      e.calls(HostCall::launch);
      CollectiveOp counts;
      counts.kind = CollectiveKind::all_to_all;
      counts.comm = slot;
      counts.bytes = sim::Bytes(e_all * 8);  // one int64 count per expert
      e.collective(MoeRole::counts, "counts", counts);
      syncs.push_back(e.last());  // .tolist(): the splits on the host
      for (size_t i = 0; i < out_legs.size(); ++i) {
        all_to_all(MoeRole::dispatch, "dispatch" + leg_suffix(i), out_legs[i]);
      }
      e.elementwise(MoeRole::sort, "sort", recv_rows * h, 1, 0, dt);
      e.calls(HostCall::expert);
      e.before_next(spec.host.loop_fwd_us, "host launch expert loop fwd");
      for (size_t i = 0; i < local.size(); ++i) {
        const int64_t m = local[i];
        if (m == 0) continue;
        e.gemm(MoeRole::experts, expert(i) + " fc1", m, fc1_out, h, dt);
        if (swiglu) {
          e.elementwise(MoeRole::experts, expert(i) + " silu", m * f, 1, 4, dt, ek.strided);
          e.elementwise(MoeRole::experts, expert(i) + " mul", m * f, 2, 1, dt, ek.strided);
        } else {
          e.elementwise(MoeRole::experts, expert(i) + " gelu", m * f, 1, 8, dt);
        }
        e.gemm(MoeRole::experts, expert(i) + " fc2", m, h, f, dt);
      }
      e.calls(HostCall::launch);
      e.elementwise(MoeRole::unsort, "unsort", recv_rows * h, 1, 0, dt);
      for (size_t i = 0; i < back_legs.size(); ++i) {
        all_to_all(MoeRole::combine,
                   "combine" + leg_suffix(back_legs.size() - 1 - i),
                   back_legs[i]);
      }
      e.elementwise(MoeRole::unpermute, "unpermute scale", sent_rows * h, 1, 1, dt, ek.broadcast);
      e.elementwise(MoeRole::unpermute, "unpermute zero", t * h, 0, 0, dt);
      e.elementwise(MoeRole::unpermute, "unpermute index_add", sent_rows * h, 2, 1, dt, ek.atomic);
    }
    if (spec.pass != MoePass::fwd) {
      // The bench's permute_bwd: the output gradient's gather and scale.
      e.calls(HostCall::permute);
      e.elementwise(MoeRole::unpermute, "unpermute bwd gather", sent_rows * h, 1, 0, dt);
      e.elementwise(MoeRole::unpermute, "unpermute bwd scale", sent_rows * h, 1, 1, dt, ek.broadcast);
      e.calls(HostCall::launch);
      for (size_t i = 0; i < out_legs.size(); ++i) {
        all_to_all(MoeRole::combine, "combine bwd" + leg_suffix(i), out_legs[i]);
      }
      e.elementwise(MoeRole::sort, "sort bwd", recv_rows * h, 1, 0, dt);
      e.calls(HostCall::expert);
      e.before_next(spec.host.loop_bwd_us, "host launch expert loop bwd");
      for (size_t i = 0; i < local.size(); ++i) {
        const int64_t m = local[i];
        if (m == 0) continue;
        e.gemm(MoeRole::experts, expert(i) + " fc2 wgrad", f, h, m, dt);
        e.gemm(MoeRole::experts, expert(i) + " fc2 dgrad", m, f, h, dt);
        if (swiglu) {
          // Eager SwiGLU backward: mul, silu_backward, silu, mul, cat.
          e.elementwise(MoeRole::experts, expert(i) + " act bwd mul", m * f, 2, 1, dt, ek.strided);
          e.elementwise(MoeRole::experts, expert(i) + " silu bwd", m * f, 2, 6, dt, ek.strided);
          e.elementwise(MoeRole::experts, expert(i) + " act bwd silu", m * f, 1, 4, dt, ek.strided);
          e.elementwise(MoeRole::experts, expert(i) + " act bwd mul2", m * f, 2, 1, dt);
          e.elementwise(MoeRole::experts, expert(i) + " act bwd cat", 2 * m * f, 1, 0, dt);
        } else {
          e.elementwise(MoeRole::experts, expert(i) + " gelu bwd", m * f, 2, 10, dt);
        }
        e.gemm(MoeRole::experts, expert(i) + " fc1 wgrad", h, fc1_out, m, dt);
        e.gemm(MoeRole::experts, expert(i) + " fc1 dgrad", m, h, fc1_out, dt);
      }
      e.calls(HostCall::launch);
      e.elementwise(MoeRole::unsort, "unsort bwd", recv_rows * h, 1, 0, dt);
      for (size_t i = 0; i < back_legs.size(); ++i) {
        all_to_all(MoeRole::dispatch,
                   "dispatch bwd" + leg_suffix(back_legs.size() - 1 - i),
                   back_legs[i]);
      }
      e.elementwise(MoeRole::permute, "permute bwd zero", t * h, 0, 0, dt);
      e.elementwise(MoeRole::permute, "permute bwd index_add", sent_rows * h, 2, 1, dt, ek.atomic);
      e.gemm(MoeRole::router, "router dgrad", t, h, e_all, dt);
      e.gemm(MoeRole::router, "router wgrad", e_all, h, t, dt);
    }
    // A layer on several ranks issues at its slowest host's pace.
    out.push_back(e.take(spec.host, host_stream, syncs, n > 1 ? spec.host.slowest_rank : 1.0));
  }
  return out;
}

}  // namespace gcsim::workloads::moe
