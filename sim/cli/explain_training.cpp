// `gcsim explain` for training: the worksheet (model, memory, communication,
// time) and the comparison with the simulated step's breakdown.
#include <algorithm>
#include <cmath>
#include <sstream>
#include <variant>

#include "models/cluster/cluster_model.h"
#include "sim/cli/explain_command.h"
#include "sim/report/explain_table.h"
#include "sim/scenario/training_workload_loader.h"
#include "workloads/estimate/kernel_estimate.h"
#include "workloads/estimate/memory_estimate.h"
#include "workloads/estimate/model_estimate.h"
#include "workloads/estimate/time_estimate.h"

namespace gcsim::cli {

using sim::config::Json;
namespace collectives = ::gcsim::models::collectives;
namespace wt = workloads::training;

namespace {

std::string comm_table(const std::vector<est::CommRow>& rows) {
  std::ostringstream o;
  o << "## 3. Communication per step (one GPU)\n\n";
  if (rows.empty()) return o.str() + "No parallel dimension communicates (one GPU per replica, DP 1).\n\n";
  o << "| dimension | collective | group | per step | bytes each | link | ideal each | ideal per step | why |\n"
    << "|---|---|---:|---:|---:|---|---:|---:|---|\n";
  for (const auto& r : rows) {
    o << "| " << r.dimension << " | " << collectives::op_name(r.op) << " | " << r.group << " | "
      << est::num(r.count) << " | " << est::format_value(r.bytes_each, est::Unit::bytes) << " | "
      << est::link_class_name(r.link) << " | " << est::format_value(r.time_each.value, est::Unit::seconds) << " | "
      << est::format_value(r.time_total.value, est::Unit::seconds) << " | " << r.why << " |\n";
  }
  o << "\nIdeal time = bytes sent per GPU (" << "all-reduce 2(n-1)/n S, all-gather/reduce-scatter/all-to-all "
    << "(n-1)/n S, send S) / link bandwidth + ring steps x hop latency. First row's working: `"
    << rows.front().wire_bytes.formula << "`, `" << rows.front().time_each.formula << "`.\n\n";
  return o.str();
}

double exposed(const Json& b, const char* dim) { return field(b, "exposed_comm_s").value(dim, 0.0); }

// Compute per pipeline rank in the simulation: the spread says whether the
// stages are balanced (embedding and head sit on the end stages).
std::string stage_spread(const Json& summary) {
  if (field(summary, "per_rank").size() < 2) return "";
  double lo = 1e300, hi = 0;
  int lo_r = 0, hi_r = 0;
  for (const auto& r : field(summary, "per_rank")) {
    const double c = r.value("compute_s", 0.0);
    if (c < lo) lo = c, lo_r = r.value("pipeline_rank", 0);
    if (c > hi) hi = c, hi_r = r.value("pipeline_rank", 0);
  }
  return "compute per pipeline rank ranges from " + est::format_value(lo, est::Unit::seconds) + " (rank " +
         std::to_string(lo_r) + ") to " + est::format_value(hi, est::Unit::seconds) + " (rank " +
         std::to_string(hi_r) + "): the slowest stage sets the pace and the others wait";
}

// The compute ops of one simulated rank's step, summed by class with the
// GPU model's own kernel descriptions: where compute time goes beyond the
// FLOP count.
std::string kernel_reason(const Scenario& s, const est::TrainingTimeEstimate& t) {
  const TrainingRun& run = *s.training;
  if (!s.graph || run.workload.simulated.empty()) return "";
  const int rank = run.workload.simulated.front();
  std::vector<models::gpu::KernelDesc> kernels;
  std::vector<bool> attention;
  const auto& ops = s.graph->program(rank).ops;
  const auto& categories = run.workload.categories.at(s.graph->program_id(rank));
  for (size_t i = 0; i < ops.size(); ++i) {
    const auto& op = ops[i];
    if (op.kind != workloads::OpKind::compute || categories[i] == wt::OpCategory::optimizer) continue;
    const auto& c = std::get<workloads::ComputeOp>(op.payload);
    kernels.push_back(models::cluster::kernel_for(s.cluster.gpu, c));
    attention.push_back(std::holds_alternative<models::gpu::AttentionShape>(c.shape));
  }
  const est::KernelMix mix = est::kernel_mix(s.cluster.gpu, kernels, attention);
  auto part = [](const char* name, const est::KernelClassTime& k) {
    return std::string(name) + " " + est::num(static_cast<double>(k.kernels)) + " kernels " +
           est::format_value(k.isolated_s, est::Unit::seconds) + " (roofline " +
           est::format_value(k.roofline_s, est::Unit::seconds) + ")";
  };
  std::string r = "kernel by kernel on rank " + std::to_string(rank) + ", as the GPU model times them alone: " +
                  part("GEMMs", mix.gemm) + ", " + part("attention", mix.attention) + ", " +
                  part("HBM/CUDA-core-bound (norms, activations, rotary, loss; outside the FLOP count)", mix.memory) +
                  "; launch latency and setup " +
                  est::format_value(mix.gemm.launch_s + mix.attention.launch_s + mix.memory.launch_s, est::Unit::seconds) +
                  " of it";
  const auto worst = std::min_element(t.waves.begin(), t.waves.end(),
                                      [](const est::Line& x, const est::Line& y) { return x.value < y.value; });
  if (worst != t.waves.end() && worst->value < 0.97) {
    r += "; wave quantization: " + worst->label + " keeps " + est::format_value(worst->value, est::Unit::fraction) +
         " of the SM-wave slots busy (" + worst->formula + ")";
  }
  return r;
}

}  // namespace

std::string explain_training(const Scenario& s, const Json& summary) {
  const TrainingRun& run = *s.training;
  const wt::TrainingConfig& c = run.config;
  const auto& gpu = s.cluster.gpu;
  std::ostringstream o;
  o << "Model " << c.model.name << "; TP " << c.parallel.tp << (c.parallel.sequence_parallel ? " (SP)" : "")
    << ", CP " << c.parallel.cp << ", PP " << c.parallel.pp << " " << wt::schedule_name(c.parallel.schedule)
    << ", DP " << c.parallel.dp << ", EP " << c.parallel.ep << ", ZeRO-" << c.optimizer.zero_stage
    << ", recompute " << wt::recompute_name(c.recompute) << "; " << c.batch.global << " sequences of "
    << c.model.seq_len << " tokens, " << c.micro_batches() << " micro-batches of " << c.batch.micro << ".\n\n";

  const est::ModelEstimate model = est::estimate_model(c.model);
  o << worksheet_section("1. Model", model.lines());
  const est::TrainingMemoryEstimate mem = est::estimate_training_memory(c, gpu.hbm_capacity.as_double());
  std::vector<est::Line> mem_lines = mem.lines();
  o << worksheet_section("2. Memory per GPU", mem_lines);
  o << (mem.fits ? "Fits in HBM.\n\n" : "**Does not fit in HBM.**\n\n");
  const auto rows = est::estimate_training_comm(c, link_rates(s.cluster));
  o << comm_table(rows);
  const est::TrainingTimeEstimate t = est::estimate_training_time(c, gpu, rows);
  std::vector<est::Line> time_lines = t.lines();
  time_lines.insert(time_lines.end(), t.waves.begin(), t.waves.end());
  o << worksheet_section("4. Time per step", time_lines);

  // 5. Beside the simulation.
  const Json& b = field(summary, "breakdown");
  const double step = summary.value("step_time_s", 0.0);
  const double compute_sim = b.value("compute_s", 0.0);
  std::vector<Comparison> cmp;
  cmp.reserve(16);  // rows are filled through pointers while added
  auto add = [&](std::string q, double e, double v, est::Unit u) {
    cmp.push_back(Comparison{std::move(q), e, v, u, ""});
    return &cmp.back();
  };
  // Compute: the simulated kernels' achieved rate against the one assumed.
  {
    Comparison* r = add("compute per GPU", t.compute.value, compute_sim, est::Unit::seconds);
    const double achieved = compute_sim > 0 ? t.hardware_flops.value / c.gpus() / compute_sim : 0.0;
    r->reason = "simulated kernels average " + est::format_value(achieved, est::Unit::flops_per_s) +
                " against the " + est::format_value(t.rate.value, est::Unit::flops_per_s) +
                " GEMM rate assumed; " + kernel_reason(s, t);
  }
  {
    Comparison* r = add("optimizer step", t.optimizer.value, b.value("optimizer_s", 0.0), est::Unit::seconds);
    r->reason = "the optimizer's HBM passes run as elementwise kernels whose tiles the GPU model times with "
                "launch latency and wave overhead";
  }
  {
    Comparison* r = add("bubble", t.bubble.value, b.value("bubble_s", 0.0), est::Unit::seconds);
    const std::string spread = stage_spread(summary);
    if (c.parallel.pp == 1) {
      r->reason = "PP 1 has no pipeline bubble; the simulated idle time is the wait for the tail of the "
                  "last collectives (charged to the bubble by the breakdown)";
    } else {
      r->reason = "the estimate weighs each stage by its layers and head and takes the sends as free; in the "
                  "simulation " +
                  (spread.empty() ? std::string("the stages wait on pipeline sends") : spread) +
                  ", and pipeline sends delay the fill and drain (exposed PP " +
                  est::format_value(exposed(b, "pp"), est::Unit::seconds) + ")";
    }
  }
  const std::string link = busiest_link_text(summary);
  for (const char* dim : {"TP", "CP", "EP", "PP", "DP"}) {
    std::string key(dim);
    std::transform(key.begin(), key.end(), key.begin(), ::tolower);
    const double sim_v = exposed(b, key.c_str());
    const double est_v = t.exposed_of(dim) + (key == "tp" ? t.exposed_of("SP") : 0.0);
    if (est_v == 0 && sim_v == 0) continue;
    Comparison* r = add("exposed " + std::string(dim) + " communication", est_v, sim_v, est::Unit::seconds);
    double ideal_total = 0;
    for (const auto& row : rows) {
      if (row.dimension.rfind(dim, 0) == 0 || (key == "tp" && row.dimension == "SP")) ideal_total += row.time_total.value;
    }
    std::string why;
    if (key == "dp") {
      why = "the simulated DP reduction overlaps the backward until the last bucket; what is left after the "
            "last micro-batch's backward (" + est::format_value(sim_v, est::Unit::seconds) +
            " exposed of " + est::format_value(ideal_total, est::Unit::seconds) + " ideal in all) is the "
            "collective model's time, not the link-rate bound";
      if (c.optimizer.zero_stage == 1 || c.optimizer.zero_stage == 2) why += ", plus the weight all-gather after the optimizer";
    } else if (key == "pp") {
      why = "pipeline sends wait for the receiving stage as well as the wire (" +
            est::format_value(ideal_total, est::Unit::seconds) + " ideal per step in all)";
    } else if (key == "cp") {
      why = "ring-attention chunks overlap attention only partly in the simulation (ideal sends " +
            est::format_value(ideal_total, est::Unit::seconds) + " per step)";
    } else {
      why = std::string(dim) + " collectives take longer than the bandwidth bound: NCCL-like algorithm and protocol "
            "choice, per-step latency and the collective model's achieved bus bandwidth (ideal " +
            est::format_value(ideal_total, est::Unit::seconds) + " per step)";
      if (sim_v < est_v) {
        why = std::string(dim) + " collectives run on their own streams and partly overlap compute in the simulation" +
              (c.parallel.schedule == wt::Schedule::dualpipe && key == "ep"
                   ? " (DualPipe pairs: more hides under the other chunk than max(0, EP - compute) assumes)"
                   : " (the backward's input-gradient collectives do not block the weight-gradient GEMMs)");
      }
    }
    if (!link.empty()) why += "; " + link;
    r->reason = why;
  }
  {
    Comparison* r = add("step time", t.step.value, step, est::Unit::seconds);
    // The term with the largest difference carries the step's.
    std::string carrier;
    double worst = 0;
    for (const auto& x : cmp) {
      if (x.unit != est::Unit::seconds || x.quantity == "step time") continue;
      const double d = x.simulated - x.estimate;
      if (std::fabs(d) > std::fabs(worst)) worst = d, carrier = x.quantity;
    }
    r->reason = "largest part of the difference: " + carrier + " (" + (worst >= 0 ? "+" : "") +
                est::format_value(worst, est::Unit::seconds) + ", see its row)";
  }
  {
    Comparison* r = add("MFU", t.mfu.value, summary.value("mfu", 0.0), est::Unit::fraction);
    r->reason = "MFU = model FLOPs / (step x GPUs x peak): it moves inversely with the step time row";
  }
  const Json& m = field(summary, "memory");
  {
    Comparison* r = add("memory per GPU (fullest)", mem.total.value, m.value("peak_bytes_per_gpu", 0.0), est::Unit::bytes);
    r->reason = c.model.moe.skew > 0 ? "the run sizes activations for the most loaded expert (skew " +
                                           est::num(c.model.moe.skew) + "), the estimate for a balanced load"
                                     : "";
    if (m.contains("simulated_peak_bytes")) {
      Comparison* q = add("simulated HBM peak", mem.total.value, m.value("simulated_peak_bytes", 0.0), est::Unit::bytes);
      q->reason = "the simulated ledger allocates and frees tensor by tensor; its peak is reached at a point of "
                  "the schedule where not every buffer counted here is live";
    }
  }
  o << "## 5. Estimate vs simulation\n\n"
    << comparison_table(cmp, "see the breakdown in report.md");
  return o.str();
}

}  // namespace gcsim::cli
