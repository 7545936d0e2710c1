#include "workloads/estimate/comm_estimate.h"

#include <algorithm>
#include <cmath>

#include "models/gpu/dtype.h"
#include "workloads/training/grad_buckets.h"
#include "workloads/training/memory_model.h"
#include "workloads/training/pipeline_schedule.h"
#include "workloads/training/rank_grid.h"

namespace gcsim::workloads::estimate {

namespace wt = workloads::training;
using collectives::CollectiveOp;

const char* link_class_name(LinkClass k) {
  return k == LinkClass::scale_up ? "NVLink (scale-up)" : "NIC (scale-out)";
}

namespace {

// Latency-bound steps of the ring (or direct) form of `op` among n ranks.
double ring_steps(CollectiveOp op, int n) {
  switch (op) {
    case CollectiveOp::all_reduce: return 2.0 * (n - 1);
    case CollectiveOp::all_gather:
    case CollectiveOp::reduce_scatter:
    case CollectiveOp::all_to_all:
    case CollectiveOp::broadcast:
    case CollectiveOp::reduce: return n - 1.0;
    case CollectiveOp::send_recv: return 1.0;
  }
  return 1.0;
}

std::string factor_text(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::all_reduce: return "2(n-1)/n S";
    case CollectiveOp::all_gather:
    case CollectiveOp::reduce_scatter:
    case CollectiveOp::all_to_all: return "(n-1)/n S";
    default: return "S";
  }
}

}  // namespace

Line wire_bytes_line(CollectiveOp op, double bytes, int n) {
  const double f = n <= 1 ? 0.0 : collectives::bus_bandwidth_factor(op, n);
  return make_line("bytes sent per GPU, " + std::string(collectives::op_name(op)), f * bytes, Unit::bytes,
                   factor_text(op) + " = " + num(f) + " x " + num(bytes) + " (n " + num(n) + ")");
}

Line ideal_time_line(CollectiveOp op, double bytes, int n, double bw, double latency) {
  const double wire = n <= 1 ? 0.0 : collectives::bus_bandwidth_factor(op, n) * bytes;
  const double steps = n <= 1 ? 0.0 : ring_steps(op, n);
  const double t = (bw > 0 ? wire / bw : 0.0) + steps * latency;
  return make_line("ideal time, " + std::string(collectives::op_name(op)), t, Unit::seconds,
                   "wire / bw + steps x latency = " + num(wire) + " / " + num(bw) + " + " + num(steps) +
                       " x " + num(latency));
}

namespace {

// Global ranks of the group of `dim` that contains rank 0.
std::vector<int> group_members(const wt::TrainingConfig& c, const std::string& dim) {
  const wt::RankGrid grid(c.parallel);
  if (dim == "TP" || dim == "SP") return grid.group(wt::Group::tp, 0);
  if (dim == "CP") return grid.group(wt::Group::cp, 0);
  if (dim == "EP") return grid.group(wt::Group::ep, 0);
  if (dim == "DP") return grid.group(wt::Group::dp, 0);
  if (dim == "DP (experts)") return grid.group(wt::Group::expert_dp, 0);
  std::vector<int> members{0};
  if (dim == "PP" && grid.extent(wt::Axis::pp) > 1) members.push_back(grid.moved(0, wt::Axis::pp, 1));
  return members;
}

}  // namespace

int group_nodes(const wt::TrainingConfig& c, const std::string& dim, int gpus_per_node) {
  std::vector<int> nodes;
  for (int r : group_members(c, dim)) nodes.push_back(r / std::max(1, gpus_per_node));
  std::sort(nodes.begin(), nodes.end());
  return static_cast<int>(std::unique(nodes.begin(), nodes.end()) - nodes.begin());
}

LinkClass group_link(const wt::TrainingConfig& c, const std::string& dim, int gpus_per_node) {
  return group_nodes(c, dim, gpus_per_node) > 1 ? LinkClass::scale_out : LinkClass::scale_up;
}

