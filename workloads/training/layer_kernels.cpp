#include "workloads/training/layer_kernels.h"

#include <algorithm>
#include <cmath>

namespace gcsim::workloads::training {

using gcsim::models::gpu::AttentionShape;
using gcsim::models::gpu::Dtype;
using gcsim::models::gpu::GemmShape;
using gcsim::models::gpu::MemoryOpKind;
using gcsim::models::gpu::MemoryOpShape;
using models::AttentionKind;
using models::MlpKind;

namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
// Flops per element of the elementwise kernels (tanh GELU ~8, SiLU x up ~5).
constexpr double kGeluFlops = 8, kSwigluFlops = 5, kNormFlops = 8;
}  // namespace

LayerKernels::LayerKernels(const TrainingConfig& c, double expert_load, double max_expert_load,
                           bool ep_spans_nodes)
    : c_(c),
      expert_load_(expert_load),
      max_expert_load_(max_expert_load),
      ep_spans_nodes_(ep_spans_nodes) {
  const auto& m = c.model;
  const auto& p = c.parallel;
  act_ = c.precision == Precision::fp16 ? Dtype::fp16 : Dtype::bf16;
  gemm_ = c.precision == Precision::fp8 ? Dtype::fp8 : act_;
  t_ = p.tp;
  cp_ = p.cp;
  b_ = c.batch.micro;
  h_ = m.hidden;
  s_ = m.seq_len;
  sq_ = s_ / cp_;
  tokens_ = b_ * sq_;
  sp_ = p.sequence_parallel && t_ > 1;
  norm_rows_ = sp_ ? tokens_ / t_ : tokens_;
  heads_ = m.heads / t_;
  dropout_ = m.dropout > 0.0;
  rotary_ = m.position == models::PositionKind::rotary;
  flash_ = c.attention_impl == AttentionImpl::flash;
  if (m.attention == AttentionKind::mla) {
    kv_heads_ = heads_;
    q_width_ = m.q_width() / t_;
    k_width_ = q_width_;
    v_width_ = heads_ * m.mla.v_head_dim;
    out_width_ = v_width_;
    // QK^T runs over nope + rope, PV over v: their mean gives the FLOPs.
    head_dim_ = (m.mla.qk_nope_head_dim + m.mla.qk_rope_head_dim + m.mla.v_head_dim) / 2;
  } else {
    // TP beyond the KV heads replicates them: one per GPU.
    kv_heads_ = std::max<int64_t>(1, m.kv_heads / t_);
    q_width_ = heads_ * m.head_dim;
    k_width_ = kv_heads_ * m.head_dim;
    v_width_ = k_width_;
    out_width_ = q_width_;
    head_dim_ = m.head_dim;
  }
}

GemmShape LayerKernels::gemm(int64_t m, int64_t n, int64_t k, bool low_precision,
                             int64_t batch) const {
  return GemmShape{std::max<int64_t>(m, 1), std::max<int64_t>(n, 1), std::max<int64_t>(k, 1),
                   batch, low_precision ? gemm_ : act_};
}

MemoryOpShape LayerKernels::norm(int64_t rows) const {
  MemoryOpShape s;
  s.kind = c_.model.norm == models::NormKind::rms_norm ? MemoryOpKind::rms_norm
                                                        : MemoryOpKind::layer_norm;
  s.rows = rows;
  s.cols = h_;
  s.elements = rows * h_;
  s.flops_per_element = kNormFlops;
  s.dtype = act_;
  return s;
}

MemoryOpShape LayerKernels::elementwise(int64_t elements, int inputs, double flops) const {
  MemoryOpShape s;
  s.kind = MemoryOpKind::elementwise;
  s.elements = std::max<int64_t>(elements, 1);
  s.inputs = inputs;
  s.flops_per_element = flops;
  s.dtype = act_;
  return s;
}

int64_t LayerKernels::pipeline_message_bytes() const {
  return tokens_ * h_ * static_cast<int64_t>(gcsim::models::gpu::dtype_bytes(act_)) / t_;
}

