// The kernels and collectives of one micro-batch through one transformer
// layer on one GPU, with the shapes of its shard: GEMMs split over TP
// (column-parallel QKV and FC1, row-parallel output projection and FC2, as
// Megatron-LM), attention by FlashAttention or Megatron's unfused core
// (batched GEMMs, softmax, dropout), norms and activations, MoE router,
// all-to-all dispatch and combine and grouped expert GEMMs, MLA's low-rank
// projections, CP ring attention. TP all-reduces, or with sequence
// parallelism reduce-scatter and all-gather, sit where Megatron puts them;
// backward input-gradient collectives overlap the weight-gradient GEMMs.
//
// Backward can keep the weight-gradient GEMMs aside (zero-bubble schedules
// and DualPipe run them later as a weight pass).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "models/gpu/kernel.h"
#include "workloads/training/ep_routing.h"
#include "workloads/training/framework_profile.h"
#include "workloads/training/op_emitter.h"
#include "workloads/training/training_config.h"

namespace gcsim::workloads::training {

// Weight-gradient GEMMs of one layer (or the head/embedding), to emit later.
struct DeferredWeights {
  int layer = 0;  // kHeadLayer / kEmbeddingLayer for those
  std::vector<std::pair<std::string, gcsim::models::gpu::GemmShape>> gemms;
  std::vector<uint8_t> expert;  // per GEMM: a routed expert's weights
  std::vector<uint32_t> deps;  // e.g. SP all-gathers of the inputs
};
inline constexpr int kHeadLayer = -2;
inline constexpr int kEmbeddingLayer = -1;

// A parameter's gradient complete on this GPU, where DDP's autograd hook
// (or Megatron's grad-ready hook) fires: after the last op emitted.
struct GradReady {
  double params = 0;    // this GPU's shard
  bool expert = false;  // a routed expert's (the expert-parallel buffer)
  // Inside a torch.compile'd region, whose backward hands its gradients to
  // autograd only when it ends: ready with the next one not held (then the
  // region's gradients come out in registration order, forward order).
  bool hold = false;
};
using GradReadyHook = std::function<void(const GradReady&)>;

class LayerKernels {
 public:
  // `ep`: the MoE layers' routing (null for a dense model; must outlive
  // this), whose dispatch and combine run as its uneven all-to-alls;
  // `ep_index`: the EP rank whose experts this GPU runs, or -1 for a
  // mirrored EP rank (each layer's hot rank, ep_routing.h).
  explicit LayerKernels(const TrainingConfig& c, const EpRouting* ep = nullptr, int ep_index = -1);

  void embedding_forward(OpEmitter& e, const std::string& prefix) const;
  void head_forward(OpEmitter& e, const std::string& prefix) const;
  // `recompute`: this forward re-runs one for a backward (full recompute).
  void layer_forward(OpEmitter& e, int layer, const std::string& prefix) const;

  // Backward passes emit input-gradient kernels on the chain; with `defer`
  // the weight-gradient GEMMs go to `deferred` instead of the chain.
  // Return the op after which the layer's weight gradients are complete
  // (kNoOp when deferred).
  uint32_t head_backward(OpEmitter& e, const std::string& prefix, bool defer,
                         std::vector<DeferredWeights>& deferred) const;
  uint32_t layer_backward(OpEmitter& e, int layer, const std::string& prefix, bool defer,
                          std::vector<DeferredWeights>& deferred) const;
  uint32_t embedding_backward(OpEmitter& e, const std::string& prefix, bool defer,
                              std::vector<DeferredWeights>& deferred) const;
  // Emits deferred weight GEMMs on the chain; returns the last one.
  uint32_t emit_weights(OpEmitter& e, const DeferredWeights& w) const;

  // Bytes of one pipeline message (activation or its gradient) per GPU:
  // each TP rank sends its 1/t slice (Megatron's scatter-gather, or SP).
  int64_t pipeline_message_bytes() const;
  // After receiving a pipeline message without SP, TP ranks all-gather the
  // slices (Megatron's scatter-gather optimisation); returns kNoOp if none.
  uint32_t pipeline_gather(OpEmitter& e, const std::string& prefix, uint32_t recv) const;
  // Whether the backwards emitted next belong to a later micro-batch of the
  // step, whose weight gradients plain PyTorch adds into the .grad of the
  // earlier ones (Megatron accumulates inside its wgrad GEMM).
  void set_accumulating(bool accumulating) { accumulating_ = accumulating; }
  // The micro-batch whose passes are emitted next: a sampled routing
  // (ep_routing.h) gives each its own splits and expert rows.
  void set_micro_batch(int micro) { micro_ = micro; }
  // DDP's passes over `params` gradients of the synced backward (plain
  // PyTorch profiles; none for Megatron, whose buckets are its gradient
  // buffer): each gradient scaled into its bucket once ready, after `after`;
  // every bucket copied back to the .grad tensors once reduced. Return the
  // last pass, or kNoOp.
  uint32_t ddp_bucket_copy(OpEmitter& e, const std::string& site, double params, uint32_t after) const;
  uint32_t ddp_copy_back(OpEmitter& e, const std::string& site, double params, uint32_t after) const;