std::vector<CommRow> estimate_training_comm(const wt::TrainingConfig& c, const LinkRates& links,
                                            const wt::PipelinePlan* built) {
  const auto& p = c.parallel;
  const auto& m = c.model;
  // Activations travel in 16 bits (fp8 runs keep bf16 activations between layers).
  const double act = 2.0;
  const double mb = static_cast<double>(c.micro_batches());
  const double tokens = static_cast<double>(c.batch.micro) * static_cast<double>(m.seq_len) / p.cp;
  const double h = static_cast<double>(m.hidden);
  // Layers on the fullest pipeline rank: its stages' layers.
  wt::PipelinePlan own;
  const wt::PipelinePlan& plan =
      built ? *built : (own = wt::build_pipeline(p.schedule, p.pp, p.virtual_stages, static_cast<int>(mb)));
  const auto stages = wt::model_stage_layers(c, plan);
  int layers = 0, moe_layers = 0;
  double dense = 0, expert = 0;
  for (int r = 0; r < p.pp; ++r) {
    int l = 0, lm = 0;
    for (int k : plan.stages_of(r)) {
      const auto& s = stages[static_cast<size_t>(k)];
      l += s.count;
      for (int i = s.first; i < s.first + s.count; ++i) lm += m.is_moe_layer(i) ? 1 : 0;
    }
    layers = std::max(layers, l);
    moe_layers = std::max(moe_layers, lm);
    const auto rp = wt::rank_params(c, plan, r);
    dense = std::max(dense, rp.dense);
    expert = std::max(expert, rp.expert);
  }
  std::vector<CommRow> rows;
  auto add = [&](std::string dim, CollectiveOp op, int n, double count, double bytes, std::string why) {
    CommRow r;
    r.dimension = std::move(dim);
    r.op = op;
    r.group = n;
    r.count = count;
    r.bytes_each = bytes;
    r.link = group_link(c, r.dimension, links.gpus_per_node);
    r.why = std::move(why);
    const double bw = links.bandwidth(r.link);
    const double lat = r.link == LinkClass::scale_up ? links.scale_up_latency_s : links.scale_out_latency_s;
    // A ring shift or pipeline send moves S once whatever the group size.
    const int wire_n = op == CollectiveOp::send_recv ? 2 : n;
    r.wire_bytes = wire_bytes_line(op, bytes, wire_n);
    r.time_each = ideal_time_line(op, bytes, wire_n, bw, lat);
    const int nodes = group_nodes(c, r.dimension, links.gpus_per_node);
    // An all-to-all across nodes keeps the on-node share on NVLink.
    if (op == CollectiveOp::all_to_all && nodes > 1) r.time_each = collective_bound_line(op, bytes, n, nodes, links);
    r.time_total = make_line(r.dimension + " " + std::string(collectives::op_name(op)) + " per step",
                             count * r.time_each.value, Unit::seconds,
                             num(count) + " x " + format_value(r.time_each.value, Unit::seconds));
    rows.push_back(std::move(r));
  };
  const std::string per_step = num(layers) + " layers x " + num(mb) + " micro-batches";
  if (p.tp > 1) {
    // Megatron: one collective after attention and one after the MLP, each
    // way; full recompute runs the forward's pair again.
    const double per_layer = c.recompute == wt::Recompute::full ? 6.0 : 4.0;
    const double bytes = tokens * h * act;
    const std::string why = num(per_layer) + " per layer (2 forward, 2 backward" +
                            (per_layer > 4 ? ", 2 recompute" : "") + ") x " + per_step;
    if (p.sequence_parallel) {
      // Megatron keeps only the sequence-sharded input of the QKV and FC1
      // GEMMs and gathers it again in the backward for their weight
      // gradients: 2 more all-gathers per layer.
      add("SP", CollectiveOp::all_gather, p.tp, (per_layer + 2.0) * layers * mb, bytes,
          num(per_layer + 2.0) + " per layer (2 forward, 2 backward, 2 re-gathers for the weight "
          "gradients" + (per_layer > 4 ? std::string(", 2 recompute") : std::string()) + ") x " +
              per_step);
      add("SP", CollectiveOp::reduce_scatter, p.tp, per_layer * layers * mb, bytes, why);
    } else {
      add("TP", CollectiveOp::all_reduce, p.tp, per_layer * layers * mb, bytes, why);
    }
  }
  if (p.cp > 1) {
    // Ring attention: cp - 1 K/V chunks forward; backward passes K/V and
    // their gradients (twice the bytes).
    const double kv = tokens * 2.0 * static_cast<double>(m.kv_width()) / std::max(1, p.tp) * act;
    add("CP", CollectiveOp::send_recv, p.cp, (p.cp - 1.0) * layers * mb * 3.0, kv,
        "(cp-1) K/V chunks forward + 2 x (cp-1) backward, per layer x " + per_step);
  }
  if (p.ep > 1 && moe_layers > 0) {
    // A token goes to top_k experts; node-limited routing (DeepSeek-V3 M = 4)
    // sends it across the network once per node at most. FP8 runs dispatch
    // in 1 byte and combine in 2.
    const bool spans = group_nodes(c, "EP", links.gpus_per_node) > 1;
    int copies = m.moe.top_k;
    if (spans && m.moe.max_route_nodes > 0) copies = std::min(copies, m.moe.max_route_nodes);
    const double combine = tokens * copies * h * act;
    const double dispatch = c.precision == wt::Precision::fp8 ? combine / act : combine;
    const std::string what = " per MoE layer x " + num(moe_layers) + " MoE layers x " + num(mb) +
                             " micro-batches; tokens x " + num(copies) + " copies x h x ";
    if (dispatch != combine) {
      add("EP", CollectiveOp::all_to_all, p.ep, 2.0 * moe_layers * mb, dispatch,
          "dispatch forward and backward" + what + "1 B (fp8)");
      add("EP", CollectiveOp::all_to_all, p.ep, 2.0 * moe_layers * mb, combine,
          "combine forward and backward" + what + "2 B");
    } else {
      add("EP", CollectiveOp::all_to_all, p.ep, 4.0 * moe_layers * mb, combine,
          "dispatch + combine, forward and backward" + what + "2 B");
    }
  }
  if (p.pp > 1) {
    const double bytes = tokens * h * act / (p.sequence_parallel ? p.tp : 1);
    // Every micro-batch's activation crosses each of the p v - 1 chunk
    // boundaries forward and its gradient backward: 2 (p v - 1) sends,
    // p GPUs share them.
    const double chunks = static_cast<double>(p.pp) * static_cast<double>(plan.stages_of(0).size());
    add("PP", CollectiveOp::send_recv, 2, 2.0 * (chunks - 1.0) / p.pp * mb, bytes,
        "2 (p v - 1) / p sends per micro-batch per GPU (activation forward, gradient backward, "
        "every chunk boundary); b s h x 2 B" + std::string(p.sequence_parallel ? " / t" : ""));
  }
  const int zs = c.optimizer.zero_stage;
  const CollectiveOp grad_op = zs == 0 ? CollectiveOp::all_reduce : CollectiveOp::reduce_scatter;
  auto dp_rows = [&](const std::string& dim, int n, double params) {
    if (n <= 1 || params <= 0) return;
    const double grads = params * c.optimizer.grad_bytes;
    const double bucket = wt::grad_bucket_bytes(c);
    const double buckets = std::max(1.0, std::ceil(grads / bucket));
    // ZeRO-2/3 shard the gradients, so each micro-batch's are reduced as
    // they are made (never accumulated whole), as the generator does.
    const double times = zs >= 2 ? mb : 1.0;
    add(dim, grad_op, n, buckets * times, grads / buckets,
        "gradients " + num(params) + " params x " + num(c.optimizer.grad_bytes) + " B in " + num(buckets) +
            " buckets of <= " + num(bucket) + " B" +
            (zs >= 2 ? ", every micro-batch (" + num(mb) + "): ZeRO-" + std::to_string(zs) + " shards them" : ""));
    const double w = params * c.optimizer.weight_bytes;
    if (zs == 1 || zs == 2) {
      add(dim, CollectiveOp::all_gather, n, 1.0, w, "updated weights after the optimizer step");
    } else if (zs == 3) {
      add(dim, CollectiveOp::all_gather, n, 2.0 * mb, w,
          "weights gathered for the forward and the backward of each micro-batch");
    }
  };
  dp_rows("DP", p.dp * p.cp, dense);
  dp_rows("DP (experts)", std::max(1, p.dp / p.ep) * p.cp, expert);
  return rows;
}

}  // namespace gcsim::workloads::estimate