uint32_t LayerKernels::pipeline_gather(OpEmitter& e, const std::string& p, uint32_t recv) const {
  if (sp_ || t_ == 1) return kNoOp;
  const int64_t bytes = tokens_ * h_ * static_cast<int64_t>(gcsim::models::gpu::dtype_bytes(act_));
  return e.collective(p + " gather", CollectiveKind::all_gather, bytes, kSlotTp + e.lane(),
                      e.streams().tp[e.lane()], OpCategory::pp, {recv});
}

void LayerKernels::tp_forward_gather(OpEmitter& e, const std::string& p) const {
  if (!sp_) return;
  e.collective(p, CollectiveKind::all_gather, tokens_ * h_ * 2, kSlotTp + e.lane(),
               e.streams().tp[e.lane()], OpCategory::tp);
}

void LayerKernels::tp_forward_reduce(OpEmitter& e, const std::string& p) const {
  if (t_ == 1) return;
  e.collective(p, sp_ ? CollectiveKind::reduce_scatter : CollectiveKind::all_reduce,
               tokens_ * h_ * 2, kSlotTp + e.lane(), e.streams().tp[e.lane()], OpCategory::tp);
}

uint32_t LayerKernels::input_grad_collective(OpEmitter& e, const std::string& p) const {
  if (t_ == 1) return kNoOp;
  return e.collective(p, sp_ ? CollectiveKind::reduce_scatter : CollectiveKind::all_reduce,
                      tokens_ * h_ * 2, kSlotTp + e.lane(), e.streams().tp[e.lane()],
                      OpCategory::tp, {}, false);
}

uint32_t LayerKernels::sp_regather(OpEmitter& e, const std::string& p) const {
  if (!sp_) return kNoOp;
  return e.collective(p, CollectiveKind::all_gather, tokens_ * h_ * 2, kSlotTp + e.lane(),
                      e.streams().tp[e.lane()], OpCategory::tp, {}, false);
}

void LayerKernels::add_weight(OpEmitter& e, DeferredWeights& w, bool defer,
                              const std::string& name, GemmShape shape,
                              std::vector<uint32_t> deps, uint32_t* last) const {
  deps.erase(std::remove(deps.begin(), deps.end(), kNoOp), deps.end());
  if (defer) {
    w.gemms.emplace_back(name, shape);
    w.deps.insert(w.deps.end(), deps.begin(), deps.end());
    return;
  }
  *last = e.kernel(name, shape, OpCategory::compute, std::move(deps));
}

// ---------------------------------------------------------------------------
// Embedding and head

void LayerKernels::embedding_forward(OpEmitter& e, const std::string& p) const {
  // Vocabulary-parallel lookup: each TP rank fills the rows it owns, then
  // the partial embeddings are summed (reduce-scattered with SP).
  e.kernel(p + " embedding", elementwise(tokens_ * h_, 1, 0), OpCategory::compute);
  if (c_.model.position == models::PositionKind::learned) {
    e.kernel(p + " position add", elementwise(tokens_ * h_, 2, 1), OpCategory::compute);
  }
  tp_forward_reduce(e, p + " embedding reduce");
  if (dropout_) e.kernel(p + " embedding dropout", elementwise(norm_rows_ * h_, 1, 2), OpCategory::compute);
}

void LayerKernels::head_forward(OpEmitter& e, const std::string& p) const {
  e.kernel(p + " final norm", norm(norm_rows_), OpCategory::compute);
  tp_forward_gather(e, p + " head gather");
  const int64_t vocab = ceil_div(c_.model.vocab, t_);
  e.kernel(p + " logits", gemm(tokens_, vocab, h_, false), OpCategory::compute);
  MemoryOpShape ce;
  ce.kind = MemoryOpKind::softmax;
  ce.rows = tokens_;
  ce.cols = vocab;
  ce.elements = tokens_ * vocab;
  ce.flops_per_element = 5;
  ce.dtype = act_;
  e.kernel(p + " cross entropy", ce, OpCategory::compute);
  if (t_ > 1) {
    // Vocabulary-parallel cross entropy: max, sum of exponentials and the
    // target logit, one fp32 value per token each (Megatron-LM).
    for (const char* what : {" ce max", " ce sum", " ce target"}) {
      e.collective(p + what, CollectiveKind::all_reduce, tokens_ * 4, kSlotTp + e.lane(),
                   e.streams().tp[e.lane()], OpCategory::tp);
    }
  }
}

