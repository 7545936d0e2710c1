#include "workloads/training/layer_kernels.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "workloads/models/model_formulas.h"

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

LayerKernels::LayerKernels(const TrainingConfig& c, const EpRouting* ep, int ep_index)
    : c_(c), fw_(c.framework, c.framework_traits), ep_(ep), ep_index_(ep_index) {
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
  mla_ = m.attention == AttentionKind::mla;
  if (mla_) {
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

MemoryOpShape LayerKernels::norm(int64_t rows, int64_t cols) const {
  MemoryOpShape s;
  s.kind = c_.model.norm == models::NormKind::rms_norm ? MemoryOpKind::rms_norm
                                                        : MemoryOpKind::layer_norm;
  s.rows = rows;
  s.cols = cols;
  s.elements = rows * cols;
  s.flops_per_element = kNormFlops;
  s.dtype = act_;
  return s;
}

MemoryOpShape LayerKernels::norm_backward(int64_t elements) const {
  return elementwise(elements, 2, kNormFlops);
}

MemoryOpShape LayerKernels::softmax(int64_t rows, int64_t cols) const {
  MemoryOpShape s;
  s.kind = MemoryOpKind::softmax;
  s.rows = rows;
  s.cols = cols;
  s.elements = rows * cols;
  s.flops_per_element = 5;
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

// GELU reads its input; SwiGLU the gate and the up projection. Backward
// reads the output gradient as well.
MemoryOpShape LayerKernels::activation(int64_t elements, bool backward) const {
  const bool swiglu = c_.model.mlp == MlpKind::swiglu;
  if (backward) return elementwise(elements, swiglu ? 3 : 2, kGeluFlops);
  return swiglu ? elementwise(elements, 2, kSwigluFlops) : elementwise(elements, 1, kGeluFlops);
}

// Rotary embedding of the queries and keys (MLA: its rope part, the key's
// shared by the heads).
MemoryOpShape LayerKernels::rope() const {
  if (mla_) return elementwise(tokens_ * (heads_ + 1) * c_.model.mla.qk_rope_head_dim, 2, 3);
  return elementwise(tokens_ * (q_width_ + k_width_), 2, 3);
}

int64_t LayerKernels::pipeline_message_bytes() const {
  const double element = fw_.residual_bytes() > 0 ? fw_.residual_bytes()
                                                  : gcsim::models::gpu::dtype_bytes(act_);
  const int64_t split = sp_ || fw_.pipeline_scatter_gather() ? t_ : 1;  // SP: split already
  return tokens_ * h_ * static_cast<int64_t>(element) / split;
}

uint32_t LayerKernels::ddp_bucket_copy(OpEmitter& e, const std::string& site, double params,
                                       uint32_t after) const {
  return framework_passes(e, site, fw_.ddp_bucket_copy(std::llround(params), c_.optimizer.grad_bytes),
                          {after});
}

uint32_t LayerKernels::ddp_copy_back(OpEmitter& e, const std::string& site, double params,
                                     uint32_t after) const {
  return framework_passes(e, site, fw_.ddp_copy_back(std::llround(params), c_.optimizer.grad_bytes),
                          {after});
}

uint32_t LayerKernels::pipeline_gather(OpEmitter& e, const std::string& p, uint32_t recv) const {
  if (sp_ || t_ == 1 || !fw_.pipeline_scatter_gather()) return kNoOp;
  const int64_t bytes = tokens_ * h_ * static_cast<int64_t>(gcsim::models::gpu::dtype_bytes(act_));
  return e.collective(p + " gather", CollectiveKind::all_gather, bytes, kSlotTp + e.lane(),
                      e.streams().tp[e.lane()], OpCategory::pp, {recv});
}

uint32_t LayerKernels::tp_collective(OpEmitter& e, const std::string& name, CollectiveKind kind,
                                     int64_t bytes, bool chain) const {
  return e.collective(name, kind, bytes, kSlotTp + e.lane(), e.streams().tp[e.lane()],
                      OpCategory::tp, {}, chain);
}

uint32_t LayerKernels::ep_all_to_all(OpEmitter& e, const std::string& name, int layer,
                                     EpExchange x, bool chain, std::vector<uint32_t> extra) const {
  if (ep_ == nullptr) throw std::logic_error("MoE layer without EP routing");
  // Lane 1's communicator lists the EP group backwards (training_generator.cpp).
  const auto& legs = ep_->legs(layer, micro_, x, e.lane() == 1);
  const auto names = ep_->leg_names(x);
  uint32_t last = kNoOp;
  for (size_t i = 0; i < legs.size(); ++i) {
    // Legs after the first follow it on the same stream.
    last = e.all_to_all_v(name + names[i], legs[i].bytes, legs[i].largest, kSlotEp + e.lane(),
                          e.streams().ep[e.lane()], OpCategory::ep,
                          i == 0 ? extra : std::vector<uint32_t>{}, chain);
  }
  return last;
}

void LayerKernels::tp_forward_gather(OpEmitter& e, const std::string& p) const {
  if (!sp_) return;
  tp_collective(e, p, CollectiveKind::all_gather, tokens_ * h_ * 2);
}

void LayerKernels::tp_forward_reduce(OpEmitter& e, const std::string& p, bool fp32_embedding) const {
  if (t_ == 1) return;
  // Plain PyTorch's nn.Embedding over fp32 weights gives fp32 partial sums.
  const int64_t element = fp32_embedding && !fw_.fused() ? 4 : 2;
  tp_collective(e, p, sp_ ? CollectiveKind::reduce_scatter : CollectiveKind::all_reduce,
                tokens_ * h_ * element);
}

uint32_t LayerKernels::input_grad_collective(OpEmitter& e, const std::string& p) const {
  if (t_ == 1) return kNoOp;
  const CollectiveKind kind = sp_ ? CollectiveKind::reduce_scatter : CollectiveKind::all_reduce;
  if (fw_.fused()) return tp_collective(e, p, kind, tokens_ * h_ * 2, false);
  // Plain PyTorch: the gradient of the fp32 norm output (the region's copy
  // sits before autocast's cast), reduced in the autograd node after the
  // GEMMs, which the compute stream waits for.
  return tp_collective(e, p, kind, tokens_ * h_ * static_cast<int64_t>(fw_.residual_bytes()), true);
}

uint32_t LayerKernels::sp_regather(OpEmitter& e, const std::string& p) const {
  if (!sp_) return kNoOp;
  return tp_collective(e, p, CollectiveKind::all_gather, tokens_ * h_ * 2, false);
}

uint32_t LayerKernels::framework_passes(OpEmitter& e, const std::string& site,
                                        const std::vector<FrameworkPass>& passes,
                                        std::vector<uint32_t> deps) const {
  uint32_t last = kNoOp;
  for (const FrameworkPass& pass : passes) {
    last = e.kernel(site + pass.name, fw_.shape(pass), OpCategory::compute, std::move(deps));
    deps.clear();
  }
  return last;
}

void LayerKernels::norm_forward_site(OpEmitter& e, const std::string& site) const {
  if (framework_passes(e, site, fw_.norm_forward(norm_rows_, h_)) == kNoOp) {
    e.kernel(site, norm(norm_rows_), OpCategory::compute);
  }
  framework_passes(e, site, fw_.tp_piece_forward(norm_rows_ * h_, t_));
}

void LayerKernels::norm_backward_site(OpEmitter& e, const std::string& site, uint32_t after) const {
  if (framework_passes(e, site, fw_.norm_backward(norm_rows_, h_), {after}) == kNoOp) {
    e.kernel(site + " bwd", norm_backward(norm_rows_ * h_), OpCategory::compute, {after});
  }
  grad_ready(norm_params(), false, true);
  framework_passes(e, site, fw_.tp_piece_backward(norm_rows_ * h_, t_));
}

void LayerKernels::residual_forward_site(OpEmitter& e, const std::string& p, int which) const {
  const std::string n = std::to_string(which);
  if (!dropout_ &&
      framework_passes(e, p + " residual" + n, fw_.residual_forward(norm_rows_ * h_, which == 1)) !=
          kNoOp) {
    return;
  }
  e.kernel(p + (dropout_ ? " dropout add" : " residual") + n,
           elementwise(norm_rows_ * h_, 2, dropout_ ? 3 : 1), OpCategory::compute);
}

void LayerKernels::residual_backward_site(OpEmitter& e, const std::string& name) const {
  if (fw_.fused() || dropout_) {
    e.kernel(name, elementwise(norm_rows_ * h_, 2, 1), OpCategory::compute);
    return;
  }
  framework_passes(e, name, fw_.residual_backward(norm_rows_ * h_));
}

bool LayerKernels::swiglu_passes(OpEmitter& e, const std::string& site, bool backward,
                                 int64_t elements) const {
  if (c_.model.mlp != MlpKind::swiglu) return false;
  const auto passes = backward ? fw_.swiglu_backward(elements) : fw_.swiglu_forward(elements);
  return framework_passes(e, site, passes) != kNoOp;
}

void LayerKernels::add_weight(OpEmitter& e, WeightGrads& g, const std::string& name,
                              GemmShape shape, std::vector<uint32_t> deps) const {
  deps.erase(std::remove(deps.begin(), deps.end(), kNoOp), deps.end());
  if (g.defer) {
    g.w.gemms.emplace_back(name, shape);
    g.w.expert.push_back(g.expert ? 1 : 0);
    g.w.deps.insert(g.w.deps.end(), deps.begin(), deps.end());
    return;
  }
  g.last = e.kernel(name, shape, OpCategory::compute, std::move(deps));
}

double LayerKernels::norm_params() const { return models::count_params(c_.model).final_norm; }

void LayerKernels::grad_ready(double params, bool expert, bool closes_region) const {
  if (!grad_hook_) return;
  const bool compiled = fw_.framework() == Framework::torch_compile;
  grad_hook_({params, expert, compiled && !(t_ > 1 && closes_region)});
}

// ---------------------------------------------------------------------------
// Linear layers

LayerKernels::Linear LayerKernels::logits() const {
  Linear l{"logits", tokens_, h_, ceil_div(c_.model.vocab, t_), false};
  l.eager_op = t_ > 1;  // under TP the head and loss stay eager (framework_profile.h)
  return l;
}

LayerKernels::AttentionLinears LayerKernels::attention_linears() const {
  const auto& a = c_.model.mla;
  AttentionLinears l{};
  l.q_down = {"q down", tokens_, h_, a.q_lora_rank};
  l.q_up = {"q up", tokens_, a.q_lora_rank, q_width_};
  l.q_proj = {"q proj", tokens_, h_, q_width_};
  l.kv_down = {"kv down", tokens_, h_, a.kv_lora_rank + a.qk_rope_head_dim};
  l.kv_up = {"kv up", tokens_, a.kv_lora_rank, heads_ * (a.qk_nope_head_dim + a.v_head_dim)};
  l.qkv = {"qkv", tokens_, h_, q_width_ + k_width_ + v_width_};
  l.proj = {"proj", tokens_, out_width_, h_};
  return l;
}

LayerKernels::Mlp LayerKernels::dense_mlp() const {
  const bool swiglu = c_.model.mlp == MlpKind::swiglu;
  const int fc1_outputs = swiglu ? 2 : 1;
  const int64_t f = c_.model.ffn_hidden / t_;
  return {{"fc1", tokens_, h_, fc1_outputs * f},
          {"fc2", tokens_, f, h_},
          tokens_ * f,
          swiglu ? "swiglu" : "gelu",
          "act bwd"};
}

LayerKernels::Moe LayerKernels::moe_linears(int layer) const {
  if (ep_ == nullptr) throw std::logic_error("MoE layer without EP routing");
  const auto& moe = c_.model.moe;
  const int fc1_outputs = c_.model.mlp == MlpKind::swiglu ? 2 : 1;
  const int64_t f = moe.expert_ffn_hidden / t_;
  const int64_t fs = f * moe.shared_experts;
  // Each local expert's real rows (the routing's, as the graph `moe` op
  // runs them); experts with equal rows share one batched GEMM.
  const std::vector<int64_t> rows = ep_->local_rows(layer, micro_, ep_index_);
  const int rank = ep_index_ < 0 ? ep_->hot_rank(layer, micro_) : ep_index_;
  const int first_expert = rank * static_cast<int>(rows.size());
  std::vector<std::pair<int64_t, int64_t>> groups;  // (rows, experts), in expert order
  std::vector<int> first_of_group;
  for (size_t i = 0; i < rows.size(); ++i) {
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& g) { return g.first == rows[i]; });
    if (it != groups.end()) {
      ++it->second;
    } else {
      groups.emplace_back(rows[i], 1);
      first_of_group.push_back(first_expert + static_cast<int>(i));
    }
  }
  Moe x{{"router", tokens_, h_, moe.experts, false}, {}, {}};
  for (size_t k = 0; k < groups.size(); ++k) {
    const auto [m, n] = groups[k];
    if (m == 0) continue;  // an expert with no rows launches nothing
    const std::string prefix = groups.size() == 1 ? "" : " e" + std::to_string(first_of_group[k]);
    x.experts.push_back({prefix,
                         {{"expert fc1", m, h_, fc1_outputs * f, true, n},
                          {"expert fc2", m, f, h_, true, n},
                          m * n * f,
                          "expert act",
                          "expert act bwd"}});
  }
  x.shared = {{"shared fc1", tokens_, h_, fc1_outputs * fs},
              {"shared fc2", tokens_, fs, h_},
              tokens_ * fs,
              "shared act",
              "shared act bwd"};
  return x;
}

uint32_t LayerKernels::linear_forward(OpEmitter& e, const std::string& p, const Linear& l,
                                      std::vector<uint32_t> deps) const {
  // autocast casts the fp32 weight to bf16 each forward (not Megatron).
  framework_passes(e, p + " " + l.name, fw_.weight_cast(l.in * l.out * l.batch, l.eager_op));
  return e.kernel(p + " " + l.name, gemm(l.rows, l.out, l.in, l.low_precision, l.batch),
                  OpCategory::compute, std::move(deps));
}

uint32_t LayerKernels::linear_backward(OpEmitter& e, const std::string& p, const Linear& l,
                                       WeightGrads& g, std::vector<uint32_t> wgrad_deps,
                                       const char* grad_reduce) const {
  e.kernel(p + " " + l.name + " dgrad", gemm(l.rows, l.in, l.out, l.low_precision, l.batch),
           OpCategory::compute);
  // Megatron overlaps the input gradient's TP reduce with the weight
  // gradient GEMM; PyTorch's autograd reduces after both GEMMs.
  const bool overlap = fw_.fused();
  uint32_t coll = grad_reduce && overlap ? input_grad_collective(e, p + grad_reduce) : kNoOp;
  add_weight(e, g, p + " " + l.name + " wgrad",
             gemm(l.in, l.out, l.rows, l.low_precision, l.batch), std::move(wgrad_deps));
  if (!g.defer) {  // the bf16 weight gradient into the fp32 .grad (not Megatron)
    const uint32_t cast = framework_passes(
        e, p + " " + l.name, fw_.weight_grad_cast(l.in * l.out * l.batch, accumulating_, l.eager_op));
    if (cast != kNoOp) g.last = cast;
    grad_ready(static_cast<double>(l.in * l.out * l.batch), g.expert, !g.region_open);
  }
  if (grad_reduce && !overlap) coll = input_grad_collective(e, p + grad_reduce);
  return coll;
}

void LayerKernels::mlp_block_forward(OpEmitter& e, const std::string& p, const Mlp& m,
                                     std::vector<uint32_t> fc1_deps) const {
  linear_forward(e, p, m.fc1, std::move(fc1_deps));
  if (!swiglu_passes(e, p + " " + m.act, false, m.act_elements)) {
    e.kernel(p + " " + m.act, activation(m.act_elements, false), OpCategory::compute);
  }
  linear_forward(e, p, m.fc2);
}

uint32_t LayerKernels::mlp_block_backward(OpEmitter& e, const std::string& p, const Mlp& m,
                                          WeightGrads& g, bool tp_input) const {
  g.region_open = true;  // fc2 and fc1: one compiled piece under TP
  linear_backward(e, p, m.fc2, g);
  g.region_open = false;
  if (!swiglu_passes(e, p + " " + m.act_bwd, true, m.act_elements)) {
    e.kernel(p + " " + m.act_bwd, activation(m.act_elements, true), OpCategory::compute);
  }
  const uint32_t gathered = tp_input ? sp_regather(e, p + " mlp regather") : kNoOp;
  return linear_backward(e, p, m.fc1, g, {gathered}, tp_input ? " mlp grad reduce" : nullptr);
}

// ---------------------------------------------------------------------------
// Embedding and head

void LayerKernels::embedding_forward(OpEmitter& e, const std::string& p) const {
  // Vocabulary-parallel lookup: each TP rank fills the rows it owns, then
  // the partial embeddings are summed (reduce-scattered with SP).
  if (framework_passes(e, p + " embedding", fw_.embedding_forward(tokens_, h_)) == kNoOp) {
    e.kernel(p + " embedding", elementwise(tokens_ * h_, 1, 0), OpCategory::compute);
  }
  if (c_.model.position == models::PositionKind::learned) {
    e.kernel(p + " position add", elementwise(tokens_ * h_, 2, 1), OpCategory::compute);
  }
  tp_forward_reduce(e, p + " embedding reduce", true);
  if (dropout_) e.kernel(p + " embedding dropout", elementwise(norm_rows_ * h_, 1, 2), OpCategory::compute);
}

void LayerKernels::head_forward(OpEmitter& e, const std::string& p) const {
  if (framework_passes(e, p + " final norm", fw_.norm_forward(norm_rows_, h_)) == kNoOp) {
    e.kernel(p + " final norm", norm(norm_rows_), OpCategory::compute);
  }
  // torch.compile under TP: the eager head's autocast casts the compiled
  // norm's fp32 output to bf16 (as at each layer's compiled piece).
  framework_passes(e, p + " final norm", fw_.tp_piece_forward(norm_rows_ * h_, t_));
  tp_forward_gather(e, p + " head gather");
  const Linear l = logits();
  linear_forward(e, p, l);
  if (framework_passes(e, p + " cross entropy", fw_.cross_entropy_forward(tokens_, l.out, t_)) == kNoOp) {
    e.kernel(p + " cross entropy", softmax(tokens_, l.out), OpCategory::compute);
  }
  if (t_ > 1) {
    // Vocabulary-parallel cross entropy: max, sum of exponentials and the
    // target logit, one fp32 value per token each (Megatron-LM).
    for (const char* what : {" ce max", " ce sum", " ce target"}) {
      tp_collective(e, p + what, CollectiveKind::all_reduce, tokens_ * 4);
    }
  }
}

uint32_t LayerKernels::head_backward(OpEmitter& e, const std::string& p, bool defer,
                                     std::vector<DeferredWeights>& deferred) const {
  DeferredWeights w;
  w.layer = kHeadLayer;
  WeightGrads g{w, defer};
  const Linear l = logits();
  if (framework_passes(e, p + " cross entropy", fw_.cross_entropy_backward(tokens_, l.out, t_)) == kNoOp) {
    e.kernel(p + " cross entropy bwd", elementwise(tokens_ * l.out, 1, 2), OpCategory::compute);
  }
  const uint32_t gathered = sp_regather(e, p + " head regather");
  uint32_t coll = linear_backward(e, p, l, g, {gathered}, " head grad reduce");
  // ... and that cast's backward: the head's bf16 input gradient to fp32.
  const uint32_t cast = framework_passes(e, p + " final norm", fw_.tp_head_grad_cast(norm_rows_ * h_, t_), {coll});
  if (cast != kNoOp) coll = cast;
  if (framework_passes(e, p + " final norm", fw_.norm_backward(norm_rows_, h_), {coll}) == kNoOp) {
    e.kernel(p + " final norm bwd", norm_backward(norm_rows_ * h_), OpCategory::compute, {coll});
  }
  grad_ready(norm_params(), false, true);
  if (defer) deferred.push_back(std::move(w));
  return g.last;
}

uint32_t LayerKernels::embedding_backward(OpEmitter& e, const std::string& p, bool,
                                          std::vector<DeferredWeights>&) const {
  if (dropout_) {
    e.kernel(p + " embedding dropout bwd", elementwise(norm_rows_ * h_, 2, 1), OpCategory::compute);
  }
  tp_forward_gather(e, p + " embedding grad gather");
  // Scatter-add of the token gradients into the embedding's rows.
  const uint32_t dense = framework_passes(e, p + " embedding wgrad",
                                          fw_.embedding_backward(tokens_, h_, c_.model.vocab / t_));
  if (dense != kNoOp) return dense;
  return e.kernel(p + " embedding wgrad", elementwise(tokens_ * h_, 2, 1), OpCategory::compute);
}

uint32_t LayerKernels::emit_weights(OpEmitter& e, const DeferredWeights& w) const {
  uint32_t last = kNoOp;
  for (size_t i = 0; i < w.gemms.size(); ++i) {
    const GemmShape& s = w.gemms[i].second;
    last = e.kernel(w.gemms[i].first, s, OpCategory::compute,
                    i == 0 ? w.deps : std::vector<uint32_t>{});
    grad_ready(static_cast<double>(s.m * s.n * s.batch), w.expert[i] != 0, true);
  }
  return last;
}

// ---------------------------------------------------------------------------
// Attention

void LayerKernels::flash_attention(OpEmitter& e, const std::string& p, bool backward) const {
  const std::string pass = backward ? " bwd" : "";
  AttentionShape a;
  a.batch = b_;
  a.heads = heads_;
  a.kv_heads = kv_heads_;
  a.head_dim = head_dim_;
  if (mla_) {  // Q/K and V head dims apart (their mean, head_dim_, gives the same FLOPs)
    a.head_dim = c_.model.mla.qk_nope_head_dim + c_.model.mla.qk_rope_head_dim;
    a.head_dim_v = c_.model.mla.v_head_dim;
  }
  a.family = c_.attention_family;
  a.dtype = act_;
  a.q_len = sq_;
  a.kv_len = sq_;
  a.causal = true;
  a.backward = backward;
  if (cp_ == 1) {
    e.kernel(p + " attention" + pass, a, OpCategory::compute);
    return;
  }
  // Ring attention over load-balanced (zig-zag) chunks: the local causal
  // block, then cp - 1 blocks arriving from the previous rank, each half
  // masked, while the current one is passed on. Backward, the blocks come
  // round again with their key/value gradients (twice the bytes), and the
  // accumulated gradients finally go home.
  const int lane = e.lane();
  const int64_t kv_bytes = tokens_ * (k_width_ + v_width_) * 2;
  const int64_t ring_bytes = backward ? 2 * kv_bytes : kv_bytes;
  const uint32_t first = e.cursor();
  e.kernel(p + " attention" + pass + " 0", a, OpCategory::compute);
  uint32_t prev = first;
  for (int64_t i = 1; i < cp_; ++i) {
    const std::string step = std::to_string(i);
    e.send(p + " cp" + pass + " send " + step, kPeerCpNext, e.streams().cp_send[lane], ring_bytes,
           OpCategory::cp, {prev});
    const uint32_t r = e.recv(p + " cp" + pass + " recv " + step, kPeerCpPrev,
                              e.streams().cp_recv[lane], ring_bytes, OpCategory::cp, {});
    AttentionShape half = a;
    half.causal = false;
    half.kv_len = sq_ / 2;
    e.kernel(p + " attention" + pass + " " + step, half, OpCategory::compute, {r});
    if (!backward) {
      e.kernel(p + " attention merge " + step, elementwise(tokens_ * out_width_, 2, 4),
               OpCategory::compute);
    }
    prev = r;
  }
  if (!backward) return;
  const uint32_t last = e.cursor();
  e.send(p + " cp dkv send", kPeerCpNext, e.streams().cp_send[lane], kv_bytes, OpCategory::cp,
         {last});
  const uint32_t home = e.recv(p + " cp dkv recv", kPeerCpPrev, e.streams().cp_recv[lane],
                               kv_bytes, OpCategory::cp, {});
  e.kernel(p + " dkv add", elementwise(tokens_ * (k_width_ + v_width_), 2, 1),
           OpCategory::compute, {home});
}

void LayerKernels::attention_forward(OpEmitter& e, const std::string& p, bool) const {
  if (flash_) {
    flash_attention(e, p, false);
    return;
  }
  // Megatron-LM's core attention: QK^T, fused scale-mask-softmax, dropout,
  // then the weighted sum of V, over the full s x s scores.
  const int64_t batch = b_ * heads_;
  e.kernel(p + " qk", gemm(sq_, s_, head_dim_, false, batch), OpCategory::compute);
  e.kernel(p + " softmax", softmax(batch * sq_, s_), OpCategory::compute);
  if (dropout_) {
    e.kernel(p + " attention dropout", elementwise(batch * sq_ * s_, 1, 2), OpCategory::compute);
  }
  e.kernel(p + " pv", gemm(sq_, head_dim_, s_, false, batch), OpCategory::compute);
}

void LayerKernels::attention_backward(OpEmitter& e, const std::string& p) const {
  if (flash_) {
    flash_attention(e, p, true);
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
  if (!c_.model.is_moe_layer(layer)) {
    mlp_block_forward(e, p, dense_mlp(), {});
    return;
  }
  const auto& moe = c_.model.moe;
  const Moe x = moe_linears(layer);
  linear_forward(e, p, x.router);
  e.kernel(p + " router softmax", softmax(tokens_, moe.experts), OpCategory::compute);
  e.kernel(p + " permute", elementwise(tokens_ * moe.top_k * h_, 1, 0), OpCategory::compute);
  const uint32_t dispatch = ep_all_to_all(e, p + " dispatch", layer, EpExchange::dispatch, false);
  // Shared experts need no routing: they run while the dispatch is in flight.
  if (moe.shared_experts > 0) mlp_block_forward(e, p, x.shared, {});
  for (size_t i = 0; i < x.experts.size(); ++i) {
    mlp_block_forward(e, p + x.experts[i].prefix, x.experts[i].mlp,
                      i == 0 ? std::vector<uint32_t>{dispatch} : std::vector<uint32_t>{});
  }
  // With no expert rows here, the combine still waits for the dispatch.
  ep_all_to_all(e, p + " combine", layer, EpExchange::combine, true,
                x.experts.empty() ? std::vector<uint32_t>{dispatch} : std::vector<uint32_t>{});
  e.kernel(p + " unpermute", elementwise(tokens_ * moe.top_k * h_, 2, 2), OpCategory::compute);
}

void LayerKernels::mlp_backward(OpEmitter& e, int layer, const std::string& p,
                                WeightGrads& g) const {
  if (!c_.model.is_moe_layer(layer)) {
    const uint32_t coll = mlp_block_backward(e, p, dense_mlp(), g, true);
    norm_backward_site(e, p + " norm2", coll);
    return;
  }
  const auto& moe = c_.model.moe;
  const Moe x = moe_linears(layer);
  e.kernel(p + " unpermute bwd", elementwise(tokens_ * moe.top_k * h_, 2, 2), OpCategory::compute);
  const uint32_t combined = ep_all_to_all(e, p + " combine bwd", layer, EpExchange::combine_bwd, true);
  g.expert = true;
  // DeepSeek-V3 (§3.3): the SwiGLU output (FC2's input) recomputed from its
  // FP8 inputs before FC2's backward.
  auto recompute_act = [&](const std::string& prefix, const Mlp& m) {
    if (!c_.recomputes_fp8_swiglu()) return;
    e.kernel("R" + prefix.substr(1) + " " + m.act, activation(m.act_elements, false), OpCategory::compute);
  };
  for (const ExpertGroup& group : x.experts) {
    recompute_act(p + group.prefix, group.mlp);
    mlp_block_backward(e, p + group.prefix, group.mlp, g, false);
  }
  g.expert = false;
  const uint32_t dispatch =
      ep_all_to_all(e, p + " dispatch bwd", layer, EpExchange::dispatch_bwd, false,
                    x.experts.empty() ? std::vector<uint32_t>{combined} : std::vector<uint32_t>{});
  if (moe.shared_experts > 0) {
    recompute_act(p, x.shared);
    mlp_block_backward(e, p, x.shared, g, false);
  }
  e.kernel(p + " permute bwd", elementwise(tokens_ * moe.top_k * h_, 1, 0), OpCategory::compute,
           {dispatch});
  e.kernel(p + " router softmax bwd", elementwise(tokens_ * moe.experts, 2, 3), OpCategory::compute);
  const uint32_t gathered = sp_regather(e, p + " router regather");
  const uint32_t coll = linear_backward(e, p, x.router, g, {gathered}, " moe grad reduce");
  norm_backward_site(e, p + " norm2", coll);
}

// ---------------------------------------------------------------------------
// A whole layer

void LayerKernels::recompute_up_projections(OpEmitter& e, const std::string& r) const {
  // What the attention's backward reads and Recompute::norms_up_proj did not
  // keep: the first norm's output, then (MLA) the latents' norms and the
  // up-projections with the rotary part, or a plain attention's QKV.
  const AttentionLinears l = attention_linears();
  norm_forward_site(e, r + " norm1");
  if (mla_) {
    const auto& a = c_.model.mla;
    if (a.q_lora_rank > 0) {
      e.kernel(r + " q norm", norm(tokens_, a.q_lora_rank), OpCategory::compute);
      linear_forward(e, r, l.q_up);
    } else {
      linear_forward(e, r, l.q_proj);  // Q straight from norm1's output
    }
    e.kernel(r + " kv norm", norm(tokens_, a.kv_lora_rank), OpCategory::compute);
    linear_forward(e, r, l.kv_up);
    e.kernel(r + " rope", rope(), OpCategory::compute);
    return;
  }
  linear_forward(e, r, l.qkv);
  if (rotary_) e.kernel(r + " rope", rope(), OpCategory::compute);
}

void LayerKernels::layer_forward(OpEmitter& e, int layer, const std::string& prefix) const {
  const std::string p = prefix + " L" + std::to_string(layer);
  const AttentionLinears l = attention_linears();
  norm_forward_site(e, p + " norm1");
  tp_forward_gather(e, p + " attn gather");
  if (mla_) {
    const auto& a = c_.model.mla;
    if (a.q_lora_rank > 0) {
      linear_forward(e, p, l.q_down);
      e.kernel(p + " q norm", norm(tokens_, a.q_lora_rank), OpCategory::compute);
      linear_forward(e, p, l.q_up);
    } else {
      linear_forward(e, p, l.q_proj);
    }
    linear_forward(e, p, l.kv_down);
    e.kernel(p + " kv norm", norm(tokens_, a.kv_lora_rank), OpCategory::compute);
    linear_forward(e, p, l.kv_up);
    e.kernel(p + " rope", rope(), OpCategory::compute);
  } else {
    linear_forward(e, p, l.qkv);
    if (rotary_ && framework_passes(e, p + " rope", fw_.rope_forward(tokens_ * q_width_,
                                                                     tokens_ * k_width_)) == kNoOp) {
      e.kernel(p + " rope", rope(), OpCategory::compute);
    }
  }
  attention_forward(e, p, false);
  linear_forward(e, p, l.proj);
  tp_forward_reduce(e, p + " attn reduce");
  residual_forward_site(e, p, 1);
  norm_forward_site(e, p + " norm2");
  tp_forward_gather(e, p + " mlp gather");
  mlp_forward(e, layer, p);
  tp_forward_reduce(e, p + " mlp reduce");
  residual_forward_site(e, p, 2);
}

uint32_t LayerKernels::layer_backward(OpEmitter& e, int layer, const std::string& prefix,
                                      bool defer, std::vector<DeferredWeights>& deferred) const {
  const std::string p = prefix + " L" + std::to_string(layer);
  const AttentionLinears l = attention_linears();
  DeferredWeights w;
  w.layer = layer;
  WeightGrads g{w, defer};
  if (c_.recompute == Recompute::full) layer_forward(e, layer, "R" + prefix.substr(1));

  // MLP block, last op first.
  if (dropout_) e.kernel(p + " dropout add2 bwd", elementwise(norm_rows_ * h_, 2, 1), OpCategory::compute);
  tp_forward_gather(e, p + " mlp grad gather");
  const std::string r = "R" + p.substr(1);  // recomputed forward ops
  const bool light = c_.recompute == Recompute::norms_up_proj;
  if (light) norm_forward_site(e, r + " norm2");  // fc1's (router's) input for its wgrad
  mlp_backward(e, layer, p, g);
  residual_backward_site(e, p + " residual2 bwd");

  // Attention block.
  if (dropout_) e.kernel(p + " dropout add1 bwd", elementwise(norm_rows_ * h_, 2, 1), OpCategory::compute);
  tp_forward_gather(e, p + " attn grad gather");
  g.region_open = true;  // the attention's linears: one compiled piece under TP
  linear_backward(e, p, l.proj, g);
  if (c_.recompute == Recompute::selective && !flash_) {
    attention_forward(e, "R" + p.substr(1), true);  // re-run the core attention only
  }
  if (light) recompute_up_projections(e, r);
  attention_backward(e, p);
  const uint32_t gathered = sp_regather(e, p + " attn regather");
  if (rotary_ && (mla_ || framework_passes(e, p + " rope", fw_.rope_backward(tokens_ * q_width_,
                                                                             tokens_ * k_width_,
                                                                             tokens_ * v_width_)) ==
                                 kNoOp)) {
    e.kernel(p + " rope bwd", rope(), OpCategory::compute);
  }
  uint32_t coll = kNoOp;
  if (mla_) {
    const auto& a = c_.model.mla;
    linear_backward(e, p, l.kv_up, g);
    e.kernel(p + " kv norm bwd", norm_backward(tokens_ * a.kv_lora_rank), OpCategory::compute);
    linear_backward(e, p, l.kv_down, g, {gathered});
    if (a.q_lora_rank > 0) {
      linear_backward(e, p, l.q_up, g);
      e.kernel(p + " q norm bwd", norm_backward(tokens_ * a.q_lora_rank), OpCategory::compute);
      g.region_open = false;
      coll = linear_backward(e, p, l.q_down, g, {gathered}, " attn grad reduce");
    } else {
      g.region_open = false;
      coll = linear_backward(e, p, l.q_proj, g, {gathered}, " attn grad reduce");
    }
  } else {
    g.region_open = false;
    coll = linear_backward(e, p, l.qkv, g, {gathered}, " attn grad reduce");
  }
  norm_backward_site(e, p + " norm1", coll);
  residual_backward_site(e, p + " residual1 bwd");
  if (defer) {
    deferred.push_back(std::move(w));
    return kNoOp;
  }
  return g.last;
}

}  // namespace gcsim::workloads::training
