#include "workloads/inference/iteration_cost.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "models/cluster/collective_hbm.h"
#include "models/gpu/attention_kernel_model.h"
#include "models/gpu/kernel_cost_model.h"
#include "models/gpu/memory_clock.h"
#include "models/gpu/power_model.h"
#include "models/gpu/rest_clock.h"

namespace gcsim::workloads::inference {

using gpu::AttentionShape;
using gpu::GemmShape;
using gpu::KernelDesc;
using gpu::MemoryOpKind;
using gpu::MemoryOpShape;
using models::AttentionKind;
using models::MlpKind;
using training::KernelClass;

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Activations stay 16-bit when weights are fp8 (vLLM's fp8 checkpoints).
gpu::Dtype activation_dtype(gpu::Dtype d) {
  return d == gpu::Dtype::fp8 || d == gpu::Dtype::int8 ? gpu::Dtype::bf16 : d;
}

}  // namespace

IterationCost::IterationCost(IterationCostConfig config, CommTimer& comm)
    : config_(std::move(config)),
      graph_gpu_(gpu::graph_replay_spec(config_.gpu)),
      comm_(comm),
      eager_profile_(training::Framework::pytorch_eager, config_.eager_traits) {
  const auto& m = config_.model;
  const int pp = config_.parallel.pp;
  const int per = stage_layers(m, pp);
  for (int s = 0; s < pp; ++s) {
    int dense = 0, moe = 0;
    for (int l = s * per; l < std::min(m.layers, (s + 1) * per); ++l) {
      (m.is_moe_layer(l) ? moe : dense) += 1;
    }
    layers_of_stage_dense_.push_back(dense);
    layers_of_stage_moe_.push_back(moe);
  }
}

sim::Duration IterationCost::kernel_time(const KernelDesc& k, bool graph) const {
  return gpu::isolated_time(graph ? graph_gpu_ : config_.gpu, k, config_.gpu.sm_count);
}

IterationCost::Launch IterationCost::kernel_launch(KernelClass cls, const KernelDesc& k, bool graph) const {
  Launch l;
  l.cls = cls;
  l.time = kernel_time(k, graph);
  l.add_kernel(graph ? graph_gpu_ : config_.gpu, k);
  return l;
}

// isolated_time()'s waves: full waves of wave_width SMs, then the partial
// last one, each max(compute, memory) + overheads (kernel_cost_model.cpp).
void IterationCost::Launch::add_kernel(const gpu::GpuSpec& spec, const KernelDesc& k) {
  const int width = gpu::wave_width(spec, k, spec.sm_count);
  const int64_t full = k.tiles / width;
  const int last = static_cast<int>(k.tiles % width);
  const auto group = [&](int64_t count, int sms) {
    if (count <= 0 || sms <= 0) return;
    if (wave_groups >= static_cast<int>(waves.size())) throw std::logic_error("a launch holds at most 2 kernels");
    Waves& w = waves[static_cast<size_t>(wave_groups++)];
    w.count = count;
    w.tile = gpu::tile_cost(spec, k, sms);
    w.overhead = spec.efficiency.tile_overhead + k.extra_wave_overhead;
    w.sm_share = static_cast<double>(sms) / spec.sm_count;
    w.unit = k.unit;
    w.rest_activity = gpu::rest_activity(spec, k);
    w.rest = gpu::instant_clock(spec.power, w.rest_activity);
    w.activity_per_busy = gpu::arithmetic_activity(spec.power, k, 1.0);
    if (k.unit == gpu::ExecUnit::memory) {
      w.issue_q = gpu::memory_issue_fraction(spec, k);
      w.issue_hbm = gpu::tile_cost(spec, k, spec.sm_count).memory;
    }
  };
  group(full, width);
  group(last > 0 ? 1 : 0, last);
  hbm_bytes += static_cast<double>(k.tiles) * k.hbm_bytes_per_tile();
}

// `time` plus what the clock adds to each wave (gpu.cpp set_clock and
// own_wave_time: the arithmetic stretched, a memory kernel's wave at least
// its SM side's memory_issue_wave): exactly `time` at the rested clock.
double IterationCost::Launch::Waves::clock_at(const gpu::PowerParams& p, double step_clock,
                                              double budget_w) const {
  if (!p.instant_limit()) return step_clock;
  const double limit = budget_w > 0.0 ? gpu::cap_clock(p, rest_activity, budget_w) : rest;
  return std::min(step_clock, limit);
}

double IterationCost::Launch::Waves::stretch_at(const gpu::PowerParams& p, double step_clock,
                                                double budget_w) const {
  return 1.0 / gpu::relative_speed(p, clock_at(p, step_clock, budget_w), rest);
}

sim::Duration IterationCost::Launch::at(const gpu::PowerParams& p, double clock, double budget_w) const {
  if ((clock == 1.0 && budget_w <= 0.0) || wave_groups == 0) return time;
  sim::Duration t = time;
  for (int i = 0; i < wave_groups; ++i) {
    const Waves& w = waves[static_cast<size_t>(i)];
    const double own = w.clock_at(p, clock, budget_w);
    const double stretch = w.stretch_at(p, clock, budget_w);
    const sim::Duration rested = w.tile.time() + w.overhead;
    sim::Duration now = w.tile.time_at(stretch) + w.overhead;
    if (own < w.issue_q) {
      now = sim::max(now, sim::Duration::from_seconds(w.issue_hbm.seconds() * w.issue_q / own) + w.overhead);
    }
    t += (now - rested) * w.count;
  }
  return t;
}

int64_t IterationCost::padded_tokens(const StepShape& shape) const {
  const int64_t t = shape.tokens;
  if (!config_.cuda_graphs || t > config_.max_capture_size) return t;
  if (!config_.pad_mixed_steps && !shape.pure_decode()) return t;
  if (t <= 2) return t;
  if (t <= 4) return 4;
  return ceil_div(t, 8) * 8;
}

bool IterationCost::replays_graph(const StepShape& shape) const {
  if (!config_.cuda_graphs || shape.tokens > config_.max_capture_size) return false;
  return config_.pad_mixed_steps || shape.pure_decode();
}

std::vector<IterationCost::LayerKernel> IterationCost::layer_program(int64_t t, bool moe) const {
  if (config_.framework == ServingFramework::pytorch_eager) return eager_layer_program(t);
  const auto& m = config_.model;
  const auto& g = config_.gpu;
  const int64_t tp = config_.parallel.tp;
  const int64_t h = m.hidden;
  const gpu::Dtype w = config_.dtype;
  const gpu::Dtype act = activation_dtype(w);
  const auto kvb = static_cast<int64_t>(gpu::dtype_bytes(config_.kv_dtype));
  const MemoryOpKind norm = m.norm == models::NormKind::rms_norm ? MemoryOpKind::rms_norm
                                                                 : MemoryOpKind::layer_norm;
  std::vector<LayerKernel> k;
  const auto gemm = [&](int64_t mm, int64_t n, int64_t kk, int64_t batch = 1) {
    k.push_back({gpu::gemm_kernel(g, GemmShape{mm, n, kk, batch, w}), KernelClass::gemm});
  };
  const auto slot = [&](Slot which) {
    k.push_back({KernelDesc{}, which == Slot::attention ? KernelClass::attention : KernelClass::communication,
                 which});
  };
  const auto rows = [&](MemoryOpKind kind, int64_t r, int64_t c) {
    MemoryOpShape s;
    s.kind = kind;
    s.rows = r;
    s.cols = c;
    s.dtype = act;
    s.inputs_in_l2 = true;
    k.push_back({gpu::memory_kernel(g, s), KernelClass::norm});
  };
  const auto elementwise = [&](int64_t elements, int inputs, double flops) {
    MemoryOpShape s;
    s.kind = MemoryOpKind::elementwise;
    s.elements = elements;
    s.inputs = inputs;
    s.flops_per_element = flops;
    s.dtype = act;
    s.inputs_in_l2 = true;
    k.push_back({gpu::memory_kernel(g, s), KernelClass::elementwise});
  };
  const auto copy_bytes = [&](int64_t bytes) {
    MemoryOpShape s;
    s.kind = MemoryOpKind::memcpy;
    s.elements = bytes;
    s.dtype = gpu::Dtype::int8;
    s.inputs_in_l2 = true;  // the K and V the QKV projection just wrote
    k.push_back({gpu::memory_kernel(g, s), KernelClass::elementwise});
  };

  rows(norm, t, h);
  const int64_t heads = std::max<int64_t>(1, m.heads / tp);
  if (m.attention == AttentionKind::mla) {
    const auto& a = m.mla;
    const int64_t qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
    if (a.q_lora_rank > 0) {
      gemm(t, a.q_lora_rank, h);  // replicated down-projection
      rows(norm, t, a.q_lora_rank);
      gemm(t, heads * qk, a.q_lora_rank);
    } else {
      gemm(t, heads * qk, h);
    }
    gemm(t, a.kv_lora_rank + a.qk_rope_head_dim, h);  // compressed KV and rotary key
    rows(norm, t, a.kv_lora_rank);
    elementwise(t * (heads + 1) * a.qk_rope_head_dim, 1, 4);
    // Decode runs the absorbed form: queries into the latent space and the
    // attention output back out, per head.
    gemm(t, a.kv_lora_rank, a.qk_nope_head_dim, heads);
    copy_bytes(t * (a.kv_lora_rank + a.qk_rope_head_dim) * kvb);
    slot(Slot::attention);
    gemm(t, a.v_head_dim, a.kv_lora_rank, heads);
    gemm(t, h, heads * a.v_head_dim);
  } else {
    const int64_t kvh = kv_heads_per_gpu(m, config_.parallel.tp);
    gemm(t, heads * m.head_dim + 2 * kvh * m.head_dim, h);
    if (m.position == models::PositionKind::rotary) {
      elementwise(t * (heads + kvh) * m.head_dim, 1, 4);
    }
    copy_bytes(t * 2 * kvh * m.head_dim * kvb);
    slot(Slot::attention);
    gemm(t, h, heads * m.head_dim);
  }
  slot(Slot::all_reduce);
  rows(norm, t, h);
  const int64_t up = m.mlp == MlpKind::swiglu ? 2 : 1;
  const int act_inputs = m.mlp == MlpKind::swiglu ? 2 : 1;
  if (!moe) {
    const int64_t f = m.ffn_hidden / tp;
    gemm(t, up * f, h);
    elementwise(t * f, act_inputs, 4);
    gemm(t, h, f);
    slot(Slot::all_reduce);
    return k;
  }
  const auto& e = m.moe;
  const int64_t ep = config_.parallel.ep;
  gemm(t, e.experts, h);  // router
  elementwise(t * e.experts, 1, 4);
  // Each GPU holds experts/ep experts, each split over tp/ep ranks. With a
  // balanced router the expected number of its experts that receive a token
  // is local * (1 - (1 - 1/experts)^(t * top_k)); they share the t * top_k
  // / ep routed copies evenly.
  const int64_t local = std::max<int64_t>(1, e.experts / ep);
  const double copies = static_cast<double>(t) * e.top_k;
  const double p_hit = 1.0 - std::pow(1.0 - 1.0 / e.experts, copies);
  const int64_t active = std::clamp<int64_t>(
      static_cast<int64_t>(std::ceil(static_cast<double>(local) * p_hit - 1e-9)), 1, local);
  const int64_t per_expert = std::max<int64_t>(
      1, static_cast<int64_t>(std::ceil(copies / static_cast<double>(ep) / active)));
  const int64_t fe = std::max<int64_t>(1, e.expert_ffn_hidden * ep / tp);
  gemm(per_expert, up * fe, h, active);
  elementwise(active * per_expert * fe, act_inputs, 4);
  gemm(per_expert, h, fe, active);
  if (e.shared_experts > 0) {
    const int64_t fs = std::max<int64_t>(1, e.expert_ffn_hidden * e.shared_experts / tp);
    gemm(t, up * fs, h);
    elementwise(t * fs, act_inputs, 4);
    gemm(t, h, fs);
  }
  slot(Slot::all_reduce);
  return k;
}

// The pytorch-eager layer (Hugging Face Llama in bf16, serving_framework.h):
// dense GQA / MHA layers only (the loader refuses MLA and MoE models).
std::vector<IterationCost::LayerKernel> IterationCost::eager_layer_program(int64_t t) const {
  const auto& m = config_.model;
  const auto& g = config_.gpu;
  const int64_t tp = config_.parallel.tp;
  const int64_t h = m.hidden;
  const gpu::Dtype w = config_.dtype;
  const int64_t heads = std::max<int64_t>(1, m.heads / tp);
  const int64_t kvh = kv_heads_per_gpu(m, config_.parallel.tp);
  const int64_t f = m.ffn_hidden / tp;
  const int64_t up = m.mlp == MlpKind::swiglu ? 2 : 1;
  std::vector<LayerKernel> k;
  const auto gemm = [&](int64_t n, int64_t kk) {
    k.push_back({gpu::gemm_kernel(g, GemmShape{t, n, kk, 1, w}), KernelClass::gemm});
  };
  const auto passes = [&](const EagerServingPasses::Passes& ps, KernelClass cls) {
    for (const auto& p : ps) k.push_back({gpu::memory_kernel(g, activation_pass(p)), cls});
  };
  const auto slot = [&](Slot which) {
    k.push_back({KernelDesc{}, which == Slot::attention ? KernelClass::attention : KernelClass::communication,
                 which});
  };
  passes(EagerServingPasses::rms_norm(t, h, config_.gpu.sm_count), KernelClass::norm);
  gemm(heads * m.head_dim + 2 * kvh * m.head_dim, h);
  if (m.position == models::PositionKind::rotary) {
    passes(EagerServingPasses::rope(t * heads * m.head_dim, t * kvh * m.head_dim), KernelClass::elementwise);
  }
  passes(EagerServingPasses::kv_write(t * kvh * m.head_dim), KernelClass::elementwise);
  slot(Slot::attention);
  gemm(h, heads * m.head_dim);
  slot(Slot::all_reduce);
  passes(EagerServingPasses::residual_add(t * h), KernelClass::elementwise);
  passes(EagerServingPasses::rms_norm(t, h, config_.gpu.sm_count), KernelClass::norm);
  gemm(up * f, h);
  if (m.mlp == MlpKind::swiglu) {
    passes(EagerServingPasses::swiglu(t, f), KernelClass::elementwise);
  } else {
    MemoryOpShape s;  // GELU: one vectorized pass
    s.kind = MemoryOpKind::elementwise;
    s.elements = t * f;
    s.dtype = activation_dtype(w);
    s.inputs_in_l2 = true;
    k.push_back({gpu::memory_kernel(g, s), KernelClass::elementwise});
  }
  gemm(h, f);
  slot(Slot::all_reduce);
  passes(EagerServingPasses::residual_add(t * h), KernelClass::elementwise);
  return k;
}

const IterationCost::Program& IterationCost::layer_launches(int64_t tokens, bool moe, bool graph) {
  Caches& c = caches_[graph ? 1 : 0];
  auto& cache = moe ? c.token_moe : c.token_dense;
  auto it = cache.find(tokens);
  if (it != cache.end()) return it->second;
  Program p;
  for (const auto& k : layer_program(tokens, moe)) {
    if (k.slot == Slot::kernel) {
      p.push_back(kernel_launch(k.cls, k.desc, graph));
    } else {
      p.push_back({k.cls, sim::Duration::zero(), k.slot});
    }
  }
  return cache.emplace(tokens, std::move(p)).first->second;
}

// A serving step's passes read what the kernels just before them wrote (a
// GEMM's output, the previous pass's, the logits): L2 holds it when the
// pass's bytes fit (l2_cache.h). The embedding's gather reads the table.
gpu::MemoryOpShape IterationCost::activation_pass(const training::FrameworkPass& p) const {
  MemoryOpShape s = eager_profile_.shape(p);
  s.inputs_in_l2 = true;
  return s;
}

void IterationCost::add_passes(Program& out, const EagerServingPasses::Passes& passes, KernelClass cls,
                               bool graph, bool fresh_inputs) const {
  for (const auto& p : passes) {
    const MemoryOpShape s = fresh_inputs ? activation_pass(p) : eager_profile_.shape(p);
    out.push_back(kernel_launch(cls, gpu::memory_kernel(config_.gpu, s), graph));
  }
}

// One attention kernel per prefill chunk, one for all the decodes. PyTorch's
// cuDNN prefill (pytorch-eager) clears a buffer with a memset before each
// kernel: torch.profiler shows one "Memset (Device)" per prefill attention
// call and none per decode call, 0.8 - 1.0 us each (calibration/measurements/
// h100-x4/serving_step_2026-11-26, rank 0's kernel tables). The buffer is not
// named in the trace; it is taken as the fp32 softmax statistics (a row's
// max and sum per query and head), whose write is far below the launch cost.
std::vector<IterationCost::Launch> IterationCost::attention_launches(const StepShape& shape, bool graph) {
  auto& prefill_attention = caches_[graph ? 1 : 0].prefill_attention;
  auto& decode_attention = caches_[graph ? 1 : 0].decode_attention;
  const auto& m = config_.model;
  const auto& g = config_.gpu;
  const int64_t tp = config_.parallel.tp;
  const int64_t heads = std::max<int64_t>(1, m.heads / tp);
  const bool mla = m.attention == AttentionKind::mla;
  const int64_t kvh = kv_heads_per_gpu(m, config_.parallel.tp);
  const gpu::Dtype adt = config_.kv_dtype;
  std::vector<Launch> out;
  for (const auto& [q, kv] : shape.prefills) {
    auto it = prefill_attention.find({q, kv});
    if (it == prefill_attention.end()) {
      AttentionShape a;
      a.batch = 1;
      a.heads = heads;
      a.q_len = q;
      a.kv_len = kv;
      a.causal = true;
      a.dtype = adt;
      a.family = gpu::resolve_attention_family(config_.attention_kernel, g, /*decode=*/false);
      Launch attn;  // the kernels of the attention launch (MLA: its decompression GEMM first)
      attn.cls = KernelClass::attention;
      attn.profiled_kernels = 1;
      sim::Duration t = sim::Duration::zero();
      if (mla) {
        // Prefill decompresses the latent KV of the whole context into
        // per-head keys and values, then runs ordinary attention.
        const auto& ml = m.mla;
        const KernelDesc up = gpu::gemm_kernel(
            g, GemmShape{kv, heads * (ml.qk_nope_head_dim + ml.v_head_dim), ml.kv_lora_rank, 1, config_.dtype});
        t += kernel_time(up, graph);
        attn.add_kernel(graph ? graph_gpu_ : g, up);
        a.kv_heads = heads;
        a.head_dim = ml.qk_nope_head_dim + ml.qk_rope_head_dim;
        a.head_dim_v = ml.v_head_dim;
      } else {
        a.kv_heads = kvh;
        a.head_dim = m.head_dim;
      }
      const KernelDesc fa = gpu::attention_kernel(g, a);
      t += kernel_time(fa, graph);
      attn.add_kernel(graph ? graph_gpu_ : g, fa);
      attn.time = t;
      std::vector<Launch> launches;
      if (config_.framework == ServingFramework::pytorch_eager && a.family == gpu::AttentionFamily::cudnn) {
        MemoryOpShape stats;
        stats.kind = MemoryOpKind::elementwise;
        stats.elements = a.batch * a.heads * q;
        stats.inputs = 0;
        stats.flops_per_element = 0;
        stats.dtype = gpu::Dtype::fp32;
        stats.inputs_in_l2 = true;  // writes only: they land in L2
        Launch memset = kernel_launch(KernelClass::elementwise, gpu::memory_kernel(g, stats), graph);
        memset.own_issue = false;
        launches.push_back(memset);
      }
      // The attention kernel's model is fitted to its profiler durations
      // (calibration/fit/attention_family_fit.h, serving_kernels_2026-11-27):
      // one launch latency in `t` the profiler's class does not count.
      launches.push_back(attn);
      it = prefill_attention.emplace(std::make_pair(q, kv), std::move(launches)).first;
    }
    out.insert(out.end(), it->second.begin(), it->second.end());
  }
  if (shape.decodes > 0) {
    const int64_t kv_len = ceil_div(shape.decode_kv_tokens, shape.decodes);
    const auto key = std::make_tuple(shape.decodes, kv_len, shape.decode_q);
    auto it = decode_attention.find(key);
    if (it == decode_attention.end()) {
      AttentionShape a;
      a.batch = shape.decodes;
      a.heads = heads;
      a.q_len = shape.decode_q;
      a.kv_len = kv_len;
      a.causal = shape.decode_q > 1;
      a.dtype = adt;
      a.family = gpu::resolve_attention_family(config_.attention_kernel, g, /*decode=*/true);
      if (mla) {
        // Absorbed MLA decode: every head attends over the one latent
        // (kv_lora_rank + rope wide) per token as K, its first kv_lora_rank
        // columns as V: one tensor, read once.
        a.kv_heads = 1;
        a.head_dim = m.mla.kv_lora_rank + m.mla.qk_rope_head_dim;
        a.head_dim_v = m.mla.kv_lora_rank;
        a.kv_shared = true;
      } else {
        a.kv_heads = kvh;
        a.head_dim = m.head_dim;
      }
      if (decode_attention.size() > 1'000'000) decode_attention.clear();
      it = decode_attention.emplace(key, kernel_launch(KernelClass::attention, gpu::attention_kernel(g, a), graph))
               .first;
    }
    out.push_back(it->second);
  }
  return out;
}

IterationCost::Launch IterationCost::collective_launch(CollectiveKind kind, int64_t bytes,
                                                      const std::vector<int>& group) {
  Launch l{KernelClass::communication, comm_.collective(kind, sim::Bytes(bytes), group)};
  l.hbm_bytes = models::cluster::collective_hbm_bytes(workloads::collective_op(kind), static_cast<double>(bytes),
                                                      static_cast<int>(group.size()));
  return l;
}

IterationCost::Launch IterationCost::tp_all_reduce(int stage, int64_t tokens) {
  const int tp = config_.parallel.tp;
  if (tp < 2) return {KernelClass::communication, sim::Duration::zero()};
  const auto first = config_.ranks.begin() + static_cast<ptrdiff_t>(stage) * tp;
  const std::vector<int> group(first, first + tp);
  const auto bytes = static_cast<int64_t>(static_cast<double>(tokens * config_.model.hidden) *
                                          gpu::dtype_bytes(activation_dtype(config_.dtype)));
  Launch l = collective_launch(CollectiveKind::all_reduce, bytes, group);
  // vLLM runs a TP group's all-reduce as its custom all-reduce kernel
  // (custom_all_reduce.cuh) where the group shares one node's NVLink, as
  // its TP groups do; NCCL's across nodes, which this does not tell apart.
  l.nccl = config_.framework != ServingFramework::vllm;
  return l;
}

// The first stage's lookup: vLLM's one gather kernel, or the eager list.
// Vocabulary-parallel: each rank looks up its slice (an all-reduce then sums
// the slices; cost() adds it).
const IterationCost::Program& IterationCost::embedding_launches(int64_t tokens, bool graph) {
  auto& cache = caches_[graph ? 1 : 0].embedding;
  auto it = cache.find(tokens);
  if (it != cache.end()) return it->second;
  const auto& m = config_.model;
  Program p;
  if (config_.framework == ServingFramework::pytorch_eager) {
    add_passes(p, EagerServingPasses::embedding(tokens, m.hidden, config_.parallel.tp), KernelClass::elementwise,
               graph, /*fresh_inputs=*/false);
  } else {
    MemoryOpShape s;
    s.kind = MemoryOpKind::memcpy;
    s.elements = static_cast<int64_t>(static_cast<double>(tokens * m.hidden) *
                                      gpu::dtype_bytes(activation_dtype(config_.dtype)));
    s.dtype = gpu::Dtype::int8;
    p.push_back(kernel_launch(KernelClass::elementwise, gpu::memory_kernel(config_.gpu, s), graph));
  }
  return cache.emplace(tokens, std::move(p)).first->second;
}

// pytorch-eager: cos and sin gathered at the step's positions, once per
// stage (vLLM's rotary kernel reads its cache itself).
const IterationCost::Program& IterationCost::rope_table_launches(int64_t tokens, bool graph) {
  auto& cache = caches_[graph ? 1 : 0].rope_tables;
  auto it = cache.find(tokens);
  if (it != cache.end()) return it->second;
  Program p;
  if (config_.framework == ServingFramework::pytorch_eager &&
      config_.model.position == models::PositionKind::rotary) {
    add_passes(p, EagerServingPasses::rope_tables(tokens, config_.model.head_dim), KernelClass::elementwise,
               graph);
  }
  return cache.emplace(tokens, std::move(p)).first->second;
}

// The last stage's head: the final norm over the step's tokens, the logits
// GEMM for the rows that sample, their all-gather over TP, the sampler.
const IterationCost::Program& IterationCost::head_launches(int64_t tokens, int64_t sampled, bool graph) {
  const int64_t key = tokens * (int64_t{1} << 24) + sampled;
  auto& cache = caches_[graph ? 1 : 0].head;
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  const auto& m = config_.model;
  const auto& g = config_.gpu;
  const int tp = config_.parallel.tp;
  const bool eager = config_.framework == ServingFramework::pytorch_eager;
  const gpu::Dtype act = activation_dtype(config_.dtype);
  Program p;
  if (eager) {
    add_passes(p, EagerServingPasses::rms_norm(tokens, m.hidden, g.sm_count), KernelClass::norm, graph);
  } else {
    MemoryOpShape norm;
    norm.kind = m.norm == models::NormKind::rms_norm ? MemoryOpKind::rms_norm : MemoryOpKind::layer_norm;
    norm.rows = tokens;
    norm.cols = m.hidden;
    norm.dtype = act;
    norm.inputs_in_l2 = true;
    p.push_back(kernel_launch(KernelClass::norm, gpu::memory_kernel(g, norm), graph));
  }
  if (sampled > 0) {
    const int64_t vocab = ceil_div(m.vocab, tp);
    p.push_back(kernel_launch(KernelClass::gemm, gpu::gemm_kernel(g, GemmShape{sampled, vocab, m.hidden, 1, config_.dtype}),
                              graph));
    if (tp > 1) {
      const int last = config_.parallel.pp - 1;
      const auto first = config_.ranks.begin() + static_cast<ptrdiff_t>(last) * tp;
      const std::vector<int> group(first, first + tp);
      const auto bytes = static_cast<int64_t>(static_cast<double>(sampled * vocab * tp) *
                                              gpu::dtype_bytes(act));
      p.push_back(collective_launch(CollectiveKind::all_gather, bytes, group));
    }
    if (eager) add_passes(p, EagerServingPasses::sampler(sampled, vocab * tp, tp), KernelClass::elementwise, graph);
    MemoryOpShape soft;
    soft.kind = MemoryOpKind::softmax;
    soft.rows = sampled;
    soft.cols = m.vocab;
    soft.dtype = gpu::Dtype::fp32;
    soft.inputs_in_l2 = true;  // the logits the GEMM and all-gather just wrote
    p.push_back(kernel_launch(KernelClass::norm, gpu::memory_kernel(g, soft), graph));
    if (eager) add_passes(p, EagerServingPasses::argmax(sampled, vocab * tp, g.sm_count), KernelClass::elementwise, graph);
  }
  return cache.emplace(key, std::move(p)).first->second;
}

// One stage's GPU stream as its host issues it: each launch waits for the
// one before it on the GPU and, when the host pays `issue` per launch, for
// its own issue (the host runs ahead of the GPU, never behind).
//
// The classes sum what a profiler's kernel table does (torch.profiler's
// CUDA activity runs from a kernel's start to its end, the gap to the next
// kernel left out): a kernel whose model is fitted to such durations
// (Launch::profiled_kernels) counts its time less the launch latency the
// model adds to it; the others, fitted to back-to-back spacing (a kernel's
// duration and the gap before the next one), count their time less that
// gap (gpu_spec.h launch_gap: the stream's 1.45 us on an H100, the graph's
// 0.16 us; the rest of the launch latency, GpuSpec::launch_inside, 0.95 us
// there, is inside the kernel's duration). Collectives count their whole
// time. `launch`: the stream's latency, or the graph's for a replayed step;
// `inside`: GpuSpec::launch_inside; `collective_node`:
// what a collective's kernel node adds in a replayed graph beyond the
// collective's time (gpu_spec.h graph_collective_overhead; zero on a
// stream), in the step and the communication time but not in the class,
// which sums NCCL kernels' durations as the profiler does.
//
// `stretch` (1 / compute_speed at the step's clock) lengthens each kernel's
// arithmetic (Launch::at); the timeline sums what the kernels do as
// activity-seconds: tensor- or CUDA-core SM-time (a wave's arithmetic time
// over its SMs' share of the GPU, as models/gpu/gpu.cpp charge() counts
// it) and HBM bytes over the peak bandwidth.
class IterationCost::Timeline {
 public:
  Timeline(sim::Duration issue, sim::Duration launch, sim::Duration inside, sim::Duration collective_node, double clock,
           double budget_w, const gpu::PowerParams& power, double hbm_peak_bytes_per_s)
      : issue_(issue), launch_(launch), gap_(gpu::launch_gap(launch, inside)), collective_node_(collective_node),
        clock_(clock), budget_w_(budget_w), power_(power), hbm_peak_(hbm_peak_bytes_per_s) {}