uint32_t LayerKernels::head_backward(OpEmitter& e, const std::string& p, bool defer,
                                     std::vector<DeferredWeights>& deferred) const {
  DeferredWeights w;
  w.layer = kHeadLayer;
  uint32_t last = kNoOp;
  const int64_t vocab = ceil_div(c_.model.vocab, t_);
  e.kernel(p + " cross entropy bwd", elementwise(tokens_ * vocab, 1, 2), OpCategory::compute);
  const uint32_t gathered = sp_regather(e, p + " head regather");
  e.kernel(p + " logits dgrad", gemm(tokens_, h_, vocab, false), OpCategory::compute);
  const uint32_t coll = input_grad_collective(e, p + " head grad reduce");
  add_weight(e, w, defer, p + " logits wgrad", gemm(h_, vocab, tokens_, false), {gathered}, &last);
  e.kernel(p + " final norm bwd", elementwise(norm_rows_ * h_, 2, kNormFlops), OpCategory::compute,
           {coll});
  if (defer) deferred.push_back(std::move(w));
  return last;
}

uint32_t LayerKernels::embedding_backward(OpEmitter& e, const std::string& p, bool,
                                          std::vector<DeferredWeights>&) const {
  if (dropout_) {
    e.kernel(p + " embedding dropout bwd", elementwise(norm_rows_ * h_, 2, 1), OpCategory::compute);
  }
  tp_forward_gather(e, p + " embedding grad gather");
  // Scatter-add of the token gradients into the embedding's rows.
  return e.kernel(p + " embedding wgrad", elementwise(tokens_ * h_, 2, 1), OpCategory::compute);
}

uint32_t LayerKernels::emit_weights(OpEmitter& e, const DeferredWeights& w) const {
  uint32_t last = kNoOp;
  for (size_t i = 0; i < w.gemms.size(); ++i) {
    last = e.kernel(w.gemms[i].first, w.gemms[i].second, OpCategory::compute,
                    i == 0 ? w.deps : std::vector<uint32_t>{});
  }
  return last;
}

// ---------------------------------------------------------------------------
// Attention

void LayerKernels::attention_forward(OpEmitter& e, const std::string& p, bool) const {
  const int lane = e.lane();
  if (flash_) {
    AttentionShape a;
    a.batch = b_;
    a.heads = heads_;
    a.kv_heads = kv_heads_;
    a.head_dim = head_dim_;
    a.dtype = act_;
    a.q_len = sq_;
    a.kv_len = sq_;
    a.causal = true;
    if (cp_ == 1) {
      e.kernel(p + " attention", a, OpCategory::compute);
      return;
    }
    // Ring attention over load-balanced (zig-zag) chunks: the local causal
    // block, then cp - 1 blocks arriving from the previous rank, each half
    // masked, while the current one is passed on.
    const int64_t kv_bytes = tokens_ * (k_width_ + v_width_) * 2;
    const uint32_t qkv = e.cursor();
    e.kernel(p + " attention 0", a, OpCategory::compute);
    uint32_t prev = qkv;
    for (int64_t i = 1; i < cp_; ++i) {
      const std::string step = std::to_string(i);
      e.send(p + " cp send " + step, kPeerCpNext, e.streams().cp_send[lane], kv_bytes,
             OpCategory::cp, {prev});
      const uint32_t r = e.recv(p + " cp recv " + step, kPeerCpPrev, e.streams().cp_recv[lane],
                                kv_bytes, OpCategory::cp, {});
      AttentionShape half = a;
      half.causal = false;
      half.kv_len = sq_ / 2;
      e.kernel(p + " attention " + step, half, OpCategory::compute, {r});
      e.kernel(p + " attention merge " + step, elementwise(tokens_ * out_width_, 2, 4),
               OpCategory::compute);
      prev = r;
    }
    return;
  }
  // Megatron-LM's core attention: QK^T, fused scale-mask-softmax, dropout,
  // then the weighted sum of V, over the full s x s scores.
  const int64_t batch = b_ * heads_;
  e.kernel(p + " qk", gemm(sq_, s_, head_dim_, false, batch), OpCategory::compute);
  MemoryOpShape sm;
  sm.kind = MemoryOpKind::softmax;
  sm.rows = batch * sq_;
  sm.cols = s_;
  sm.elements = sm.rows * sm.cols;
  sm.flops_per_element = 5;
  sm.dtype = act_;
  e.kernel(p + " softmax", sm, OpCategory::compute);
  if (dropout_) {
    e.kernel(p + " attention dropout", elementwise(batch * sq_ * s_, 1, 2), OpCategory::compute);
  }
  e.kernel(p + " pv", gemm(sq_, head_dim_, s_, false, batch), OpCategory::compute);
}

