#include "sim/report/training_report.h"

#include <algorithm>
#include <array>
#include <sstream>

#include "sim/report/format.h"
#include "sim/scenario/gpu_spec_loader.h"
#include "sim/report/network_report.h"
#include "sim/report/report_parts.h"
#include "sim/scenario/straggler_loader.h"
#include "workloads/models/model_formulas.h"
#include "workloads/training/step_traffic.h"

namespace gcsim::cli {

using sim::config::Json;
using workloads::training::OpCategory;

namespace {

constexpr OpCategory kComm[] = {OpCategory::tp, OpCategory::cp, OpCategory::ep, OpCategory::pp,
                                OpCategory::dp};

// The ranks whose timelines stand for the rest: coordinate 0 on every
// symmetric axis (every EP rank when EP is not mirrored and their loads
// differ).
std::vector<int> observed_ranks(const TrainingRun& run) {
  using workloads::training::Axis;
  const workloads::training::RankGrid grid(run.config.parallel);
  if (run.every_rank_differs) {
    std::vector<int> all(static_cast<size_t>(grid.size()));
    for (int r = 0; r < grid.size(); ++r) all[static_cast<size_t>(r)] = r;
    return all;
  }
  const bool one_ep = run.workload.max_expert_load == 1.0 ||
                      run.workload.mirrored_axis[static_cast<size_t>(Axis::ep)];
  std::vector<int> out;
  for (int r = 0; r < grid.size(); ++r) {
    if (grid.at(r, Axis::tp) != 0 || grid.at(r, Axis::cp) != 0 || grid.at(r, Axis::edp) != 0) continue;
    if (one_ep && grid.at(r, Axis::ep) != 0) continue;
    out.push_back(r);
  }
  return out;
}

Json breakdown_json(const workloads::training::StepBreakdown& b) {
  Json j = Json::object();
  j["compute_s"] = b.of(OpCategory::compute);
  j["optimizer_s"] = b.of(OpCategory::optimizer);
  j["bubble_s"] = b.bubble_s();
  Json comm = Json::object();
  for (OpCategory c : kComm) comm[workloads::training::category_name(c)] = b.of(c);
  j["exposed_comm_s"] = comm;
  Json frac = Json::object();
  const double step = b.step_s > 0 ? b.step_s : 1.0;
  frac["compute"] = b.of(OpCategory::compute) / step;
  frac["optimizer"] = b.of(OpCategory::optimizer) / step;
  frac["bubble"] = b.bubble_s() / step;
  for (OpCategory c : kComm) frac[workloads::training::category_name(c)] = b.of(c) / step;
  j["fraction"] = frac;
  return j;
}

// Kernel time by class (kernel_classes.h): sums of kernel durations, as a
// profiler's table reads; they overlap and need not add up to the step.
Json kernel_classes_json(const workloads::training::KernelClassTimes& times) {
  Json classes = Json::object();
  for (int k = 0; k < workloads::training::kKernelClasses; ++k) {
    const auto kc = static_cast<workloads::training::KernelClass>(k);
    classes[workloads::training::kernel_class_name(kc)] = times.of(kc);
  }
  return classes;
}

}  // namespace

TrainingFigures training_figures(const RunFigures& f, const TrainingRun& run) {
  TrainingFigures t;
  const Scenario& s = *f.scenario;
  t.step_s = f.simulated_time.seconds();
  const double gpus = s.cluster.total_gpus();
  if (t.step_s > 0) {
    t.tokens_per_s = static_cast<double>(run.config.tokens_per_step()) / t.step_s;
    t.tflops_per_gpu = run.model_flops / t.step_s / gpus * 1e-12;
    t.mfu = run.model_flops / t.step_s / gpus / run.peak_flops_per_gpu;
    t.hfu = run.hardware_flops / t.step_s / gpus / run.peak_flops_per_gpu;
  }
  for (const auto& m : run.memory) t.peak_bytes = std::max(t.peak_bytes, m.total());
  t.breakdown = workloads::training::step_breakdown(*s.graph, run.workload, f.records,
                                                    observed_ranks(run), f.simulated_time,
                                                    s.cluster.gpu.kernel_launch_latency);
  t.bubble_fraction = t.step_s > 0 ? t.breakdown.mean.bubble_s() / t.step_s : 0.0;
  // Per rank too: a pipeline's stages (and a straggler's peers) wait for
  // each other by different amounts, which the mean hides.
  t.kernel_classes = workloads::training::kernel_class_times(
      *s.graph, run.workload, f.records, t.breakdown.ranks, s.cluster.gpu.kernel_launch_latency,
      &t.kernel_classes_per_rank);
  if (has_ep(run)) t.ep = ep_times(f, t);
  t.energy = energy_figures(f.energy_j, t.breakdown.ranks, static_cast<int>(gpus), t.step_s,
                            static_cast<double>(run.config.tokens_per_step()));
  return t;
}

Json build_training_summary(const RunFigures& f, const TrainingFigures& t) {
  const Scenario& s = *f.scenario;
  const TrainingRun& run = *s.training;
  const auto& c = run.config;
  Json j = summary_head(f);
  j["step_time_s"] = t.step_s;
  j["tokens_per_s"] = t.tokens_per_s;
  j["tflops_per_gpu"] = t.tflops_per_gpu;
  j["mfu"] = t.mfu;
  j["hfu"] = t.hfu;
  j["bubble_fraction"] = t.bubble_fraction;
  if (t.energy) j["energy"] = energy_json(*t.energy, "step");

  const auto& worst = run.memory[static_cast<size_t>(run.worst_pipeline_rank)];
  Json mem = Json::object();
  mem["peak_bytes_per_gpu"] = static_cast<int64_t>(t.peak_bytes);
  mem["capacity_bytes"] = s.cluster.gpu.hbm_capacity.count();
  mem["fits"] = run.fits;
  mem["worst_pipeline_rank"] = run.worst_pipeline_rank;
  Json parts = Json::object();
  parts["weights"] = static_cast<int64_t>(worst.weights);
  parts["gradients"] = static_cast<int64_t>(worst.gradients);
  parts["optimizer_states"] = static_cast<int64_t>(worst.optimizer_states);
  parts["activations"] = static_cast<int64_t>(worst.activations);
  parts["communication_buffers"] = static_cast<int64_t>(worst.communication_buffers);
  parts["reserved"] = static_cast<int64_t>(worst.reserved);
  mem["breakdown"] = parts;
  mem["activation_micro_batches_in_flight"] = worst.in_flight;
  mem["parameters_per_gpu"] = worst.params.total();
  if (run.fits) {
    sim::Bytes simulated(0);
    for (auto b : f.memory_peak) simulated = std::max(simulated, b);
    mem["simulated_peak_bytes"] = simulated.count();
  }
  j["memory"] = mem;

  Json bd = breakdown_json(t.breakdown.mean);
  bd["kernel_classes"] = kernel_classes_json(t.kernel_classes);
  // Communication as a profiler counts NCCL kernels: from each rank's issue,
  // its waits for the peers included (kernel_classes.h).
  bd["communication_with_waits_s"] = t.kernel_classes.communication_issued_s;
  bd["host"] = {{"framework", workloads::training::framework_name(c.framework)},
                {"kernels_per_step", t.kernel_classes.kernels},
                {"issue_s_per_kernel", run.workload.host_per_kernel.seconds()},
                {"issue_s", t.kernel_classes.kernels * run.workload.host_per_kernel.seconds()},
                {"wait_s", t.kernel_classes.host_wait_s}};
  j["breakdown"] = bd;
  // Wire bytes per GPU per step by dimension, averaged over the observed
  // (one per pipeline stage) ranks (workloads/training/step_traffic.h).
  std::array<double, workloads::training::kCategories> sent{};
  double embedding = 0;
  for (int r : t.breakdown.ranks) {
    const auto b = workloads::training::bytes_sent(*s.graph, run.workload, r);
    for (size_t k = 0; k < sent.size(); ++k) sent[k] += b.by_category[k];
    embedding += b.embedding;
  }
  Json traffic = Json::object();
  const double observed = static_cast<double>(std::max<size_t>(1, t.breakdown.ranks.size()));
  for (OpCategory c : kComm) {
    traffic[workloads::training::category_name(c)] = sent[static_cast<size_t>(c)] / observed;
  }
  traffic["embedding"] = embedding / observed;
  j["bytes_sent_per_gpu"] = traffic;
  Json stages = Json::array();
  for (size_t i = 0; i < t.breakdown.ranks.size(); ++i) {
    const workloads::training::RankGrid grid(c.parallel);
    const int r = t.breakdown.ranks[i];
    const int pr = grid.at(r, workloads::training::Axis::pp);
    Json st = breakdown_json(t.breakdown.per_rank[i]);
    st["rank"] = r;
    st["pipeline_rank"] = pr;
    st["memory_bytes"] = static_cast<int64_t>(run.memory[static_cast<size_t>(pr)].total());
    st["kernel_classes"] = kernel_classes_json(t.kernel_classes_per_rank[i]);
    st["communication_with_waits_s"] = t.kernel_classes_per_rank[i].communication_issued_s;
    stages.push_back(st);
  }
  j["per_rank"] = stages;

  const auto counts = workloads::models::count_params(c.model);
  j["model"] = {{"name", c.model.name},
                {"parameters", counts.total},
                {"active_parameters", counts.active},
                {"tokens_per_step", c.tokens_per_step()}};
  j["parallelism"] = {{"tp", c.parallel.tp},
                      {"cp", c.parallel.cp},
                      {"pp", c.parallel.pp},
                      {"dp", c.parallel.dp},
                      {"ep", c.parallel.ep},
                      {"sequence_parallel", c.parallel.sequence_parallel},
                      {"schedule", workloads::training::schedule_name(c.parallel.schedule)},
                      {"virtual_stages", c.parallel.virtual_stages},
                      {"micro_batches", c.micro_batches()},
                      {"order", workloads::training::RankGrid(c.parallel).order_text()}};
  j["flops"] = {{"model_per_step", run.model_flops},
                {"hardware_per_step", run.hardware_flops},
                {"peak_per_gpu", run.peak_flops_per_gpu}};
  Json sim = Json::object();
  sim["simulated_ranks"] = run.workload.simulated.size();
  sim["mirrored"] = run.workload.mirrored;
  sim["mirrored_axes"] = run.workload.mirrored_axes;
  if (!run.workload.mirror_note.empty()) sim["note"] = run.workload.mirror_note;
  if (run.workload.max_expert_load != 1.0) sim["max_expert_load"] = run.workload.max_expert_load;
  j["simulation"] = sim;
  if (has_ep(run)) j["ep"] = ep_summary(run, t.ep, t.ep_balanced);
  add_summary_tail(j, s, f.network);
  return j;
}

std::string build_training_report(const RunFigures& f, const TrainingFigures& t) {
  const Scenario& s = *f.scenario;
  const TrainingRun& run = *s.training;
  const auto& c = run.config;
  std::ostringstream o;
  o << "# gcsim training report: " << s.config_path << "\n\n";
  o << "| | |\n|---|---|\n";
  o << "| model | " << c.model.name << fmt(" (%.1fB parameters", workloads::models::count_params(c.model).total * 1e-9)
    << fmt(", %.1fB active)", workloads::models::count_params(c.model).active * 1e-9) << " |\n";
  o << "| cluster | " << s.cluster.nodes << " x " << s.cluster.gpus_per_node << " " << s.cluster.gpu.name
    << ", network " << s.network.model << " |\n";
  if (!s.cluster.stragglers.empty()) {
    o << "| stragglers | " << describe_stragglers(s.cluster.stragglers) << " |\n";
  }
  o << "| strategy | TP " << c.parallel.tp << (c.parallel.sequence_parallel ? " (SP)" : "") << ", CP "
    << c.parallel.cp << ", PP " << c.parallel.pp << " " << workloads::training::schedule_name(c.parallel.schedule)
    << (c.parallel.virtual_stages > 1 ? " v" + std::to_string(c.parallel.virtual_stages) : "") << ", DP "
    << c.parallel.dp << ", EP " << c.parallel.ep << ", ZeRO " << c.optimizer.zero_stage << ", recompute "
    << workloads::training::recompute_name(c.recompute) << " |\n";
  o << "| batch | " << c.batch.global << " sequences of " << c.model.seq_len << " tokens, "
    << c.micro_batches() << " micro-batches of " << c.batch.micro << " per pipeline |\n";
  o << "| step time | " << human_time(t.step_s) << " |\n";
  o << "| tokens/s | " << fmt("%.4g", t.tokens_per_s) << " |\n";
  o << "| TFLOP/s per GPU (model) | " << fmt("%.1f", t.tflops_per_gpu) << " |\n";
  o << "| MFU / HFU | " << fmt("%.1f%%", 100 * t.mfu) << " / " << fmt("%.1f%%", 100 * t.hfu) << " |\n";
  o << "| bubble | " << fmt("%.1f%% of the step", 100 * t.bubble_fraction) << " |\n";
  if (t.energy) o << energy_rows(*t.energy, "step");
  o << "| memory per GPU | " << gib(t.peak_bytes) << " of " << gib(run.capacity_bytes)
    << (run.fits ? " (fits)" : " (**does not fit**)") << " |\n";
  o << "| simulated | " << run.workload.simulated.size() << " of " << s.cluster.total_gpus() << " GPUs"
    << (run.workload.mirrored ? " (mirrored: " + run.workload.mirrored_axes + ")" : "") << ", "
    << f.events << " events, " << fmt("%.2f s wall", f.wall_time_s) << " |\n\n";

  const auto& b = t.breakdown.mean;
  o << "## Where the step goes (mean over pipeline ranks)\n\n| part | time | share |\n|---|---:|---:|\n";
  auto row = [&](const char* name, double v) {
    o << "| " << name << " | " << human_time(v) << " | " << fmt("%.1f%%", 100 * v / std::max(t.step_s, 1e-30))
      << " |\n";
  };
  row("compute", b.of(OpCategory::compute));
  row("optimizer", b.of(OpCategory::optimizer));
  row("exposed TP", b.of(OpCategory::tp));
  row("exposed CP", b.of(OpCategory::cp));
  row("exposed EP", b.of(OpCategory::ep));
  row("exposed PP", b.of(OpCategory::pp));
  row("exposed DP", b.of(OpCategory::dp));
  row("bubble", b.bubble_s());

  const auto& kc = t.kernel_classes;
  o << "\n## Kernel time by class (" << workloads::training::framework_name(c.framework)
    << ", mean over pipeline ranks)\n\nSums of kernel durations, as a profiler's table: "
       "overlapping kernels each count, so the rows need not add up to the step.\n\n"
    << "| class | time | share of step |\n|---|---:|---:|\n";
  for (int k = 0; k < workloads::training::kKernelClasses; ++k) {
    const auto cls = static_cast<workloads::training::KernelClass>(k);
    row(workloads::training::kernel_class_name(cls), kc.of(cls));
  }
  o << "\n" << fmt("%.0f", kc.kernels) << " kernels per step; the host issues each in "
    << human_time(run.workload.host_per_kernel.seconds()) << " ("
    << human_time(kc.kernels * run.workload.host_per_kernel.seconds())
    << " per step); kernels waited for the host " << human_time(kc.host_wait_s) << ".\n";

  // NCCL time as a profiler counts it: each collective from its issue, its
  // waits for the peers (a pipeline's drain, the slowest chip) included.
  o << "\n## Per pipeline rank\n\n| rank | stage | compute | exposed comm | bubble | NCCL kernels "
       "(with waits) | memory |\n"
    << "|---:|---:|---:|---:|---:|---:|---:|\n";
  const workloads::training::RankGrid grid(c.parallel);
  for (size_t i = 0; i < t.breakdown.ranks.size(); ++i) {
    const auto& x = t.breakdown.per_rank[i];
    double comm = 0;
    for (OpCategory cat : kComm) comm += x.of(cat);
    const int pr = grid.at(t.breakdown.ranks[i], workloads::training::Axis::pp);
    o << "| " << t.breakdown.ranks[i] << " | " << pr << " | "
      << human_time(x.of(OpCategory::compute) + x.of(OpCategory::optimizer)) << " | " << human_time(comm)
      << " | " << human_time(x.bubble_s()) << " | "
      << human_time(t.kernel_classes_per_rank[i].communication_issued_s) << " | "
      << gib(run.memory[static_cast<size_t>(pr)].total()) << " |\n";
  }

  if (has_ep(run)) o << ep_report_section(run, t.ep, t.ep_balanced);

  const auto& m = run.memory[static_cast<size_t>(run.worst_pipeline_rank)];
  o << "\n## Memory of the fullest GPU (pipeline rank " << run.worst_pipeline_rank << ")\n\n"
    << "| part | bytes |\n|---|---:|\n";
  o << "| weights | " << gib(m.weights) << " |\n| gradients | " << gib(m.gradients)
    << " |\n| optimizer states | " << gib(m.optimizer_states) << " |\n| activations ("
    << fmt("%.2f", m.in_flight) << " micro-batches in flight) | " << gib(m.activations)
    << " |\n| communication buffers | " << gib(m.communication_buffers) << " |\n| reserved | "
    << gib(m.reserved) << " |\n| **total** | **" << gib(m.total()) << "** |\n";
  o << report_tail(s, f.network);
  return o.str();
}

std::string training_human_summary(const RunFigures& f, const TrainingFigures& t,
                                   const std::string& out_dir, bool trace) {
  const Scenario& s = *f.scenario;
  const TrainingRun& run = *s.training;
  std::ostringstream o;
  o << "gcsim: " << s.config_path << "\n";
  o << "  training " << run.config.model.name << " on " << s.cluster.total_gpus() << " x "
    << s.cluster.gpu.name << ", network " << s.network.model << ", seed " << s.seed << "\n";
  o << "  step " << human_time(t.step_s) << ", " << fmt("%.4g tokens/s", t.tokens_per_s) << ", "
    << fmt("%.1f TFLOP/s per GPU", t.tflops_per_gpu) << ", MFU " << fmt("%.1f%%", 100 * t.mfu)
    << ", bubble " << fmt("%.1f%%", 100 * t.bubble_fraction) << "\n";
  const auto& b = t.breakdown.mean;
  o << "  exposed comm: TP " << human_time(b.of(OpCategory::tp)) << ", CP " << human_time(b.of(OpCategory::cp))
    << ", EP " << human_time(b.of(OpCategory::ep)) << ", PP " << human_time(b.of(OpCategory::pp))
    << ", DP " << human_time(b.of(OpCategory::dp)) << "\n";
  o << ep_human_lines(run, t.ep, t.ep_balanced);
  o << "  memory " << gib(t.peak_bytes) << " of " << gib(run.capacity_bytes) << " per GPU"
    << (run.fits ? "" : "  ** DOES NOT FIT **") << "\n";
  o << "  simulated " << run.workload.simulated.size() << " of " << s.cluster.total_gpus() << " GPUs, "
    << f.records.size() << " ops, " << f.events << " events in " << fmt("%.3f", f.wall_time_s)
    << " s wall\n";
  for (const auto& n : s.notes) o << "  note: " << n << "\n";
  o << "  wrote " << out_dir << "/summary.json, report.md, report.html" << (trace ? ", trace.json" : "") << "\n";
  return o.str();
}

}  // namespace gcsim::cli
