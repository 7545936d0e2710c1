// `gcsim explain` for serving: KV cache arithmetic, roofline prefill and
// decode times, TTFT and TPOT, against the simulated serving run.
#include <cmath>
#include <sstream>

#include "sim/cli/explain_command.h"
#include "sim/report/explain_table.h"
#include "sim/scenario/inference_workload_loader.h"
#include "workloads/estimate/inference_estimate.h"
#include "workloads/estimate/model_estimate.h"

namespace gcsim::cli {

using sim::config::Json;
namespace wi = workloads::inference;

namespace {

// What the run's own figures say about the load: queueing, preemption,
// prefix hits, cache pressure; each with its number.
std::string load_facts(const Json& summary, double in_system, double est_batch) {
  std::ostringstream o;
  o << "requests in the system average " << est::num(std::round(in_system * 100) / 100) << " (estimate "
    << est::num(std::round(est_batch * 100) / 100) << ")";
  const int64_t pre = summary.value("preemptions", int64_t{0});
  if (pre > 0) o << ", " << pre << " preemptions recomputed or swapped KV";
  if (summary.contains("kv_cache")) {
    const Json& kv = field(summary, "kv_cache");
    if (kv.value("prefix_hit_rate", 0.0) > 0) {
      o << ", prefix-cache hit rate " << est::format_value(kv.value("prefix_hit_rate", 0.0), est::Unit::fraction)
        << " skips that share of prefill";
    }
    o << ", KV cache peak " << est::format_value(kv.value("peak_used_fraction", 0.0), est::Unit::fraction) << " used";
  }
  return o.str();
}

}  // namespace

std::string explain_inference(const Scenario& s, const Json& summary) {
  const InferenceSetup& setup = *s.inference;
  // A rate search reports the highest rate that met the SLOs: the
  // worksheet is written for that rate.
  wi::ServingConfig sc = setup.serving;
  const double reported = field(summary, "requests").value("arrival_rate_per_s", 0.0);
  if (sc.rate_search.enabled && reported > 0) sc.requests.rate = reported;
  std::ostringstream o;
  o << "Model " << sc.model.name << ", " << sc.replicas << " replica(s) of TP " << sc.parallel.tp << " PP "
    << sc.parallel.pp << (sc.disaggregation.enabled ? ", disaggregated prefill/decode" : "")
    << (sc.speculative.enabled() ? ", speculative decoding" : "") << "; " << sc.requests.count << " requests ("
    << wi::arrival_name(sc.requests.arrival) << ").\n\n";
  const est::ModelEstimate model = est::estimate_model(sc.model);
  o << worksheet_section("1. Model", {model.total, model.active, model.dense_flops_per_token});
  const est::InferenceEstimate e = est::estimate_inference(sc, s.cluster.gpu, link_rates(s.cluster));
  o << worksheet_section("2. Memory and KV cache per GPU", e.kv.lines());
  o << worksheet_section("3. Communication per step",
                         {e.tp_comm_per_step});
  o << worksheet_section("4. Time: prefill and decode rooflines",
                         {e.prompt_tokens, e.output_tokens, e.arrival_rate, e.prefill_per_token, e.batch, e.decode_step, e.ttft, e.tpot});

  std::vector<Comparison> cmp;
  const Json& mem = field(field(summary, "memory"), "replica");
  cmp.push_back({"KV bytes per token per GPU", e.kv.bytes_per_token_per_gpu.value,
                 mem.value("kv_bytes_per_token_per_gpu", 0.0), est::Unit::bytes, ""});
  cmp.push_back({"weights per GPU", e.kv.weights.value, mem.value("weights_bytes_per_gpu", 0.0), est::Unit::bytes, ""});
  cmp.push_back({"KV blocks per GPU", e.kv.blocks.value, mem.value("num_gpu_blocks", 0.0), est::Unit::count,
                 "the run plans memory as vLLM does at start-up, the same arithmetic"});
  const double in_system = field(summary, "littles_law").value("mean_requests_in_system", 0.0);
  const std::string facts = load_facts(summary, in_system, e.batch.value);
  const double ttft = field(summary, "ttft_s").value("mean", 0.0), tpot = field(summary, "tpot_s").value("mean", 0.0);
  const double P = e.prompt_tokens.value, O = e.output_tokens.value;
  std::string l_why = facts;
  const double completed = field(summary, "requests").value("completed", 0.0);
  const double duration = summary.value("simulated_time_s", 0.0);
  if (completed > 0 && duration > 0 && summary.contains("e2e_s")) {
    // Little's law over the run as simulated: time in the system summed over
    // requests, over the run's length (ramp-up and drain included, which a
    // steady-state estimate leaves out).
    const double e2e = field(summary, "e2e_s").value("mean", 0.0);
    l_why = "Little's law over the simulated run: completed x mean E2E / run length = " + est::num(completed) +
            " x " + est::format_value(e2e, est::Unit::seconds) + " / " + est::format_value(duration, est::Unit::seconds) +
            " = " + est::num(std::round(completed * e2e / duration * 100) / 100) +
            " (E2E = TTFT + O x TPOT, see those rows; ramp-up and drain lower the mean of a short run)";
  }
  cmp.push_back({"requests in the system", e.batch.value, in_system, est::Unit::count, l_why});
  // The simulator's kernels for a prefill of one prompt and for a decode
  // step of the requests it actually kept running.
  const auto prefill = est::serving_step_kernels(sc.model, s.cluster.gpu, sc.parallel, sc.dtype, P, 1, P, P, false,
                                                 sc.attention_kernel);
  const double L = std::max(1.0, in_system);
  // A decode step in a CUDA graph launches its kernels as graph nodes.
  const auto decode = est::serving_step_kernels(
      sc.model, sc.cuda_graphs ? models::gpu::graph_replay_spec(s.cluster.gpu) : s.cluster.gpu, sc.parallel, sc.dtype, L, L,
      1, P + O / 2, sc.cuda_graphs, sc.attention_kernel);
  auto mix_text = [](const est::KernelMix& m) {
    return "GEMMs " + est::format_value(m.gemm.isolated_s, est::Unit::seconds) + " (roofline " +
           est::format_value(m.gemm.roofline_s, est::Unit::seconds) + "), attention " +
           est::format_value(m.attention.isolated_s, est::Unit::seconds) + " (roofline " +
           est::format_value(m.attention.roofline_s, est::Unit::seconds) + "), launch latency " +
           est::format_value(m.gemm.launch_s + m.attention.launch_s, est::Unit::seconds) + " over " +
           est::num(static_cast<double>(m.gemm.kernels + m.attention.kernels)) + " kernels";
  };
  std::string ttft_why = "the GPU model's prefill of " + est::num(P) + " tokens: " + mix_text(prefill) +
                         "; the rest is queueing and decodes sharing the prefill steps (token budget " +
                         est::num(static_cast<double>(sc.scheduler.max_num_batched_tokens)) + "); " + facts;
  if (sc.disaggregation.enabled) {
    ttft_why += "; disaggregated: the prefill runs on TP " + std::to_string(sc.disaggregation.prefill_tp) +
                " and the KV cache then crosses the network to a decode replica";
  }
  cmp.push_back({"TTFT (mean)", e.ttft.value, ttft, est::Unit::seconds, ttft_why});
  std::string tpot_why = "the GPU model's decode step of the " + est::num(std::round(L * 10) / 10) +
                         " requests actually in the system (M padded to a CUDA-graph size): " + mix_text(decode) +
                         ", plus norms, sampling and TP all-reduces; " + facts;
  if (sc.speculative.enabled()) {
    tpot_why += "; speculative decoding emits accepted drafts (acceptance " + est::num(sc.speculative.acceptance_rate) +
                "), several tokens per step";
  }
  cmp.push_back({"TPOT (mean)", e.tpot.value, tpot, est::Unit::seconds, tpot_why});
  o << "## 5. Estimate vs simulation\n\n" << comparison_table(cmp, facts);
  return o.str();
}

}  // namespace gcsim::cli