void LayerKernels::attention_backward(OpEmitter& e, const std::string& p) const {
  const int lane = e.lane();
  if (flash_) {
    AttentionShape a;
    a.batch = b_;
    a.heads = heads_;
    a.kv_heads = kv_heads_;
    a.head_dim = head_dim_;
    a.dtype = act_;
    a.q_len = sq_;
    a.kv_len = sq_;
    a.causal = true;
    a.backward = true;
    if (cp_ == 1) {
      e.kernel(p + " attention bwd", a, OpCategory::compute);
      return;
    }
    // Blocks come round again with their key/value gradients (twice the
    // bytes); the accumulated gradients finally go home.
    const int64_t kv_bytes = tokens_ * (k_width_ + v_width_) * 2;
    const uint32_t start = e.cursor();
    e.kernel(p + " attention bwd 0", a, OpCategory::compute);
    uint32_t prev = start;
    for (int64_t i = 1; i < cp_; ++i) {
      const std::string step = std::to_string(i);
      e.send(p + " cp bwd send " + step, kPeerCpNext, e.streams().cp_send[lane], 2 * kv_bytes,
             OpCategory::cp, {prev});
      const uint32_t r = e.recv(p + " cp bwd recv " + step, kPeerCpPrev,
                                e.streams().cp_recv[lane], 2 * kv_bytes, OpCategory::cp, {});
      AttentionShape half = a;
      half.causal = false;
      half.kv_len = sq_ / 2;
      e.kernel(p + " attention bwd " + step, half, OpCategory::compute, {r});
      prev = r;
    }
    const uint32_t last = e.cursor();
    e.send(p + " cp dkv send", kPeerCpNext, e.streams().cp_send[lane], kv_bytes, OpCategory::cp,
           {last});
    const uint32_t home = e.recv(p + " cp dkv recv", kPeerCpPrev, e.streams().cp_recv[lane],
                                 kv_bytes, OpCategory::cp, {});
    e.kernel(p + " dkv add", elementwise(tokens_ * (k_width_ + v_width_), 2, 1),
             OpCategory::compute, {home});
    return;
  }
  const int64_t batch = b_ * heads_;
  e.kernel(p + " pv dgrad", gemm(sq_, s_, head_dim_, false, batch), OpCategory::compute);
  e.kernel(p + " pv vgrad", gemm(s_, head_dim_, sq_, false, batch), OpCategory::compute);
  if (dropout_) {
    e.kernel(p + " attention dropout bwd", elementwise(batch * sq_ * s_, 2, 1), OpCategory::compute);
  }
  e.kernel(p + " softmax bwd", elementwise(batch * sq_ * s_, 2, 3), OpCategory::compute);
  e.kernel(p + " qk qgrad", gemm(sq_, head_dim_, s_, false, batch), OpCategory::compute);
  e.kernel(p + " qk kgrad", gemm(s_, head_dim_, sq_, false, batch), OpCategory::compute);
}

// ---------------------------------------------------------------------------
// MLP and experts

