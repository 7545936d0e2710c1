// Training quiz: train a preset model on N GPUs of one kind (HGX nodes of 8,
// a 2-tier fat-tree): choose TP/PP/DP that fit, then estimate for the worked
// layout the bytes each GPU sends per step in each dimension, the peak HBM
// per GPU and the step time. The numbers come from the worksheet core that
// `gcsim explain` prints (workloads/estimate/: Megatron's collectives per
// layer, ZeRO and Korthikanti memory); the step time is the whiteboard
// 6 N T / (GPUs x peak x efficiency) stretched by the 1F1B bubble (p-1)/m.
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/gpu/dtype.h"
#include "models/gpu/sustained_clocks.h"
#include "workloads/estimate/comm_estimate.h"
#include "workloads/estimate/memory_estimate.h"
#include "workloads/estimate/time_estimate.h"
#include "workloads/models/model_formulas.h"
#include "workloads/quiz/quiz.h"
#include "workloads/quiz/quiz_pick.h"

namespace gcsim::workloads::quiz {

namespace we = workloads::estimate;
namespace wt = workloads::training;
using gcsim::models::gpu::Dtype;

namespace {

wt::TrainingConfig layout(const workloads::models::ModelSpec& m, int gpus, int64_t batch, int tp,
                          int pp) {
  wt::TrainingConfig c;
  c.model = m;
  c.parallel.tp = tp;
  c.parallel.pp = pp;
  c.parallel.dp = gpus / (tp * pp);
  c.parallel.sequence_parallel = tp > 1;
  c.batch.global = batch;
  c.batch.micro = 1;
  c.recompute = wt::Recompute::selective;
  c.optimizer.zero_stage = 1;
  return c;
}

// Why a layout is impossible ("" when it fits): the generator's
// constraints (check_strategy) and the memory estimate against 90% of HBM
// (the rest for fragmentation and the CUDA context).
std::string layout_problem(const wt::TrainingConfig& c, int gpus, double hbm) {
  if (c.parallel.tp * c.parallel.pp * c.parallel.dp != gpus) {
    return "tp x pp x dp must be " + std::to_string(gpus);
  }
  if (c.parallel.tp > 8) return "tp above 8 leaves the NVLink domain of a node";
  if (auto p = wt::check_strategy(c, gpus)) return p.message;
  const auto mem = we::estimate_training_memory(c, hbm);
  if (mem.total.value > 0.9 * hbm) {
    return "needs " + fmt("%.1f GiB", mem.total.value / 1073741824.0) + " per GPU, more than 90% of " +
           fmt("%.0f GiB", hbm / 1073741824.0);
  }
  return "";
}

}  // namespace

Quiz make_training_quiz(uint64_t seed, const PresetBook& presets) {
  sim::RandomStream r = quiz_stream(seed, "training");
  const std::string model_name = pick(
      r, std::vector<std::string>{"llama3-8b", "llama3-70b", "qwen2.5-72b", "gpt3-175b"});
  const std::string gpu_name =
      pick(r, std::vector<std::string>{"a100-sxm-80gb", "h100-sxm", "h200-sxm"});
  const int gpus = pick(r, std::vector<int>{64, 128, 256});
  const int nic_gbps = pick(r, std::vector<int>{200, 400});
  const int64_t batch = pick(r, std::vector<int64_t>{256, 512});
  const auto& m = presets.models.at(model_name);
  // A training step runs its GEMMs at the power-capped sustained clocks
  // (models/gpu/sustained_clocks.h), as the simulated check does.
  const auto gpu = models::gpu::at_sustained_clocks(presets.gpus.at(gpu_name));
  const double hbm = gpu.hbm_capacity.as_double();

  // The worked layout: the least model parallelism that fits, TP first (it
  // stays on NVLink), then PP.
  int tp = 0, pp = 0;
  for (int mp : {1, 2, 4, 8, 16, 32, 64}) {
    for (int t : {8, 4, 2, 1}) {
      if (tp || mp % t || mp / t > 16) continue;
      const int p = mp / t;
      if (gpus % mp || layout_problem(layout(m, gpus, batch, t, p), gpus, hbm) != "") continue;
      tp = t;
      pp = p;
    }
    if (tp) break;
  }
  if (!tp) throw std::logic_error("no training layout fits for " + model_name);
  const wt::TrainingConfig c = layout(m, gpus, batch, tp, pp);
  const int dp = c.parallel.dp;

  we::LinkRates links;
  links.scale_up_bytes_per_s = gpu.nvlink_bandwidth.bytes_per_s();
  links.scale_up_latency_s = gpu.nvlink_latency.seconds();
  links.scale_out_bytes_per_s = nic_gbps * 1e9 / 8.0;
  links.scale_out_latency_s = 2e-6;  // NIC to NIC over 4 links of 0.5 us
  const auto rows = we::estimate_training_comm(c, links);
  double bytes_tp = 0, bytes_pp = 0, bytes_dp = 0;
  for (const auto& row : rows) {
    const double b = row.count * row.wire_bytes.value;
    if (row.dimension == "TP" || row.dimension == "SP") bytes_tp += b;
    if (row.dimension == "PP") bytes_pp += b;
    if (row.dimension == "DP") bytes_dp += b;
  }
  const auto mem = we::estimate_training_memory(c, hbm);

  // Step time on the whiteboard: model FLOPs 6 N T (+ attention) at the
  // preset's bf16 rate on every GPU, times 1 + (p-1)/m for the bubble.
  const double tokens = static_cast<double>(c.tokens_per_step());
  const double flops = workloads::models::model_flops(m, tokens);
  const double rate = gpu.tensor_peak_for(Dtype::bf16).flops_per_s() *
                      gpu.efficiency.tensor_for(Dtype::bf16);
  const double micro = static_cast<double>(c.micro_batches());
  const double bubble = (pp - 1) / micro;
  const double first_order = flops / (gpus * rate) * (1.0 + bubble);
  // The worked answer is `gcsim explain`'s step estimate: compute at the
  // rate (recompute included), the bubble, the optimizer and the
  // communication the schedule cannot hide, per dimension.
  const auto explain = we::estimate_training_time(c, gpu, rows);
  const double step = explain.step.value;

  Quiz q;
  q.topic = Topic::training;
  q.seed = seed;
  q.title = "Train " + model_name + " on " + std::to_string(gpus) + " " + gpu_name;
  const auto params = workloads::models::count_params(m);
  q.question =
      "Train " + model_name + " (" + fmt("%.3g", params.total / 1e9) + "B parameters, " +
      std::to_string(m.layers) + " layers, hidden " + std::to_string(m.hidden) + ", sequence " +
      std::to_string(m.seq_len) + ") on " + std::to_string(gpus) + " " + gpu_name + " (" +
      fmt("%.0f GiB", hbm / 1073741824.0) + ") in HGX nodes of 8 on a 2-tier fat-tree, one " +
      std::to_string(nic_gbps) + " Gb/s NIC per GPU. Global batch " + std::to_string(batch) +
      " sequences, micro-batch 1, bf16 with Adam and ZeRO-1, selective recompute, sequence "
      "parallel with TP, 1F1B.\n\n"
      "(a) Choose TP, PP and DP that fit in memory (TP at most 8).\n"
      "(b) For TP " + std::to_string(tp) + ", PP " + std::to_string(pp) + ", DP " +
      std::to_string(dp) + " (the worked answer's choice): bytes each GPU sends per step for "
      "TP/SP, PP and DP; peak memory per GPU; step time at " +
      fmt("%.0f%%", gpu.efficiency.tensor_for(Dtype::bf16) * 100) +
      " of bf16 peak (the preset's efficiency at sustained, power-capped clocks: x" +
      fmt("%.3f", gpu.sustained_tensor_fraction) + ").\n";

  q.steps.push_back("Layout: the least model parallelism that fits 90% of HBM, TP first (NVLink) "
                    "then PP: TP " + std::to_string(tp) + " x PP " + std::to_string(pp) +
                    " x DP " + std::to_string(dp) + " = " + std::to_string(gpus) + "; " +
                    fmt("%.0f", micro) + " micro-batches per pipeline.");
  for (const auto& row : rows) {
    q.steps.push_back(row.dimension + " " + std::string(gcsim::models::collectives::op_name(row.op)) + " over " +
                      std::to_string(row.group) + " (" + we::link_class_name(row.link) + "): " +
                      we::num(row.count) + " per step (" + row.why + ") x " +
                      row.wire_bytes.formula + " = " +
                      num(row.count * row.wire_bytes.value) + " B per GPU per step.");
  }
  q.steps.push_back("Per dimension, bytes sent per GPU per step: TP/SP " + num(bytes_tp) +
                    ", PP " + num(bytes_pp) + ", DP " + num(bytes_dp) + ".");
  for (const auto& l : mem.lines()) q.steps.push_back("Memory: " + l.text() + ".");
  q.steps.push_back("Step, first order: 6 N T (+ attention) = " + num(flops) + " FLOP / (" +
                    std::to_string(gpus) + " x " + fmt("%.0f TFLOP/s", rate / 1e12) + ") x (1 + (" +
                    std::to_string(pp) + " - 1)/" + fmt("%.0f", micro) + ") = " +
                    fmt("%.4g s", first_order) + ".");
  for (const auto& l : explain.exposed) {
    if (l.value > 0) q.steps.push_back("Exposed communication, " + l.text() + ".");
  }
  q.steps.push_back("Step, as `gcsim explain` estimates it: " + explain.step.text() + ".");

  q.verifications.push_back(
      {"training",
       "cluster:\n  gpu: " + gpu_name + "\n  nodes: " + std::to_string(gpus / 8) +
           "\n  gpus_per_node: 8\n  scale_up: {kind: nvswitch}\n"
           "  scale_out: {topology: fat-tree, tiers: 2, nic_bandwidth: " +
           std::to_string(nic_gbps) + "Gbps}\n  calibration: none\n"
           "network: {model: analytical}\n"
           "workload:\n  kind: training\n  model: {preset: " + model_name + "}\n"
           "  batch: {global: " + std::to_string(batch) + ", micro: 1}\n"
           "  parallelism: {tp: " + std::to_string(tp) + ", pp: " + std::to_string(pp) +
           ", dp: " + std::to_string(dp) + ", sequence_parallel: " + (tp > 1 ? "true" : "false") +
           ", schedule: 1f1b}\n  recompute: selective\n  optimizer: {kind: adam, zero_stage: 1}\n"});

  q.sim_note =
      "The simulator runs one step kernel by kernel on the mirrored ranks: GEMMs in waves at the "
      "preset's efficiency, flash attention at its own, TP/SP collectives between the layer's "
      "GEMMs, PP sends in the 1F1B order and DP gradient buckets during the backward; the peak "
      "memory is the HBM ledger of the simulated ranks. The estimate hides communication by "
      "formula; the simulation finds how much actually overlaps.";
  q.choice_keys["tp"] = "tensor-parallel size of your layout";
  q.choice_keys["pp"] = "pipeline stages of your layout";
  q.choice_keys["dp"] = "data-parallel size of your layout";
  q.judge = [m, gpus, batch, hbm](const Answers& a) -> std::string {
    auto get = [&](const char* k) { return a.count(k) ? a.at(k) : -1.0; };
    const double t = get("tp"), p = get("pp"), d = get("dp");
    if (t < 1 || p < 1 || d < 1) return "give tp, pp and dp (positive integers)";
    if (t != std::floor(t) || p != std::floor(p) || d != std::floor(d)) return "not integers";
    wt::TrainingConfig c = layout(m, gpus, batch, static_cast<int>(t), static_cast<int>(p));
    c.parallel.dp = static_cast<int>(d);
    return layout_problem(c, gpus, hbm);
  };

  auto add = [&](const char* key, const char* what, const char* unit, double est, double tol,
                 const char* why, const char* ptr, double scale, double sim_tol) {
    add_quantity(q, key, what, unit, est, tol, why, 0, ptr, scale, sim_tol);
  };
  const char* why_bytes =
      "10%: counts of collectives per layer and the ring factor are exact; bucket and "
      "embedding details move it a few percent";
  // Checked against the bytes the simulated step issued per GPU
  // (summary.json bytes_sent_per_gpu, workloads/training/step_traffic.h).
  add("tp_bytes_per_step", "bytes one GPU sends per step for TP/SP", "B", bytes_tp, 0.10,
      why_bytes, "/bytes_sent_per_gpu/tp", 1, 0.10);
  add("pp_bytes_per_step", "bytes one GPU sends per step for PP", "B", bytes_pp, 0.10, why_bytes,
      "/bytes_sent_per_gpu/pp", 1, 0.10);
  add("dp_bytes_per_step", "bytes one GPU sends per step for DP", "B", bytes_dp, 0.10, why_bytes,
      "/bytes_sent_per_gpu/dp", 1, 0.10);
  add("peak_memory_gib", "peak HBM per GPU", "GiB", mem.total.value / 1073741824.0, 0.15,
      "15%: activation accounting (which tensors are kept) is the user's model",
      "/memory/simulated_peak_bytes", 1.0 / 1073741824.0, 0.15);
  add("step_time_s", "training step time", "s", step, 0.20,
      "20%: the efficiency and how much communication hides are assumptions",
      "/step_time_s", 1.0, 0.25);
  return q;
}

}  // namespace gcsim::workloads::quiz
