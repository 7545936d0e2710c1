#include "workloads/estimate/time_estimate.h"

#include <algorithm>
#include <cmath>

#include "models/gpu/kernel_cost_model.h"
#include "workloads/estimate/model_estimate.h"
#include "workloads/models/model_formulas.h"
#include "workloads/training/memory_model.h"
#include "workloads/training/optimizer_step.h"
#include "workloads/training/pipeline_schedule.h"

namespace gcsim::workloads::estimate {

namespace wt = workloads::training;
namespace gpu = ::gcsim::models::gpu;

Line bubble_fraction_line(wt::Schedule s, int p, int v, int64_t m, const wt::PipelinePlan* built) {
  const double pm = p, mm = static_cast<double>(m), vv = std::max(1, v);
  switch (s) {
    case wt::Schedule::gpipe:
    case wt::Schedule::one_f_one_b:
      return make_line("bubble / busy time", (pm - 1) / mm, Unit::fraction,
                       "(p - 1) / m = (" + num(pm) + " - 1) / " + num(mm));
    case wt::Schedule::interleaved:
      return make_line("bubble / busy time", (pm - 1) / (vv * mm), Unit::fraction,
                       "(p - 1) / (v m) = (" + num(pm) + " - 1) / (" + num(vv) + " x " + num(mm) + ")");
    case wt::Schedule::zb1p:
      return make_line("bubble / busy time", (pm - 1) / (3 * mm), Unit::fraction,
                       "(p - 1)(F + B - 2W) / (m (F + B + W)) with F = B = W: (p - 1) / (3 m) = (" + num(pm) +
                           " - 1) / (3 x " + num(mm) + ")");
    case wt::Schedule::dualpipe: {
      // No one-line form covers DualPipe's two directions for every m; the
      // plan is run with unit passes (F = B = W = 1) and free communication.
      wt::PipelinePlan own;
      const wt::PipelinePlan& plan = built ? *built : (own = wt::build_pipeline(s, p, v, static_cast<int>(m)));
      const wt::Evaluation ev = wt::evaluate(plan, wt::PassCosts{});
      const double busy = ev.busy.empty() ? 1.0 : ev.busy.front();
      return make_line("bubble / busy time", busy > 0 ? (ev.makespan - busy) / busy : 0.0, Unit::fraction,
                       "DualPipe plan run with F = B = W = 1: (makespan - busy) / busy = (" + num(ev.makespan) +
                           " - " + num(busy) + ") / " + num(busy));
    }
  }
  return make_line("bubble / busy time", 0.0, Unit::fraction);
}

Line wave_efficiency_line(const std::string& gemm, double m, double n, double k, int sms, int tm, int tn) {
  const double tiles = std::ceil(m / tm) * std::ceil(n / tn);
  const double waves = std::ceil(tiles / std::max(1, sms));
  const double eff = waves > 0 ? tiles / (waves * std::max(1, sms)) : 1.0;
  return make_line("wave efficiency, " + gemm + " " + num(m) + "x" + num(n) + "x" + num(k), eff, Unit::fraction,
                   "tiles / (waves x SMs) = " + num(tiles) + " / (" + num(waves) + " x " + num(sms) + "), " +
                       num(tm) + "x" + num(tn) + " tiles");
}

std::vector<Line> TrainingTimeEstimate::lines() const {
  std::vector<Line> out{model_flops, hardware_flops, rate, compute};
  out.insert(out.end(), comm.begin(), comm.end());
  out.insert(out.end(), exposed.begin(), exposed.end());
  out.insert(out.end(), {bubble_fraction, bubble, optimizer, step, mfu});
  return out;
}

double slowest_rank_compute(const wt::TrainingConfig& c, const wt::PipelinePlan& plan, double compute,
                            double layers_s, double head_s, double attention_s) {
  const int pp = c.parallel.pp;
  if (pp <= 1 || plan.schedule == wt::Schedule::dualpipe) return compute;
  const auto stages = wt::model_stage_layers(c, plan);
  const double L = c.model.layers;
  const double mean = (layers_s + head_s + attention_s) / pp;  // per token, per rank
  double worst = compute;
  for (int r = 0; r < pp; ++r) {
    double layers = 0;
    bool head = false;
    for (int k : plan.stages_of(r)) {
      layers += stages[static_cast<size_t>(k)].count;
      head = head || k == plan.model_stages - 1;
    }
    const double load = layers / L * (layers_s + attention_s) + (head ? head_s : 0.0);
    worst = std::max(worst, compute * load / mean);
  }
  return worst;
}

double TrainingTimeEstimate::exposed_of(const std::string& dim) const {
  double s = 0;
  for (const auto& l : exposed) {
    if (l.label == "exposed " + dim || l.label.rfind("exposed " + dim + " ", 0) == 0) s += l.value;
  }
  return s;
}

double attention_efficiency(const wt::TrainingConfig& c, const gpu::GpuSpec& g, bool backward) {
  const auto& m = c.model;
  const int64_t tp = c.parallel.tp;
  gpu::AttentionShape a;
  a.batch = c.batch.micro;
  a.heads = std::max<int64_t>(1, m.heads / tp);
  a.kv_heads = m.attention == workloads::models::AttentionKind::mla
                   ? a.heads
                   : std::max<int64_t>(1, (m.kv_heads > 0 ? m.kv_heads : m.heads) / tp);
  a.q_len = std::max<int64_t>(1, m.seq_len / c.parallel.cp);
  a.kv_len = a.q_len;
  a.head_dim = m.head_dim > 0 ? m.head_dim : m.hidden / std::max(1, m.heads);
  if (m.attention == workloads::models::AttentionKind::mla) {
    a.head_dim = m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim;
    a.head_dim_v = m.mla.v_head_dim;
  }
  a.causal = true;
  a.backward = backward;
  a.family = c.attention_family;
  a.dtype = c.precision == wt::Precision::fp16 ? gpu::Dtype::fp16 : gpu::Dtype::bf16;
  return gpu::attention_kernel(g, a).efficiency;
}

TrainingTimeEstimate estimate_training_time(const wt::TrainingConfig& c, const gpu::GpuSpec& g,
                                            const std::vector<CommRow>& comm,
                                            const wt::PipelinePlan* built) {
  const auto& p = c.parallel;
  TrainingTimeEstimate e;
  const double tokens = static_cast<double>(c.tokens_per_step());
  const double gpus = c.gpus();
  const auto f = workloads::models::forward_flops_per_token(c.model);
  const bool full = c.recompute == wt::Recompute::full;
  e.model_flops = step_model_flops_line(c.model, tokens);
  const double recompute = full ? (f.layers + f.attention) * tokens : 0.0;
  e.hardware_flops = make_line("hardware FLOPs per step", e.model_flops.value + recompute, Unit::flops,
                               full ? "model + recomputed forward of the layers" : "= model FLOPs (no recompute)");
  const gpu::Dtype act = c.precision == wt::Precision::fp16 ? gpu::Dtype::fp16 : gpu::Dtype::bf16;
  const gpu::Dtype mm = c.precision == wt::Precision::fp8 ? gpu::Dtype::fp8 : act;
  const double peak = g.tensor_peak_for(mm).flops_per_s();
  const double eff = g.efficiency.tensor_for(mm);
  const double rate = peak * eff;
  const std::string clocks =
      g.at_sustained_clocks ? ", at sustained clocks x" + num(g.sustained_tensor_fraction) : "";
  e.rate = make_line("GEMM rate per GPU (" + std::string(gpu::dtype_name(mm)) +
                         (g.calibration_applied.empty() ? ", preset efficiency" : ", calibrated: " + g.calibration_applied) +
                         clocks + ")",
                     rate, Unit::flops_per_s, "peak x efficiency = " + num(peak) + " x " + num(eff));
  // Matrix FLOPs at the GEMM rate; causal flash attention computes half of
  // the s x s scores, at its own efficiencies (forward, and backward at 2x).
  const double mats = 3.0 * (f.layers + f.logits) + (full ? f.layers : 0.0);
  const double attn_peak = g.tensor_peak_for(act).flops_per_s();
  const double af = 0.5 * f.attention;
  const double attn_t = af / std::max(1e-30, attn_peak) *
                        ((full ? 2.0 : 1.0) / attention_efficiency(c, g, false) +
                         2.0 / attention_efficiency(c, g, true));
  const double compute = tokens / gpus * (mats / rate + attn_t);
  e.compute = make_line("compute per GPU", compute, Unit::seconds,
                        "tokens / GPUs x (matrix FLOPs / GEMM rate + causal attention / attention rates) = " +
                            num(tokens) + " / " + num(gpus) + " x (" + num(mats) + " / " + num(rate) + " + " +
                            num(attn_t) + ")");

  const double mb = static_cast<double>(c.micro_batches());
  const double backward_last = compute * 2.0 / 3.0 / std::max(1.0, mb);
  double tp_total = 0, ep_total = 0, cp_total = 0, dp_grad = 0, dp_last_bucket = 0, dp_gather = 0;
  std::vector<std::pair<std::string, double>> dims;
  for (const auto& r : comm) {
    e.comm.push_back(r.time_total);
    double x = r.time_total.value;
    if (r.dimension == "CP") cp_total += x;
    if (r.dimension.rfind("DP", 0) == 0) {
      if (r.op == collectives::CollectiveOp::all_gather) dp_gather += x;
      else {
        dp_grad += x;
        dp_last_bucket = std::max(dp_last_bucket, r.time_each.value);
      }
    }
    // TP all-reduces, or SP's all-gathers and reduce-scatters: one row.
    if (r.dimension == "TP" || r.dimension == "SP") tp_total += x;
    if (r.dimension == "EP") ep_total += x;
    if (r.dimension == "PP") {
      // Sends in the steady state overlap the other stages' work; the fill
      // and the drain wait for 2 (p - 1) of them.
      dims.emplace_back("PP", r.time_each.value * 2.0 * (p.pp - 1));
    }
  }
  if (tp_total > 0) dims.insert(dims.begin(), {"TP", tp_total});
  if (ep_total > 0) {
    // DualPipe runs one chunk's all-to-all under the paired chunk's compute
    // (DeepSeek-V3 3.2.1); other schedules wait for it.
    if (p.schedule == wt::Schedule::dualpipe) {
      e.exposed.push_back(make_line("exposed EP", std::max(0.0, ep_total - compute), Unit::seconds,
                                    "DualPipe overlaps it with the paired chunk: max(0, EP - compute) = max(0, " +
                                        num(ep_total) + " - " + num(compute) + ")"));
    } else {
      dims.emplace_back("EP", ep_total);
    }
  }
  for (const auto& [d, x] : dims) {
    e.exposed.push_back(make_line("exposed " + d, x, Unit::seconds,
                                  d == "PP" ? "2 (p - 1) sends of the fill and drain" : "not overlapped (on the critical path)"));
  }
  if (cp_total > 0) {
    const double attention = tokens / gpus * attn_t;
    e.exposed.push_back(make_line("exposed CP", std::max(0.0, cp_total - attention), Unit::seconds,
                                  "max(0, ring sends - attention compute) = max(0, " + num(cp_total) + " - " +
                                      num(attention) + ")"));
  }
  if (dp_grad + dp_gather > 0 && c.optimizer.zero_stage >= 2) {
    // Every micro-batch's gradients are reduced while the next ones
    // compute: what the whole step's compute cannot hide, or the last
    // micro-batch's share beyond its own backward.
    const double x = std::max({dp_last_bucket, dp_grad / std::max(1.0, mb) - backward_last, dp_grad - compute}) +
                     dp_gather;
    e.exposed.push_back(make_line(
        "exposed DP", x, Unit::seconds,
        "max(last bucket, last micro-batch's reduction - its backward, reduction - compute) + weight all-gathers "
        "= max(" + num(dp_last_bucket) + ", " + num(dp_grad) + " / " + num(mb) + " - " + num(backward_last) +
            ", " + num(dp_grad) + " - " + num(compute) + ") + " + num(dp_gather)));
  } else if (dp_grad + dp_gather > 0) {
    const double x = std::max(dp_last_bucket, dp_grad - backward_last) + dp_gather;
    e.exposed.push_back(make_line(
        "exposed DP", x, Unit::seconds,
        "max(last bucket, gradient reduction - last micro-batch backward) + weight all-gathers = max(" +
            num(dp_last_bucket) + ", " + num(dp_grad) + " - " + num(backward_last) + ") + " + num(dp_gather)));
  }
  wt::PipelinePlan own;
  const wt::PipelinePlan& plan =
      built ? *built : (own = wt::build_pipeline(p.schedule, p.pp, p.virtual_stages, static_cast<int>(mb)));
  e.bubble_fraction = bubble_fraction_line(p.schedule, p.pp, p.virtual_stages, c.micro_batches(), &plan);
  // The slowest pipeline rank sets the pace and the others wait for it: its
  // layers and, on the last stage, the output head. `compute` is the mean.
  const double slowest = slowest_rank_compute(c, plan, compute, (3.0 + (full ? 1.0 : 0.0)) * f.layers / rate,
                                              3.0 * f.logits / rate, attn_t);
  if (p.pp > 1) {
    e.bubble = make_line("bubble", e.bubble_fraction.value * compute + (slowest - compute), Unit::seconds,
                         "fraction x compute + slowest rank's extra compute = " + num(e.bubble_fraction.value) +
                             " x " + num(compute) + " + (" + num(slowest) + " - " + num(compute) + ")");
  } else {
    e.bubble = make_line("bubble", 0.0, Unit::seconds, "no pipeline");
  }
  // The optimizer step's HBM passes (workloads/training/optimizer_step.h)
  // over this GPU's shard of the optimizer and the gradients it holds.
  // Mean over pipeline ranks, as the breakdown averages its observed ranks.
  const auto passes = wt::optimizer_passes(c.optimizer, c.precision, c.framework);
  double bytes = 0, shard = 0;
  for (int r = 0; r < p.pp; ++r) {
    const wt::OptimizerScope scope = wt::optimizer_scope(wt::rank_params(c, plan, r), c.optimizer.zero_stage,
                                                         p.dp * p.cp, std::max(1, p.dp / p.ep) * p.cp);
    bytes += wt::optimizer_bytes(passes, scope) / p.pp;
    shard += scope.shard / p.pp;
  }
  std::string terms;
  for (const wt::OptimizerPass& pass : passes) {
    terms += (terms.empty() ? "" : " + ") + num(pass.bytes()) + (pass.over_shard ? "" : " (held)");
  }
  const double hbm = g.hbm_bandwidth.bytes_per_s() * g.efficiency.hbm;
  e.optimizer = make_line("optimizer step", bytes / std::max(1.0, hbm), Unit::seconds,
                          "(" + terms + ") B x params / HBM rate = " + num(bytes) + " B over " +
                              num(shard) + " shard params / " + num(hbm));
  double exposed = 0;
  for (const auto& l : e.exposed) exposed += l.value;
  const double step = compute + e.bubble.value + e.optimizer.value + exposed;
  e.step = make_line("step time", step, Unit::seconds,
                     "compute + bubble + optimizer + exposed communication = " + num(compute) + " + " +
                         num(e.bubble.value) + " + " + num(e.optimizer.value) + " + " + num(exposed));
  const double mfu_peak = g.tensor_peak_for(act).flops_per_s();
  e.mfu = make_line("MFU", e.model_flops.value / (step * gpus * mfu_peak), Unit::fraction,
                    "model FLOPs / (step x GPUs x peak) = " + num(e.model_flops.value) + " / (" + num(step) + " x " +
                        num(gpus) + " x " + num(mfu_peak) + ")");
  // The layer's GEMMs as one TP rank runs them (M = micro-batch tokens).
  const auto& m = c.model;
  const double tok = static_cast<double>(c.batch.micro) * static_cast<double>(m.seq_len) / p.cp;
  const double h = static_cast<double>(m.hidden), t = p.tp;
  const double q = static_cast<double>(m.q_width()), kv = static_cast<double>(m.kv_width());
  if (m.attention != workloads::models::AttentionKind::mla) {  // MLA projects through low-rank GEMMs
    e.waves.push_back(wave_efficiency_line("QKV GEMM", tok, (q + 2 * kv) / t, h, g.sm_count));
  }
  e.waves.push_back(wave_efficiency_line("attention output GEMM", tok, h, q / t, g.sm_count));
  if (m.dense_mlp_layers() > 0) {
    const double fc1 = (m.mlp == workloads::models::MlpKind::swiglu ? 2.0 : 1.0) * static_cast<double>(m.ffn_hidden);
    e.waves.push_back(wave_efficiency_line("MLP fc1 GEMM", tok, fc1 / t, h, g.sm_count));
    e.waves.push_back(wave_efficiency_line("MLP fc2 GEMM", tok, h, static_cast<double>(m.ffn_hidden) / t, g.sm_count));
  }
  return e;
}

}  // namespace gcsim::workloads::estimate