void LayerKernels::mlp_forward(OpEmitter& e, int layer, const std::string& p) const {
  const auto& m = c_.model;
  const bool swiglu = m.mlp == MlpKind::swiglu;
  const int fc1_outputs = swiglu ? 2 : 1;
  auto activation = [&](const std::string& name, int64_t elements) {
    e.kernel(name, swiglu ? elementwise(elements, 2, kSwigluFlops) : elementwise(elements, 1, kGeluFlops),
             OpCategory::compute);
  };
  if (!m.is_moe_layer(layer)) {
    const int64_t f = m.ffn_hidden / t_;
    e.kernel(p + " fc1", gemm(tokens_, fc1_outputs * f, h_), OpCategory::compute);
    activation(p + (swiglu ? " swiglu" : " gelu"), tokens_ * f);
    e.kernel(p + " fc2", gemm(tokens_, h_, f), OpCategory::compute);
    return;
  }
  const auto& moe = m.moe;
  const int64_t local_experts = moe.experts / c_.parallel.ep;
  const int64_t f = moe.expert_ffn_hidden / t_;
  const double routed = static_cast<double>(tokens_) * moe.top_k * expert_load_;
  const int64_t per_expert = std::max<int64_t>(
      1, static_cast<int64_t>(std::ceil(routed / static_cast<double>(local_experts))));
  const int lane = e.lane();
  e.kernel(p + " router", gemm(tokens_, moe.experts, h_, false), OpCategory::compute);
  MemoryOpShape gate;
  gate.kind = MemoryOpKind::softmax;
  gate.rows = tokens_;
  gate.cols = moe.experts;
  gate.elements = tokens_ * moe.experts;
  gate.flops_per_element = 5;
  gate.dtype = act_;
  e.kernel(p + " router softmax", gate, OpCategory::compute);
  e.kernel(p + " permute", elementwise(tokens_ * moe.top_k * h_, 1, 0), OpCategory::compute);
  const uint32_t dispatch =
      e.collective(p + " dispatch", CollectiveKind::all_to_all, dispatch_bytes(true),
                   kSlotEp + lane, e.streams().ep[lane], OpCategory::ep, {}, false);
  // Shared experts need no routing: they run while the dispatch is in flight.
  if (moe.shared_experts > 0) {
    const int64_t fs = f * moe.shared_experts;
    e.kernel(p + " shared fc1", gemm(tokens_, fc1_outputs * fs, h_), OpCategory::compute);
    activation(p + " shared act", tokens_ * fs);
    e.kernel(p + " shared fc2", gemm(tokens_, h_, fs), OpCategory::compute);
  }
  e.kernel(p + " expert fc1", gemm(per_expert, fc1_outputs * f, h_, true, local_experts),
           OpCategory::compute, {dispatch});
  activation(p + " expert act", per_expert * local_experts * f);
  e.kernel(p + " expert fc2", gemm(per_expert, h_, f, true, local_experts), OpCategory::compute);
  e.collective(p + " combine", CollectiveKind::all_to_all, dispatch_bytes(false), kSlotEp + lane,
               e.streams().ep[lane], OpCategory::ep);
  e.kernel(p + " unpermute", elementwise(tokens_ * moe.top_k * h_, 2, 2), OpCategory::compute);
}

int64_t LayerKernels::dispatch_bytes(bool dispatch) const {
  const auto& moe = c_.model.moe;
  // Node-limited routing sends a token across the scale-out network once
  // per destination node (at most max_route_nodes), NVLink fanning it out
  // inside the node (DeepSeek-V3, 3.2.2); otherwise once per expert.
  int copies = moe.top_k;
  if (ep_spans_nodes_ && moe.max_route_nodes > 0) copies = std::min(copies, moe.max_route_nodes);
  // DeepSeek-V3 dispatches in FP8 and combines in BF16.
  const double bytes =
      dispatch && c_.precision == Precision::fp8 ? 1.0 : gcsim::models::gpu::dtype_bytes(act_);
  return static_cast<int64_t>(std::ceil(static_cast<double>(tokens_) * copies *
                                        static_cast<double>(h_) * bytes * max_expert_load_));
}

