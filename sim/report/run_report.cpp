#include "sim/report/run_report.h"

#include <algorithm>
#include <sstream>

#include "sim/report/format.h"
#include "sim/scenario/gpu_spec_loader.h"
#include "sim/report/moe_report.h"
#include "sim/report/network_report.h"
#include "sim/report/report_parts.h"
#include "sim/scenario/straggler_loader.h"
#include "sim/config/unit_parse.h"

namespace gcsim::cli {

using sim::config::Json;
using workloads::OpKind;

namespace {

struct RankTotals {
  size_t ops = 0;
  double compute_s = 0;
  double transfer_s = 0;  // communication moving data (after its peers met)
  double wait_s = 0;      // communication waiting for its peers (rendezvous)
  double first_start_s = -1, last_end_s = 0;
};

// A communication op's time before its peers met and after.
double wait_seconds(const sim::OpRecord& r) { return (r.met - r.start).seconds(); }
double busy_seconds(const sim::OpRecord& r) { return (r.end - r.met).seconds(); }

std::vector<RankTotals> rank_totals(const RunFigures& f) {
  const auto& g = *f.scenario->graph;
  std::vector<RankTotals> t(static_cast<size_t>(g.num_ranks()));
  for (const auto& r : f.records) {
    const auto& op = g.program(r.rank).ops[r.op];
    RankTotals& x = t[static_cast<size_t>(r.rank)];
    const double d = (r.end - r.start).seconds();
    ++x.ops;
    if (op.kind == OpKind::compute) x.compute_s += d;
    if (workloads::is_communication(op.kind)) {
      x.wait_s += wait_seconds(r);
      x.transfer_s += busy_seconds(r);
    }
    if (x.first_start_s < 0 || r.start.seconds() < x.first_start_s) x.first_start_s = r.start.seconds();
    x.last_end_s = std::max(x.last_end_s, r.end.seconds());
  }
  return t;
}

sim::Bytes peak_memory(const RunFigures& f) {
  sim::Bytes peak(0);
  for (auto b : f.memory_peak) peak = std::max(peak, b);
  return peak;
}

}  // namespace

Json build_summary(const RunFigures& f) {
  const Scenario& s = *f.scenario;
  const auto& g = *s.graph;
  Json j = summary_head(f);
  Json memory = Json::object();
  memory["peak_bytes_per_gpu"] = peak_memory(f).count();
  memory["capacity_bytes"] = s.cluster.gpu.hbm_capacity.count();
  memory["fits"] = f.oom.empty();
  if (!f.oom.empty()) memory["oom"] = f.oom;
  j["memory"] = memory;
  Json ops = Json::array();
  for (const auto& r : f.records) {
    const auto& op = g.program(r.rank).ops[r.op];
    Json o = {{"name", g.name(op.name)},
              {"rank", r.rank},
              {"stream", g.stream(op.stream)},
              {"start_s", r.start.seconds()},
              {"end_s", r.end.seconds()}};
    // Of [start, end], the part spent waiting for the peers to arrive.
    if (workloads::is_communication(op.kind)) o["wait_s"] = wait_seconds(r);
    ops.push_back(std::move(o));
  }
  j["ops"] = ops;
  if (!s.moe_layers.empty()) j["moe"] = moe_summary(f);
  add_summary_tail(j, s, f.network);
  return j;
}

std::string build_report(const RunFigures& f) {
  const Scenario& s = *f.scenario;
  const auto& g = *s.graph;
  std::ostringstream o;
  o << "# gcsim report: " << s.config_path << "\n\n";
  o << "| | |\n|---|---|\n";
  o << "| workload | " << s.workload_kind << " |\n";
  o << "| cluster | " << s.cluster.nodes << " node(s) x " << s.cluster.gpus_per_node << " "
    << s.cluster.gpu.name << " |\n";
  if (!s.cluster.stragglers.empty()) {
    o << "| stragglers | " << describe_stragglers(s.cluster.stragglers) << " |\n";
  }
  o << "| network model | " << s.network.model << " |\n";
  o << "| seed | " << s.seed << " |\n";
  o << "| simulated time | " << human_time(f.simulated_time.seconds()) << " |\n";
  o << "| events | " << f.events << " |\n";
  o << "| status | " << (f.oom.empty() ? "completed" : "stopped: " + f.oom) << " |\n\n";

  // Communication splits into the time its peers took to arrive (a
  // rendezvous wait: idle, not the network's doing) and the transfer.
  o << "## Per GPU\n\n| rank | ops | compute | communication (transfer) | waiting for peers | "
       "first start | last end | peak HBM |\n"
    << "|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  const auto totals = rank_totals(f);
  for (size_t r = 0; r < totals.size(); ++r) {
    const auto& t = totals[r];
    if (t.ops == 0) continue;
    o << "| " << r << " | " << t.ops << " | " << human_time(t.compute_s) << " | "
      << human_time(t.transfer_s) << " | " << human_time(t.wait_s) << " | "
      << human_time(t.first_start_s) << " | "
      << human_time(t.last_end_s) << " | " << human_bytes(f.memory_peak[r].as_double()) << " |\n";
  }

  // Ranked by the op's own work: a collective's wait for late peers is
  // shown beside it, not counted as its time.
  o << "\n## Longest ops\n\n| op | rank | kind | stream | start | busy | waiting for peers |\n"
    << "|---|---:|---|---|---:|---:|---:|\n";
  std::vector<sim::OpRecord> by_length = f.records;
  std::stable_sort(by_length.begin(), by_length.end(), [](const auto& a, const auto& b) {
    return (a.end - a.met) > (b.end - b.met);
  });
  for (size_t i = 0; i < std::min<size_t>(20, by_length.size()); ++i) {
    const auto& r = by_length[i];
    const auto& op = g.program(r.rank).ops[r.op];
    o << "| " << g.name(op.name) << " | " << r.rank << " | " << sim::op_category(op.kind) << " | "
      << g.stream(op.stream) << " | " << human_time(r.start.seconds()) << " | "
      << human_time(busy_seconds(r)) << " | "
      << (workloads::is_communication(op.kind) ? human_time(wait_seconds(r)) : std::string("-"))
      << " |\n";
  }
  o << moe_report_section(f);
  const auto& gpu = s.cluster.gpu;
  const auto& eff = gpu.efficiency;
  o << "\n## Hardware model\n\n| " << gpu.name << " | peak | efficiency used |\n|---|---:|---:|\n";
  o << "| bf16 tensor | " << fmt("%.0f TFLOP/s", gpu.tensor_peak_for(models::gpu::Dtype::bf16).tflops())
    << " | " << fmt("%.2f", eff.tensor_for(models::gpu::Dtype::bf16)) << " |\n";
  o << "| HBM | " << fmt("%.0f GB/s", gpu.hbm_bandwidth.gb_per_s()) << " | "
    << fmt("%.2f", eff.hbm) << " |\n";
  o << "| attention fwd / bwd | tensor peak | " << fmt("%.2f", eff.attention) << " / "
    << fmt("%.2f", eff.attention_backward) << " |\n";
  o << "| SMs, launch latency, per-wave overhead | " << gpu.sm_count << " | "
    << sim::format_duration(gpu.kernel_launch_latency) << ", "
    << sim::format_duration(eff.tile_overhead) << " |\n";
  o << "| NVLink per GPU each way | " << fmt("%.0f GB/s", gpu.nvlink_bandwidth.gb_per_s())
    << " | |\n";
  // calibration_applied names the profile file whether the preset chose it or
  // cluster.calibration did; empty means the preset's own rounded figures.
  const std::string& profile = s.cluster.gpu.calibration_applied;
  o << (profile.empty() ? "\nEfficiencies from the preset (no calibration profile).\n"
                        : "\nEfficiencies from the calibration profile " + profile + ".\n");
  o << "\n## Memory\n\nPeak HBM per GPU " << human_bytes(peak_memory(f).as_double()) << " of "
    << human_bytes(s.cluster.gpu.hbm_capacity.as_double()) << ": "
    << (f.oom.empty() ? "fits." : "**does not fit** (" + f.oom + ").") << "\n";
  o << report_tail(s, f.network);
  return o.str();
}

std::string human_summary(const RunFigures& f, const std::string& out_dir, bool trace) {
  const Scenario& s = *f.scenario;
  std::ostringstream o;
  o << "gcsim: " << s.config_path << "\n";
  o << "  " << s.workload_kind << " on " << s.cluster.total_gpus() << " x " << s.cluster.gpu.name
    << ", network " << s.network.model << ", seed " << s.seed << "\n";
  o << "  simulated " << human_time(f.simulated_time.seconds()) << " (" << f.records.size()
    << " ops, " << f.events << " events) in " << fmt("%.3f", f.wall_time_s) << " s wall\n";
  o << "  peak HBM " << human_bytes(peak_memory(f).as_double()) << " of "
    << human_bytes(s.cluster.gpu.hbm_capacity.as_double()) << " per GPU"
    << (f.oom.empty() ? "" : "  ** OUT OF MEMORY: " + f.oom + " **") << "\n";
  for (const auto& n : s.notes) o << "  note: " << n << "\n";
  o << "  wrote " << out_dir << "/summary.json, report.md, report.html" << (trace ? ", trace.json" : "")
    << "\n";
  return o.str();
}

}  // namespace gcsim::cli
