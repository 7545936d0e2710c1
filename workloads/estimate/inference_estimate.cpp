#include "workloads/estimate/inference_estimate.h"

#include <algorithm>
#include <cmath>

#include "models/gpu/attention_kernel_model.h"
#include "models/gpu/kernel_cost_model.h"
#include "workloads/models/model_formulas.h"

namespace gcsim::workloads::estimate {

namespace wi = workloads::inference;
namespace gpu = ::gcsim::models::gpu;
using collectives::CollectiveOp;

namespace {

// Mean of a length distribution (tokens); `prompt` picks the trace column.
double mean_length(const wi::LengthDist& d, const wi::RequestsConfig& r, bool prompt) {
  switch (d.kind) {
    case wi::LengthKind::fixed: return static_cast<double>(d.value);
    case wi::LengthKind::uniform: return 0.5 * static_cast<double>(d.min + d.max);
    case wi::LengthKind::normal:
      return std::clamp(d.mean, static_cast<double>(d.min), static_cast<double>(std::max(d.min, d.max)));
    case wi::LengthKind::zipf: {
      double w = 0, s = 0;
      for (int64_t k = d.min; k <= d.max; ++k) {
        const double p = 1.0 / std::pow(static_cast<double>(k - d.min + 1), d.zipf_s);
        w += p;
        s += p * static_cast<double>(k);
      }
      return w > 0 ? s / w : static_cast<double>(d.min);
    }
    case wi::LengthKind::trace: {
      double s = 0;
      for (const auto& row : r.trace) s += static_cast<double>(prompt ? row.prompt : row.output);
      return r.trace.empty() ? 1.0 : s / static_cast<double>(r.trace.size());
    }
  }
  return 1.0;
}

}  // namespace

std::vector<Line> InferenceEstimate::lines() const {
  std::vector<Line> out = kv.lines();
  out.insert(out.end(), {prompt_tokens, output_tokens, arrival_rate, prefill_per_token, batch, decode_step,
                         tp_comm_per_step, ttft, tpot});
  return out;
}

InferenceEstimate estimate_inference(const wi::ServingConfig& s, const gpu::GpuSpec& g, const LinkRates& links) {
  InferenceEstimate e;
  const auto& m = s.model;
  const auto& r = s.requests;
  const double prompt = std::max(1.0, mean_length(r.prompt, r, true));
  const double output = std::max(1.0, mean_length(r.output, r, false));
  e.prompt_tokens = make_line("mean prompt tokens", prompt, Unit::count, wi::length_name(r.prompt.kind));
  e.output_tokens = make_line("mean output tokens", output, Unit::count, wi::length_name(r.output.kind));

  wi::MemoryInputs in;
  in.weights = s.dtype;
  in.kv = s.kv_dtype;
  in.parallel = s.parallel;
  in.capacity = g.hbm_capacity;
  in.gpu_memory_utilization = s.gpu_memory_utilization;
  in.block_size = s.scheduler.block_size;
  in.max_num_batched_tokens = s.scheduler.max_num_batched_tokens;
  in.max_num_seqs = s.scheduler.max_num_seqs;
  in.non_torch = s.non_torch_memory;
  e.kv = estimate_kv(m, in, prompt + output, s.scheduler.max_num_seqs);

  const int tp = s.parallel.tp, pp = s.parallel.pp;
  const auto f = workloads::models::forward_flops_per_token(m);
  const double rate = g.tensor_peak_for(s.dtype).flops_per_s() * g.efficiency.tensor_for(s.dtype);
  // Causal attention over a prompt of length P: each token attends to P/2
  // keys on average; f.attention counts seq_len keys.
  const double attn = f.attention * (0.5 * prompt / std::max<double>(1.0, static_cast<double>(m.seq_len)));
  const double per_token = (f.layers + attn) / (tp * rate);
  e.prefill_per_token = make_line("prefill time per prompt token", per_token, Unit::seconds,
                                  "(2 N_active + causal attention) / (tp x GEMM rate) = (" + num(f.layers) + " + " +
                                      num(attn) + ") / (" + num(tp) + " x " + num(rate) + ")");
  const double hbm = g.hbm_bandwidth.bytes_per_s() * g.efficiency.hbm;
  const double weights = e.kv.weights.value;
  const double kv_tok = e.kv.bytes_per_token_per_gpu.value;
  const double overhead = s.step_overhead.seconds();
  const double h = static_cast<double>(m.hidden);
  const double lat = links.scale_up_latency_s;
  const double layers = m.layers;
  auto tp_comm = [&](double tokens) {
    if (tp <= 1) return 0.0;
    return 2.0 * layers *
           ideal_time_line(CollectiveOp::all_reduce, tokens * h * gpu::dtype_bytes(s.dtype), tp,
                           links.scale_up_bytes_per_s, lat).value;
  };
  // One decode step of L requests: each stage reads its weights and the
  // batch's KV (mean context P + O/2), stages in turn; TP all-reduces; host.
  auto decode = [&](double L) {
    return pp * (weights + L * (prompt + 0.5 * output) * kv_tok) / hbm + tp_comm(L) + overhead;
  };
  // Requests in the system: a burst or a trace keeps as many running as fit;
  // Poisson arrivals by Little's law L = rate x (TTFT + O x TPOT), iterated.
  const double cap = std::max(1.0, std::min(e.kv.max_concurrent.value, static_cast<double>(r.count)));
  double L = cap;
  std::string batch_f = "min(max concurrent, requests) = min(" + num(e.kv.max_concurrent.value) + ", " +
                        num(static_cast<double>(r.count)) + ")";
  double arrivals = r.rate;  // requests per second
  if (r.arrival == wi::ArrivalKind::trace && !r.trace.empty()) {
    // A trace's mean arrival rate: its requests over the span of arrivals.
    double last = 0;
    for (const auto& row : r.trace) last = std::max(last, row.arrival_s);
    arrivals = last > 0 ? static_cast<double>(r.trace.size()) / last : 0.0;
  }
  if (arrivals > 0 && (r.arrival == wi::ArrivalKind::poisson || r.arrival == wi::ArrivalKind::gamma ||
                   r.arrival == wi::ArrivalKind::trace)) {
    L = 1.0;
    for (int i = 0; i < 50; ++i) {
      const double tpot = decode(L) + (L * prompt / output) * per_token;
      L = std::clamp(arrivals * (prompt * per_token + output * tpot), 1.0, cap);
    }
    batch_f = "Little's law L = rate x (P t_prefill + O TPOT(L)), rate " + num(arrivals) + "/s, at most " + num(cap);
  }
  e.arrival_rate = make_line("arrival rate", r.arrival == wi::ArrivalKind::burst ? 0.0 : arrivals, Unit::count,
                             r.arrival == wi::ArrivalKind::trace ? "trace requests / last arrival" : "requests.arrival.rate");
  e.batch = make_line("requests decoding together", L, Unit::count, batch_f);
  e.decode_step = make_line("decode step", decode(L), Unit::seconds,
                            "pp x (weights + L (P + O/2) KV/token) / HBM rate + TP + host = " + num(pp) + " x (" +
                                num(weights) + " + " + num(L) + " x " + num(prompt + 0.5 * output) + " x " +
                                num(kv_tok) + ") / " + num(hbm) + " + " + num(tp_comm(L)) + " + " + num(overhead));
  e.tp_comm_per_step = make_line("TP all-reduces per decode step", tp_comm(L), Unit::seconds,
                                 "2 per layer x " + num(layers) + " layers of L h x 2 B on " + num(tp) + " GPUs");
  const double prefill = std::max(prompt * per_token, pp * weights / hbm) + tp_comm(prompt) + overhead;
  e.ttft = make_line("TTFT", prefill, Unit::seconds,
                     "max(P x t_prefill, weight read) + TP + host, no queueing = max(" + num(prompt * per_token) +
                         ", " + num(pp * weights / hbm) + ") + " + num(tp_comm(prompt)) + " + " + num(overhead));
  const double mixed = (L * prompt / output) * per_token;
  e.tpot = make_line("TPOT", decode(L) + mixed, Unit::seconds,
                     "decode step + prefills sharing the steps (L P / O tokens per output token) = " +
                         num(decode(L)) + " + " + num(mixed));
  return e;
}

KernelMix serving_step_kernels(const models::ModelSpec& m, const gpu::GpuSpec& g, const wi::ParallelShape& p,
                               gpu::Dtype dtype, double tokens, double batch, double q_len, double context,
                               bool pad, std::optional<gpu::AttentionFamily> attention_kernel) {
  int64_t M = std::max<int64_t>(1, std::llround(tokens));
  if (pad) M = M <= 2 ? M : M <= 4 ? 4 : (M + 7) / 8 * 8;
  const int64_t tp = p.tp, h = m.hidden;
  auto gemm = [&](int64_t n, int64_t k) {
    gpu::GemmShape s;
    s.m = M;
    s.n = std::max<int64_t>(1, n);
    s.k = std::max<int64_t>(1, k);
    s.dtype = dtype;
    return gpu::gemm_kernel(g, s);
  };
  std::vector<gpu::KernelDesc> k;
  std::vector<bool> attn;
  k.push_back(gemm((m.q_width() + 2 * m.kv_width()) / tp, h));
  k.push_back(gemm(h, m.q_width() / tp));
  const int64_t f = m.is_moe() ? m.moe.expert_ffn_hidden * (m.moe.top_k + m.moe.shared_experts) : m.ffn_hidden;
  const int64_t fc1 = (m.mlp == models::MlpKind::swiglu ? 2 : 1) * f / tp;
  k.push_back(gemm(fc1, h));
  k.push_back(gemm(h, f / tp));
  attn.assign(k.size(), false);
  gpu::AttentionShape a;
  a.batch = std::max<int64_t>(1, std::llround(batch));
  a.heads = std::max<int64_t>(1, m.heads / tp);
  a.kv_heads = std::max<int64_t>(1, m.kv_heads / tp);
  a.head_dim = m.head_dim > 0 ? m.head_dim : h / std::max(1, m.heads);
  a.q_len = std::max<int64_t>(1, std::llround(q_len));
  a.kv_len = std::max<int64_t>(a.q_len, std::llround(context));
  a.causal = true;
  a.dtype = dtype;
  a.family = gpu::resolve_attention_family(attention_kernel, g,
                                           a.q_len <= gpu::kDecodeMaxQueryLen);
  k.push_back(gpu::attention_kernel(g, a));
  attn.push_back(true);
  // Scale one layer to the stage's layers by repeating the descriptions.
  const int layers = (m.layers + p.pp - 1) / p.pp;
  std::vector<gpu::KernelDesc> all;
  std::vector<bool> all_attn;
  for (int l = 0; l < layers; ++l) {
    all.insert(all.end(), k.begin(), k.end());
    all_attn.insert(all_attn.end(), attn.begin(), attn.end());
  }
  return kernel_mix(g, all, all_attn);
}

}  // namespace gcsim::workloads::estimate