  // Called as each weight's gradient completes in a backward or weight
  // pass (linear layers, norms; the embedding's is its backward's end).
  void set_grad_hook(GradReadyHook hook) { grad_hook_ = std::move(hook); }

  // Tokens of one micro-batch on this GPU (b x s / cp).
  int64_t tokens() const { return tokens_; }

 private:
  // A linear layer on this GPU: `rows` tokens through `in` -> `out`
  // features. Both passes build their GEMMs from this one description:
  // forward rows x out x in, input gradient (dgrad) rows x in x out, weight
  // gradient (wgrad) in x out x rows.
  struct Linear {
    const char* name;  // kernel name after the layer prefix, e.g. "fc1"
    int64_t rows, in, out;
    bool low_precision = true;  // the linear layers' dtype (fp8 when precision is fp8)
    int64_t batch = 1;          // grouped GEMM: one per local expert
    // An eager PyTorch linear in a compiled build (the head under TP, left
    // outside the compiled final norm): its weight's casts are eager kernels.
    bool eager_op = false;
  };
  // fc1, activation, fc2: the dense MLP, the shared experts, or the routed
  // experts' grouped GEMMs.
  struct Mlp {
    Linear fc1, fc2;
    int64_t act_elements;
    const char* act;      // forward activation kernel name
    const char* act_bwd;  // its backward
  };
  // Local experts with the same row count, one batched GEMM per linear
  // (`prefix` after the layer's: "" when every local expert has the same
  // rows, else " e<first expert>").
  struct ExpertGroup {
    std::string prefix;
    Mlp mlp;
  };
  struct Moe {
    Linear router;
    std::vector<ExpertGroup> experts;  // empty when no expert got a row
    Mlp shared;
  };
  // Query, key/value and output projections (MLA's low-rank ones or QKV).
  struct AttentionLinears {
    Linear q_down, q_up, q_proj, kv_down, kv_up, qkv, proj;
  };
  // Where a backward pass's weight-gradient GEMMs go: onto the chain (the
  // last one kept in `last`) or, with `defer`, into `w`.
  struct WeightGrads {
    DeferredWeights& w;
    bool defer;
    uint32_t last = kNoOp;
    bool expert = false;       // the linears now emitted are routed experts'
    bool region_open = false;  // more linears of this compiled region follow
  };

  gcsim::models::gpu::GemmShape gemm(int64_t m, int64_t n, int64_t k, bool low_precision = true,
                              int64_t batch = 1) const;
  gcsim::models::gpu::MemoryOpShape norm(int64_t rows, int64_t cols) const;
  gcsim::models::gpu::MemoryOpShape norm(int64_t rows) const { return norm(rows, h_); }
  gcsim::models::gpu::MemoryOpShape norm_backward(int64_t elements) const;
  gcsim::models::gpu::MemoryOpShape softmax(int64_t rows, int64_t cols) const;
  gcsim::models::gpu::MemoryOpShape elementwise(int64_t elements, int inputs, double flops) const;
  gcsim::models::gpu::MemoryOpShape activation(int64_t elements, bool backward) const;
  gcsim::models::gpu::MemoryOpShape rope() const;

  Linear logits() const;
  AttentionLinears attention_linears() const;
  Mlp dense_mlp() const;
  Moe moe_linears(int layer) const;  // only for a MoE layer

  // Emits a framework's passes for one site (`site` + each pass's name),
  // the first after `deps`; returns the last, or kNoOp when the list is
  // empty (Megatron: the caller emits its own fused kernel).
  uint32_t framework_passes(OpEmitter& e, const std::string& site,
                            const std::vector<FrameworkPass>& passes,
                            std::vector<uint32_t> deps = {}) const;

  // The sites a framework profile fills with its own kernels; Megatron
  // (and dropout, which the eager and compiled lists leave out) keep the
  // fused kernels of this file. `site` is the layer prefix + the site name.
  void norm_forward_site(OpEmitter& e, const std::string& site) const;
  void norm_backward_site(OpEmitter& e, const std::string& site, uint32_t after) const;
  // `which`: 1 after attention (torch.compile fuses it into norm2), 2 after the MLP.
  void residual_forward_site(OpEmitter& e, const std::string& p, int which) const;
  void residual_backward_site(OpEmitter& e, const std::string& name) const;
  // SiLU x gate under a framework profile; false when the caller emits its
  // own activation kernel (Megatron, or GELU).
  bool swiglu_passes(OpEmitter& e, const std::string& site, bool backward, int64_t elements) const;