  void run(const Launch& l, training::KernelClassTimes& classes) {
    const bool collective = l.cls == KernelClass::communication;
    const sim::Duration node = collective && l.nccl ? collective_node_ : sim::Duration::zero();
    const sim::Duration time = l.at(power_, clock_, budget_w_) + node;
    if (l.own_issue) host_ += issue_;
    gpu_ = std::max(gpu_, host_) + time;
    busy_ += time;
    if (collective) comm_ += time;
    gpu::Activity kernel;  // this kernel's activity-seconds
    for (int i = 0; i < l.wave_groups; ++i) {
      const Launch::Waves& w = l.waves[static_cast<size_t>(i)];
      const double s = w.tile.compute.seconds() * w.stretch_at(power_, clock_, budget_w_) * w.sm_share *
                       static_cast<double>(w.count);
      kernel.tensor += s * w.activity_per_busy.tensor;
      kernel.vector += s * w.activity_per_busy.vector;
    }
    if (hbm_peak_ > 0.0) kernel.hbm = l.hbm_bytes / hbm_peak_;
    // Its HBM traffic beside no arithmetic of its own (power_model.h
    // unshared_hbm, over the kernel's span): the step is charged to the
    // governor as one mean, which would let the GEMMs' arithmetic hide the
    // passes' traffic.
    kernel.hbm_unshared = gpu::unshared_hbm_seconds(kernel, time.seconds());
    gpu::accumulate(activity_, kernel);
    if (collective) collective_bytes_ += l.hbm_bytes;
    const sim::Duration off = collective                      ? node
                              : l.profiled_kernels > 0            ? launch_ * l.profiled_kernels
                                                                  : gap_;
    const sim::Duration own = std::max(sim::Duration::zero(), time - off);
    classes.seconds[static_cast<size_t>(l.cls)] += own.seconds();
    classes.kernels += 1;
  }
  // `count` runs of `body` in a row; without host cost in closed form (the
  // same durations again, back to back).
  template <typename Body>
  void repeat(int count, Body&& body, training::KernelClassTimes& classes) {
    if (count <= 0) return;
    if (issue_ > sim::Duration::zero()) {
      for (int i = 0; i < count; ++i) body(classes);
      return;
    }
    training::KernelClassTimes one;
    const sim::Duration gpu0 = gpu_, busy0 = busy_, comm0 = comm_;
    const gpu::Activity act0 = activity_;
    const double coll0 = collective_bytes_;
    body(one);
    gpu_ += (gpu_ - gpu0) * (count - 1);
    busy_ += (busy_ - busy0) * (count - 1);
    comm_ += (comm_ - comm0) * (count - 1);
    const double more = static_cast<double>(count - 1);
    gpu::Activity once = activity_;
    gpu::accumulate(once, act0, -1.0);
    gpu::accumulate(activity_, once, more);
    collective_bytes_ += (collective_bytes_ - coll0) * more;
    for (size_t c = 0; c < one.seconds.size(); ++c) classes.seconds[c] += one.seconds[c] * count;
    classes.kernels += one.kernels * count;
  }
  sim::Duration end() const { return gpu_; }           // the stage's last kernel ends
  sim::Duration busy() const { return busy_; }         // kernels and collectives, summed
  sim::Duration communication() const { return comm_; }
  const gpu::Activity& activity_s() const { return activity_; }
  double collective_hbm_bytes() const { return collective_bytes_; }