uint32_t LayerKernels::mlp_backward(OpEmitter& e, int layer, const std::string& p, bool defer,
                                    DeferredWeights& w) const {
  const auto& m = c_.model;
  const bool swiglu = m.mlp == MlpKind::swiglu;
  const int fc1_outputs = swiglu ? 2 : 1;
  const int act_inputs = swiglu ? 3 : 2;
  uint32_t last = kNoOp;
  if (!m.is_moe_layer(layer)) {
    const int64_t f = m.ffn_hidden / t_;
    e.kernel(p + " fc2 dgrad", gemm(tokens_, f, h_), OpCategory::compute);
    add_weight(e, w, defer, p + " fc2 wgrad", gemm(f, h_, tokens_), {}, &last);
    e.kernel(p + " act bwd", elementwise(tokens_ * f, act_inputs, kGeluFlops), OpCategory::compute);
    const uint32_t gathered = sp_regather(e, p + " mlp regather");
    e.kernel(p + " fc1 dgrad", gemm(tokens_, h_, fc1_outputs * f), OpCategory::compute);
    const uint32_t coll = input_grad_collective(e, p + " mlp grad reduce");
    add_weight(e, w, defer, p + " fc1 wgrad", gemm(h_, fc1_outputs * f, tokens_), {gathered},
               &last);
    e.kernel(p + " norm2 bwd", elementwise(norm_rows_ * h_, 2, kNormFlops), OpCategory::compute,
             {coll});
    return last;
  }
  const auto& moe = m.moe;
  const int64_t local_experts = moe.experts / c_.parallel.ep;
  const int64_t f = moe.expert_ffn_hidden / t_;
  const double routed = static_cast<double>(tokens_) * moe.top_k * expert_load_;
  const int64_t per_expert = std::max<int64_t>(
      1, static_cast<int64_t>(std::ceil(routed / static_cast<double>(local_experts))));
  const int lane = e.lane();
  e.kernel(p + " unpermute bwd", elementwise(tokens_ * moe.top_k * h_, 2, 2), OpCategory::compute);
  e.collective(p + " combine bwd", CollectiveKind::all_to_all, dispatch_bytes(false),
               kSlotEp + lane, e.streams().ep[lane], OpCategory::ep);
  e.kernel(p + " expert fc2 dgrad", gemm(per_expert, f, h_, true, local_experts), OpCategory::compute);
  add_weight(e, w, defer, p + " expert fc2 wgrad", gemm(f, h_, per_expert, true, local_experts),
             {}, &last);
  e.kernel(p + " expert act bwd", elementwise(per_expert * local_experts * f, act_inputs, kGeluFlops),
           OpCategory::compute);
  e.kernel(p + " expert fc1 dgrad", gemm(per_expert, h_, fc1_outputs * f, true, local_experts),
           OpCategory::compute);
  add_weight(e, w, defer, p + " expert fc1 wgrad",
             gemm(h_, fc1_outputs * f, per_expert, true, local_experts), {}, &last);
  const uint32_t dispatch =
      e.collective(p + " dispatch bwd", CollectiveKind::all_to_all, dispatch_bytes(true),
                   kSlotEp + lane, e.streams().ep[lane], OpCategory::ep, {}, false);
  if (moe.shared_experts > 0) {
    const int64_t fs = f * moe.shared_experts;
    e.kernel(p + " shared fc2 dgrad", gemm(tokens_, fs, h_), OpCategory::compute);
    add_weight(e, w, defer, p + " shared fc2 wgrad", gemm(fs, h_, tokens_), {}, &last);
    e.kernel(p + " shared act bwd", elementwise(tokens_ * fs, act_inputs, kGeluFlops),
             OpCategory::compute);
    e.kernel(p + " shared fc1 dgrad", gemm(tokens_, h_, fc1_outputs * fs), OpCategory::compute);
    add_weight(e, w, defer, p + " shared fc1 wgrad", gemm(h_, fc1_outputs * fs, tokens_), {},
               &last);
  }
  e.kernel(p + " permute bwd", elementwise(tokens_ * moe.top_k * h_, 1, 0), OpCategory::compute,
           {dispatch});
  e.kernel(p + " router softmax bwd", elementwise(tokens_ * moe.experts, 2, 3), OpCategory::compute);
  const uint32_t gathered = sp_regather(e, p + " router regather");
  e.kernel(p + " router dgrad", gemm(tokens_, h_, moe.experts, false), OpCategory::compute);
  const uint32_t coll = input_grad_collective(e, p + " moe grad reduce");
  add_weight(e, w, defer, p + " router wgrad", gemm(h_, moe.experts, tokens_, false), {gathered},
             &last);
  e.kernel(p + " norm2 bwd", elementwise(norm_rows_ * h_, 2, kNormFlops), OpCategory::compute,
           {coll});
  return last;
}