  uint32_t linear_forward(OpEmitter& e, const std::string& p, const Linear& l,
                          std::vector<uint32_t> deps = {}) const;
  // dgrad then wgrad of `l` (wgrad after `wgrad_deps`); with `grad_reduce`
  // (a column-parallel input under TP) the input-gradient collective named
  // p + grad_reduce runs between them: returned, kNoOp if none.
  uint32_t linear_backward(OpEmitter& e, const std::string& p, const Linear& l, WeightGrads& g,
                           std::vector<uint32_t> wgrad_deps = {},
                           const char* grad_reduce = nullptr) const;
  void mlp_block_forward(OpEmitter& e, const std::string& p, const Mlp& m,
                         std::vector<uint32_t> fc1_deps) const;
  // With `tp_input` the SP re-gather and the input-gradient collective of
  // the dense MLP; returns that collective (kNoOp if none).
  // Recompute::norms_up_proj: the attention's recomputed inputs before its
  // backward (layer_kernels.cpp).
  void recompute_up_projections(OpEmitter& e, const std::string& r) const;
  uint32_t mlp_block_backward(OpEmitter& e, const std::string& p, const Mlp& m, WeightGrads& g,
                              bool tp_input) const;

  // FlashAttention, with ring attention over CP.
  void flash_attention(OpEmitter& e, const std::string& p, bool backward) const;
  void attention_forward(OpEmitter& e, const std::string& p, bool scores_only) const;
  void attention_backward(OpEmitter& e, const std::string& p) const;
  uint32_t tp_collective(OpEmitter& e, const std::string& name, CollectiveKind kind,
                         int64_t bytes, bool chain = true) const;
  // One exchange of a MoE layer on the lane's EP stream: its legs as
  // uneven all-to-alls (ep_routing.h), the first after `extra` (and the
  // chain cursor); returns the last leg.
  uint32_t ep_all_to_all(OpEmitter& e, const std::string& name, int layer, EpExchange x,
                         bool chain, std::vector<uint32_t> extra = {}) const;
  void tp_forward_gather(OpEmitter& e, const std::string& p) const;  // SP all-gather
  // AR or RS; `fp32_embedding`: the embedding's partial sums.
  void tp_forward_reduce(OpEmitter& e, const std::string& p, bool fp32_embedding = false) const;
  void mlp_forward(OpEmitter& e, int layer, const std::string& p) const;
  void mlp_backward(OpEmitter& e, int layer, const std::string& p, WeightGrads& g) const;
  // The backward of a column-parallel linear block's input side: returns
  // the async input-gradient collective (kNoOp without TP); the caller's
  // next chain op must depend on it.
  uint32_t input_grad_collective(OpEmitter& e, const std::string& p) const;
  // The SP all-gather of the forward input that a weight GEMM waits for.
  uint32_t sp_regather(OpEmitter& e, const std::string& p) const;
  void add_weight(OpEmitter& e, WeightGrads& g, const std::string& name,
                  gcsim::models::gpu::GemmShape shape, std::vector<uint32_t> deps) const;
  // Reports a gradient complete (set_grad_hook); `closes_region`: the last
  // of its torch.compile'd region under TP (without TP a whole layer, and
  // the head with its norm, is one region: every gradient is held).
  void grad_ready(double params, bool expert, bool closes_region) const;
  double norm_params() const;  // one norm's weights (and bias)

  const TrainingConfig& c_;
  FrameworkProfile fw_;
  gcsim::models::gpu::Dtype act_;   // activations and non-linear GEMMs (bf16 / fp16)
  gcsim::models::gpu::Dtype gemm_;  // linear layers' GEMMs (fp8 when precision fp8)
  int64_t t_, cp_, b_, h_, s_, sq_, tokens_, norm_rows_;
  int64_t heads_, kv_heads_;  // per GPU
  int64_t q_width_, k_width_, v_width_, out_width_;  // per GPU
  int64_t head_dim_;          // for attention kernels
  bool sp_, dropout_, rotary_, flash_, mla_;
  const EpRouting* ep_;
  int ep_index_;
  bool accumulating_ = false;  // set_accumulating()
  int micro_ = 0;              // set_micro_batch()
  GradReadyHook grad_hook_;
};

}  // namespace gcsim::workloads::training