namespace gcsim::workloads::estimate {

Line collective_bound_line(CollectiveOp op, double bytes, int n, int nodes, const LinkRates& links) {
  if (nodes <= 1) {
    Line l = ideal_time_line(op, bytes, n, links.scale_up_bytes_per_s, links.scale_up_latency_s);
    l.label = "ideal time in one node (NVLink)";
    return l;
  }
  if (op == CollectiveOp::all_to_all) {
    const double g = std::min(n, links.gpus_per_node);
    const double off = (n - g) / n * bytes, on = (g - 1) / n * bytes;
    const double t_off = off / links.scale_out_bytes_per_s, t_on = on / std::max(1.0, links.scale_up_bytes_per_s);
    return make_line("ideal time across " + num(nodes) + " nodes", std::max(t_off, t_on) + links.scale_out_latency_s,
                     Unit::seconds,
                     "max((n-g)/n S / NIC, (g-1)/n S / NVLink) + latency = max(" + num(off) + " / " +
                         num(links.scale_out_bytes_per_s) + ", " + num(on) + " / " + num(links.scale_up_bytes_per_s) +
                         ") + " + num(links.scale_out_latency_s));
  }
  Line l = ideal_time_line(op, bytes, n, links.scale_out_bytes_per_s, links.scale_out_latency_s);
  l.label = "ideal time across " + num(nodes) + " nodes (NIC bound)";
  return l;
}

}  // namespace gcsim::workloads::estimate