// ---------------------------------------------------------------------------
// A whole layer

void LayerKernels::layer_forward(OpEmitter& e, int layer, const std::string& prefix) const {
  const auto& m = c_.model;
  const std::string p = prefix + " L" + std::to_string(layer);
  e.kernel(p + " norm1", norm(norm_rows_), OpCategory::compute);
  tp_forward_gather(e, p + " attn gather");
  if (m.attention == AttentionKind::mla) {
    const auto& a = m.mla;
    if (a.q_lora_rank > 0) {
      e.kernel(p + " q down", gemm(tokens_, a.q_lora_rank, h_), OpCategory::compute);
      MemoryOpShape qn = norm(tokens_);
      qn.cols = a.q_lora_rank;
      qn.elements = tokens_ * a.q_lora_rank;
      e.kernel(p + " q norm", qn, OpCategory::compute);
      e.kernel(p + " q up", gemm(tokens_, q_width_, a.q_lora_rank), OpCategory::compute);
    } else {
      e.kernel(p + " q proj", gemm(tokens_, q_width_, h_), OpCategory::compute);
    }
    e.kernel(p + " kv down", gemm(tokens_, a.kv_lora_rank + a.qk_rope_head_dim, h_),
             OpCategory::compute);
    MemoryOpShape kvn = norm(tokens_);
    kvn.cols = a.kv_lora_rank;
    kvn.elements = tokens_ * a.kv_lora_rank;
    e.kernel(p + " kv norm", kvn, OpCategory::compute);
    e.kernel(p + " kv up", gemm(tokens_, heads_ * (a.qk_nope_head_dim + a.v_head_dim), a.kv_lora_rank),
             OpCategory::compute);
    e.kernel(p + " rope", elementwise(tokens_ * (heads_ + 1) * a.qk_rope_head_dim, 2, 3),
             OpCategory::compute);
  } else {
    e.kernel(p + " qkv", gemm(tokens_, q_width_ + k_width_ + v_width_, h_), OpCategory::compute);
    if (rotary_) {
      e.kernel(p + " rope", elementwise(tokens_ * (q_width_ + k_width_), 2, 3), OpCategory::compute);
    }
  }
  attention_forward(e, p, false);
  e.kernel(p + " proj", gemm(tokens_, h_, out_width_), OpCategory::compute);
  tp_forward_reduce(e, p + " attn reduce");
  e.kernel(p + (dropout_ ? " dropout add1" : " residual1"),
           elementwise(norm_rows_ * h_, 2, dropout_ ? 3 : 1), OpCategory::compute);
  e.kernel(p + " norm2", norm(norm_rows_), OpCategory::compute);
  tp_forward_gather(e, p + " mlp gather");
  mlp_forward(e, layer, p);
  tp_forward_reduce(e, p + " mlp reduce");
  e.kernel(p + (dropout_ ? " dropout add2" : " residual2"),
           elementwise(norm_rows_ * h_, 2, dropout_ ? 3 : 1), OpCategory::compute);
}