 private:
  sim::Duration issue_;
  sim::Duration launch_;
  sim::Duration gap_;
  sim::Duration collective_node_;  // graph_collective_overhead in a replayed graph, else zero
  sim::Duration host_ = sim::Duration::zero();
  sim::Duration gpu_ = sim::Duration::zero();
  sim::Duration busy_ = sim::Duration::zero();
  sim::Duration comm_ = sim::Duration::zero();
  double clock_ = 1.0;
  double budget_w_ = 0.0;  // the instantaneous limiter's cap (0: a rested GPU's)
  const gpu::PowerParams& power_;
  double hbm_peak_ = 0.0;  // bytes/s
  gpu::Activity activity_;  // activity-seconds (power_model.h's fractions x s)
  double collective_bytes_ = 0.0;  // HBM bytes of the collectives and sends in activity_
};

StepCost IterationCost::cost(const StepShape& shape) { return cost(shape, 1.0); }

StepCost IterationCost::cost(const StepShape& shape, double clock, double budget_w) {
  if (!(clock > 0.0 && clock <= 1.0)) throw std::invalid_argument("a step's SM clock fraction lies in (0, 1]");
  // The Gpu runtime's stretch at a governor's clock (gpu.cpp set_clock):
  // each kernel's efficiencies stand for its rest clock (rest_clock.h;
  // serving's spec is never derated under the clock model: scenario.cpp
  // apply_clocks), Launch::at.
  StepCost c;
  c.clock = clock;
  c.compute = sim::Duration::zero();
  c.communication = sim::Duration::zero();
  c.host_wait = sim::Duration::zero();
  c.graph = replays_graph(shape);
  const int pp = config_.parallel.pp;
  const int tp = config_.parallel.tp;
  const int64_t t = padded_tokens(shape);
  const std::vector<Launch> attention = attention_launches(shape, c.graph);
  const auto act_bytes = gpu::dtype_bytes(activation_dtype(config_.dtype));
  const sim::Duration issue = c.graph ? sim::Duration::zero() : config_.host_per_kernel;
  c.total = sim::Duration::zero();
  for (int s = 0; s < pp; ++s) {
    const int dense = layers_of_stage_dense_[static_cast<size_t>(s)];
    const int moe = layers_of_stage_moe_[static_cast<size_t>(s)];
    const Launch ar = tp_all_reduce(s, t);
    Timeline line(issue, (c.graph ? graph_gpu_ : config_.gpu).kernel_launch_latency, config_.gpu.launch_inside(),
                  c.graph ? config_.gpu.graph_collective_overhead : sim::Duration::zero(), clock, budget_w,
                  config_.gpu.power,
                  config_.gpu.hbm_bandwidth.bytes_per_s());
    training::KernelClassTimes classes;
    const auto run_all = [&](const Program& p, training::KernelClassTimes& into) {
      for (const Launch& l : p) line.run(l, into);
    };
    if (s == 0) {
      run_all(embedding_launches(t, c.graph), classes);
      if (tp > 1) line.run(ar, classes);
    }
    run_all(rope_table_launches(t, c.graph), classes);
    const auto layer = [&](const Program& p) {
      return [&](training::KernelClassTimes& into) {
        for (const Launch& l : p) {
          if (l.slot == Slot::attention) {
            for (const Launch& a : attention) line.run(a, into);
          } else if (l.slot == Slot::all_reduce) {
            if (tp > 1) line.run(ar, into);
          } else {
            line.run(l, into);
          }
        }
      };
    };
    if (dense > 0) line.repeat(dense, layer(layer_launches(t, false, c.graph)), classes);
    if (moe > 0) line.repeat(moe, layer(layer_launches(t, true, c.graph)), classes);
    if (s == pp - 1) run_all(head_launches(t, shape.sampled, c.graph), classes);
    if (s + 1 < pp) {
      // Hidden states and residual to the next stage, rank i to rank i.
      const int src = config_.ranks[static_cast<size_t>(s * tp)];
      const int dst = config_.ranks[static_cast<size_t>((s + 1) * tp)];
      const auto bytes = static_cast<int64_t>(2.0 * static_cast<double>(t * config_.model.hidden) * act_bytes);
      Launch send{KernelClass::communication, comm_.p2p(src, dst, sim::Bytes(bytes))};
      // The stages' activity is summed, so the send counts the busier
      // (receiving) side's bytes for the pair (collective_hbm.h).
      send.hbm_bytes = models::cluster::collective_hbm_bytes(models::collectives::CollectiveOp::send_recv,
                                                             static_cast<double>(bytes), 2);
      line.run(send, classes);
    }
    sim::Duration stage = line.end();
    c.host_wait += line.end() - line.busy();
    c.communication += line.communication();
    c.compute += line.busy() - line.communication();
    if (s == 0) stage += config_.step_overhead;
    c.stages.push_back(stage);
    c.total += stage;
    for (size_t k = 0; k < classes.seconds.size(); ++k) c.classes.seconds[k] += classes.seconds[k];
    c.classes.kernels += classes.kernels;
    gpu::accumulate(c.activity_s, line.activity_s(), 1.0 / pp);
    c.collective_hbm_bytes += line.collective_hbm_bytes() / pp;
  }
  c.classes.host_wait_s = c.host_wait.seconds();
  return c;
}

}  // namespace gcsim::workloads::inference
