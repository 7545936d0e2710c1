// `gcsim explain` for the workloads without a model: a collective sweep
// (bytes on the wire and the bandwidth bound per size), a graph or Chakra
// trace (each op's roofline or ideal transfer time), and a failures study
// (job MTBF, Young's and Daly's checkpoint intervals).
#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <variant>

#include "models/cluster/cluster_model.h"
#include "sim/scenario/collective_workload_loader.h"
#include "sim/cli/explain_command.h"
#include "sim/report/explain_table.h"
#include "sim/scenario/failures_loader.h"
#include "workloads/estimate/kernel_estimate.h"
#include "workloads/estimate/reliability_estimate.h"

namespace gcsim::cli {

using sim::config::Json;
namespace collectives = ::gcsim::models::collectives;
namespace gpu = ::gcsim::models::gpu;
using collectives::CollectiveOp;

namespace {

int nodes_spanned(const std::vector<int>& ranks, int per_node) {
  std::set<int> nodes;
  for (int r : ranks) nodes.insert(r / std::max(1, per_node));
  return static_cast<int>(nodes.size());
}

// Simulated span of an op by name: the latest start over the ranks that
// ran it (a collective starts when its last member arrives) to its end.
struct Span {
  double start = -1, end = 0;
};

}  // namespace

std::string explain_collective(const Scenario& s, const Json& summary) {
  const CollectiveWorkload& w = *s.collective;
  const auto links = link_rates(s.cluster);
  const int n = static_cast<int>(w.ranks.size());
  const int nodes = nodes_spanned(w.ranks, s.cluster.gpus_per_node);
  const std::string link = busiest_link_text(summary);
  std::ostringstream o;
  o << "Collective `" << collectives::op_name(w.op) << "` over " << n << " GPUs on " << nodes
    << " node(s). A model, memory and step time do not apply; what applies is the bytes each GPU sends and "
       "the link-rate bound per size.\n\n";
  std::vector<est::Line> lines;
  std::vector<Comparison> cmp;
  const Json& results = field(summary, "results");
  for (size_t i = 0; i < w.sizes.size() && i < results.size(); ++i) {
    const double bytes = w.sizes[i].as_double();
    const est::Line wire = est::wire_bytes_line(w.op, bytes, n);
    est::Line bound = est::collective_bound_line(w.op, bytes, n, nodes, links);
    bound.label += ", " + est::format_value(bytes, est::Unit::bytes);
    lines.push_back(wire);
    lines.push_back(bound);
    const Json& r = results[i];
    const double sim_t = r.value("time_s", 0.0);
    const std::string how = r.value("algorithm", std::string("?")) + "/" + r.value("protocol", std::string("?")) +
                            ", " + std::to_string(r.value("channels", 0)) + " channels";
    Comparison c{std::string(collectives::op_name(w.op)) + " " + est::format_value(bytes, est::Unit::bytes),
                 bound.value, sim_t, est::Unit::seconds, ""};
    const double link_bw = links.bandwidth(nodes > 1 ? est::LinkClass::scale_out : est::LinkClass::scale_up);
    const double wire_time = link_bw > 0 ? wire.value / link_bw : 0.0;
    const double latency_share = bound.value > 0 ? (bound.value - wire_time) / bound.value : 0.0;
    if (sim_t < bound.value) {
      c.reason = r.value("algorithm", std::string()) == "nvls"
                     ? "NVLS reduces inside the NVSwitch: each GPU sends its buffer once instead of 2(n-1)/n of it (" + how + ")"
                     : "the chosen algorithm moves fewer bytes per GPU than the ring bound (" + how + ")";
    } else if (latency_share > 0.5 || sim_t < 50e-6) {
      c.reason = "latency-bound at this size: per-step protocol latency and launch set the time, not bandwidth (" + how + ")";
    } else {
      c.reason = "the calibrated collective model (" + how + ") reaches " +
                 est::format_value(sim_t > 0 ? bound.value / sim_t : 0.0, est::Unit::fraction) +
                 " of the bound's bandwidth: protocol efficiency, channel count and per-step latency";
    }
    if (!link.empty() && nodes > 1) c.reason += "; " + link;
    cmp.push_back(c);
  }
  o << worksheet_section("3. Communication: bytes and bounds per size", lines);
  o << "## 5. Estimate vs simulation\n\n" << comparison_table(cmp, "see report.md");
  return o.str();
}

std::string explain_graph(const Scenario& s, const Json& summary) {
  std::ostringstream o;
  o << "A `" << s.workload_kind << "` workload has no model: each op is estimated from its own description "
       "(kernels by their roofline, transfers by bytes over the link), and set beside its simulated span.\n\n";
  if (!s.graph) return o.str();
  std::map<std::pair<std::string, int>, Span> spans;
  std::map<std::string, Span> by_name;
  for (const auto& r : field(summary, "ops")) {
    const std::string name = r.value("name", std::string());
    const Span sp{r.value("start_s", 0.0), r.value("end_s", 0.0)};
    spans[{name, r.value("rank", 0)}] = sp;
    Span& b = by_name[name];
    b.start = std::max(b.start, sp.start);
    b.end = std::max(b.end, sp.end);
  }
  const auto links = link_rates(s.cluster);
  const std::string link = busiest_link_text(summary);
  const auto& g = *s.graph;
  std::vector<est::Line> lines;
  std::vector<Comparison> cmp;
  std::set<std::string> seen;
  const size_t kMaxRows = 40;  // a long trace keeps its first ops; the rest behave alike
  for (int rank = 0; rank < g.num_ranks() && cmp.size() < kMaxRows; ++rank) {
    for (const auto& op : g.program(rank).ops) {
      if (cmp.size() >= kMaxRows) break;
      const std::string name = g.name(op.name);
      if (op.kind == workloads::OpKind::memory || op.kind == workloads::OpKind::recv || seen.count(name)) continue;
      seen.insert(name);
      Comparison c{name, 0, 0, est::Unit::seconds, ""};
      if (op.kind == workloads::OpKind::compute) {
        const auto& comp = std::get<workloads::ComputeOp>(op.payload);
        gpu::KernelDesc k;
        try {
          k = models::cluster::kernel_for(s.cluster.gpu, comp);
        } catch (const std::invalid_argument&) {
          continue;  // the run rejected it already; nothing to estimate
        }
        const est::KernelEstimate e = est::estimate_kernel(s.cluster.gpu, k);
        lines.push_back(e.roofline);
        lines.push_back(e.waves);
        c.estimate = e.roofline.value;
        const Span sp = spans[{name, rank}];
        c.simulated = sp.end - sp.start;
        c.reason = "fixed overheads `" + e.overheads.formula + "` = " +
                   est::format_value(e.overheads.value, est::Unit::seconds) + "; wave quantization keeps " +
                   est::format_value(e.waves.value, est::Unit::fraction) + " of the SM slots busy (" + e.waves.formula +
                   ")" +
                   (e.latency_bound  ? "; latency-bound: each CTA walks its blocks one load after another"
                    : e.memory_bound ? "; HBM-bound: tiles share the bandwidth per SM"
                                     : "");
      } else if (op.kind == workloads::OpKind::collective) {
        const auto& col = std::get<workloads::CollectiveOp>(op.payload);
        const auto members = g.participants(rank, op);
        const int n = static_cast<int>(members.size());
        est::Line b = est::collective_bound_line(workloads::collective_op(col.kind), col.bytes.as_double(), n,
                                                 nodes_spanned(members, s.cluster.gpus_per_node), links);
        b.label = name + ": " + b.label;
        lines.push_back(b);
        c.estimate = b.value;
        const Span sp = by_name[name];
        c.simulated = sp.end - sp.start;
        c.reason = "the collective model's algorithm, protocol and channels reach less than the link rate (bound `" +
                   b.formula + "`)";
      } else if (op.kind == workloads::OpKind::send) {
        const auto& p = std::get<workloads::P2pOp>(op.payload);
        const int peer = g.peer_of(rank, p);
        const bool across = rank / s.cluster.gpus_per_node != peer / s.cluster.gpus_per_node;
        est::Line b = est::ideal_time_line(CollectiveOp::send_recv, p.bytes.as_double(), 2,
                                           links.bandwidth(across ? est::LinkClass::scale_out : est::LinkClass::scale_up),
                                           across ? links.scale_out_latency_s : links.scale_up_latency_s);
        b.label = name + ": send " + std::to_string(rank) + " -> " + std::to_string(peer);
        lines.push_back(b);
        c.estimate = b.value;
        const Span sp = spans[{name, rank}];
        c.simulated = sp.end - sp.start;
        c.reason = "a single send uses one path: its flow gets the rate the network model gives one transfer, "
                   "below the GPU's aggregate link bandwidth";
      } else if (op.kind == workloads::OpKind::delay) {
        c.estimate = std::get<workloads::DelayOp>(op.payload).duration.seconds();
        const Span sp = spans[{name, rank}];
        c.simulated = sp.end - sp.start;
      } else {
        continue;
      }
      // Ops of the same rank running at the same time share SMs and HBM.
      const Span mine = op.kind == workloads::OpKind::collective ? by_name[name] : spans[{name, rank}];
      for (const auto& [key, other] : spans) {
        if (key.second != rank || key.first == name) continue;
        if (other.start < mine.end && mine.start < other.end && c.simulated > c.estimate) {
          c.reason = "runs beside " + key.first + " on rank " + std::to_string(rank) +
                     " (they share the SMs and HBM bandwidth); " + c.reason;
          break;
        }
      }
      if (op.kind != workloads::OpKind::compute && !link.empty() && !c.reason.empty()) c.reason += "; " + link;
      cmp.push_back(c);
    }
  }
  o << worksheet_section("1-4. Ops: roofline and transfer bounds", lines);
  o << "## 5. Estimate vs simulation (span of each op)\n\n" << comparison_table(cmp, "see trace.json");
  return o.str();
}

std::string explain_failures(const Scenario& s, const Json& summary) {
  const FailuresSetup& f = *s.failures;
  const Json& r = field(summary, "failures");
  const double per_hour = f.counts.total_rate_per_hour(f.rates);
  const double interruptions = std::max(1e-9, r.value("interruptions", 0.0));
  const double recovery = r.value("recovery_s", 0.0) / interruptions;
  const est::ReliabilityEstimate e =
      est::estimate_reliability(per_hour, r.value("checkpoint_cost_s", 0.0), recovery);
  std::ostringstream o;
  if (per_hour <= 0) {
    // No failure can happen: no MTBF, no optimal interval to estimate.
    o << "## 6. Reliability\n\n- job MTBF: none (no failures configured: every rate is 0)\n"
      << "- Young / Daly interval: none (no failures configured)\n\n";
    return o.str();
  }
  o << worksheet_section("6. Reliability (checkpoint cost and recovery per failure from the run's storage model)",
                         e.lines());
  std::vector<Comparison> cmp;
  cmp.push_back({"job MTBF", e.mtbf.value, r.value("job_mtbf_s", 0.0), est::Unit::seconds,
                 "the run sums the same per-class rates"});
  // With a configured interval the run keeps it (1797 s is 30 min of whole
  // steps); with `search` it reports the optimum it found.
  const bool searched = !f.interval.has_value();
  std::string why = searched ? "the run's optimum over simulated failure histories; Daly's form assumes exponential "
                               "job failures with a fixed recovery of " + est::format_value(recovery, est::Unit::seconds)
                             : "the config fixes the interval (checkpoint.interval), rounded to whole steps; Daly's "
                               "optimum for this delta is shown as the estimate";
  if (r.value("checkpoint_mode", std::string()) == "async") {
    why += "; async checkpoints stop the job only for the snapshot (delta " +
           est::format_value(r.value("checkpoint_cost_s", 0.0), est::Unit::seconds) + "), so checkpointing often is cheap";
  }
  cmp.push_back({searched ? "checkpoint interval (optimum)" : "checkpoint interval (configured)", e.daly.value,
                 r.value("checkpoint_interval_s", 0.0), est::Unit::seconds, why});
  const double eff = field(r, "effective_training_time_fraction").value("mean", 0.0);
  cmp.push_back({"useful fraction", e.useful_fraction.value, eff, est::Unit::fraction,
                 "the simulation waits for spares (" + est::num(r.value("spare_waits", 0.0)) +
                     " waits), draws failures per component class and loses work to correlated failures; Daly "
                     "charges a constant recovery per failure"});
  o << comparison_table(cmp, "see summary.json failures");
  return o.str();
}

}  // namespace gcsim::cli