uint32_t LayerKernels::layer_backward(OpEmitter& e, int layer, const std::string& prefix,
                                      bool defer, std::vector<DeferredWeights>& deferred) const {
  const auto& m = c_.model;
  const std::string p = prefix + " L" + std::to_string(layer);
  DeferredWeights w;
  w.layer = layer;
  uint32_t last = kNoOp;
  if (c_.recompute == Recompute::full) layer_forward(e, layer, "R" + prefix.substr(1));

  // MLP block, last op first.
  if (dropout_) e.kernel(p + " dropout add2 bwd", elementwise(norm_rows_ * h_, 2, 1), OpCategory::compute);
  tp_forward_gather(e, p + " mlp grad gather");
  uint32_t l = mlp_backward(e, layer, p, defer, w);
  if (l != kNoOp) last = l;
  e.kernel(p + " residual2 bwd", elementwise(norm_rows_ * h_, 2, 1), OpCategory::compute);

  // Attention block.
  if (dropout_) e.kernel(p + " dropout add1 bwd", elementwise(norm_rows_ * h_, 2, 1), OpCategory::compute);
  tp_forward_gather(e, p + " attn grad gather");
  e.kernel(p + " proj dgrad", gemm(tokens_, out_width_, h_), OpCategory::compute);
  add_weight(e, w, defer, p + " proj wgrad", gemm(out_width_, h_, tokens_), {}, &last);
  if (c_.recompute == Recompute::selective && !flash_) {
    attention_forward(e, "R" + p.substr(1), true);  // re-run the core attention only
  }
  attention_backward(e, p);
  const uint32_t gathered = sp_regather(e, p + " attn regather");
  uint32_t coll = kNoOp;
  if (m.attention == AttentionKind::mla) {
    const auto& a = m.mla;
    if (rotary_) e.kernel(p + " rope bwd", elementwise(tokens_ * (heads_ + 1) * a.qk_rope_head_dim, 2, 3), OpCategory::compute);
    const int64_t up = heads_ * (a.qk_nope_head_dim + a.v_head_dim);
    e.kernel(p + " kv up dgrad", gemm(tokens_, a.kv_lora_rank, up), OpCategory::compute);
    add_weight(e, w, defer, p + " kv up wgrad", gemm(a.kv_lora_rank, up, tokens_), {}, &last);
    e.kernel(p + " kv norm bwd", elementwise(tokens_ * a.kv_lora_rank, 2, kNormFlops), OpCategory::compute);
    e.kernel(p + " kv down dgrad", gemm(tokens_, h_, a.kv_lora_rank + a.qk_rope_head_dim),
             OpCategory::compute);
    add_weight(e, w, defer, p + " kv down wgrad",
               gemm(h_, a.kv_lora_rank + a.qk_rope_head_dim, tokens_), {gathered}, &last);
    if (a.q_lora_rank > 0) {
      e.kernel(p + " q up dgrad", gemm(tokens_, a.q_lora_rank, q_width_), OpCategory::compute);
      add_weight(e, w, defer, p + " q up wgrad", gemm(a.q_lora_rank, q_width_, tokens_), {}, &last);
      e.kernel(p + " q norm bwd", elementwise(tokens_ * a.q_lora_rank, 2, kNormFlops), OpCategory::compute);
      e.kernel(p + " q down dgrad", gemm(tokens_, h_, a.q_lora_rank), OpCategory::compute);
      coll = input_grad_collective(e, p + " attn grad reduce");
      add_weight(e, w, defer, p + " q down wgrad", gemm(h_, a.q_lora_rank, tokens_), {gathered},
                 &last);
    } else {
      e.kernel(p + " q proj dgrad", gemm(tokens_, h_, q_width_), OpCategory::compute);
      coll = input_grad_collective(e, p + " attn grad reduce");
      add_weight(e, w, defer, p + " q proj wgrad", gemm(h_, q_width_, tokens_), {gathered}, &last);
    }
  } else {
    if (rotary_) {
      e.kernel(p + " rope bwd", elementwise(tokens_ * (q_width_ + k_width_), 2, 3), OpCategory::compute);
    }
    const int64_t qkv = q_width_ + k_width_ + v_width_;
    e.kernel(p + " qkv dgrad", gemm(tokens_, h_, qkv), OpCategory::compute);
    coll = input_grad_collective(e, p + " attn grad reduce");
    add_weight(e, w, defer, p + " qkv wgrad", gemm(h_, qkv, tokens_), {gathered}, &last);
  }
  e.kernel(p + " norm1 bwd", elementwise(norm_rows_ * h_, 2, kNormFlops), OpCategory::compute,
           coll == kNoOp ? std::vector<uint32_t>{} : std::vector<uint32_t>{coll});
  e.kernel(p + " residual1 bwd", elementwise(norm_rows_ * h_, 2, 1), OpCategory::compute);
  if (defer) {
    deferred.push_back(std::move(w));
    return kNoOp;
  }
  return last;
}

}  // namespace gcsim::workloads::training
