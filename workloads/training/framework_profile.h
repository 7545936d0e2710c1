// Which kernels a software stack launches for the non-GEMM, non-attention
// parts of a training step, and what each costs the host to issue
// (`workload.framework`, issue 16):
//
//   megatron       Megatron-LM with Transformer Engine: one fused kernel per
//                  norm, rotary, SwiGLU, cross entropy; bf16 residual stream;
//                  the fused optimizer passes of optimizer_step.h. The layer
//                  code's own kernels (layer_kernels.cpp) are this profile;
//                  the lists below are empty for it.
//   pytorch-eager  plain PyTorch under torch.autocast(bf16) over fp32
//                  parameters (the torch.amp recipe, Hugging Face Llama's
//                  code): every elementwise op its own kernel (RMSNorm as
//                  pow, mean, rsqrt, two muls and a cast; rotary as
//                  rotate-half; SiLU and the gate product; fp32 residual
//                  stream; weights cast to bf16 each forward and their
//                  gradients back to fp32; logits to fp32 before
//                  cross_entropy), clip_grad_norm_ and foreach AdamW.
//   torch-compile  the same model with each decoder layer and the head + loss
//                  torch.compile'd (inductor, no CUDA graphs): each chain of
//                  elementwise ops between two GEMMs becomes one kernel; the
//                  optimizer stays eager. Under TP the pieces between the
//                  collectives are compiled, the final norm alone at the
//                  head: the head GEMM and the vocabulary-parallel loss run
//                  eagerly (eager_kernel passes below).
//
// Every kernel here is a memory pass: time = bytes read + written over the
// achieved HBM bandwidth times `bandwidth_fraction` (the kernel cost model
// adds launch latency and wave quantisation). Bytes per element follow the
// tensors' types; the lists were checked against torch.profiler traces of
// calibration/microbench/framework_step.py (calibration/fit/
// framework_profiles_2026-11-26.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/gpu/kernel.h"
#include "sim/engine/time.h"

namespace gcsim::workloads::training {

enum class Framework { megatron, pytorch_eager, torch_compile };
const char* framework_name(Framework f);

// How a pass walks its tensors. `vectorized`: contiguous operands of one
// type (PyTorch's vectorized_elementwise_kernel, the fp32->bf16 copy, the
// reductions, inductor's plain pointwise kernels): bound by HBM. `generic`:
// PyTorch's non-vectorised TensorIterator path (broadcasts such as
// x * rsqrt(var) and cos/sin over heads, views of a chunk or a half of a
// tensor, mixed-dtype adds and the bf16->fp32 casts, cat) and inductor's
// kernels that cat halves: one element per thread with its offsets computed
// per operand, bound by the SMs' instruction issue rather than HBM. Measured
// (calibration/fit/framework_profiles_2026-11-26.md): these kernels take the
// same time on an H100 and an H200 (132 SMs at the same clock, 3.35 against
// 4.8 TB/s), the vectorized ones 1.35-1.41x longer on the H100.
// `reduction`: inductor's fused reductions over rows that take a CTA each
// (the loss's log-softmax forward and backward over the vocabulary):
// contiguous loads that stream as a vectorized pass, but every element also
// goes through the reduction's arithmetic (fp32 conversion, running max and
// sum, NaN-aware compares, index and mask arithmetic) at the lanes, its
// transcendentals at the special-function units, and a row that takes a
// CTA of its own (the loss over the vocabulary) ends in a block-level
// combine whose cycles the other rows do not hide: the longest of bytes,
// lane work and SFU work, plus the rows' cycles (kernel_cost_model.h).
// Measured: the compiled log-softmax forward takes the same time on an H100
// and an H200 (0.95-1.02x), its backward 1.14-1.23x where HBM alone would
// make it 1.40x. The norms' reductions (rows of the hidden size, several
// to a CTA) measure 1.23-1.35x, mostly HBM: they stay vectorized.
// `streaming`: a plain contiguous kernel measured at the achieved copy rate
// on its own and inside the steps (PyTorch's vectorised cat of two
// contiguous gradients, the eager loss's row kernels over the vocabulary:
// 0.93-1.0 of the measured copy rate on an H100 and an H200): its counted
// bytes at the achieved HBM bandwidth, no fitted fraction.
enum class PassAccess { vectorized, generic, reduction, streaming };

// One memory-bound kernel of a framework's list: `name` follows the site's
// name ("L3 norm1" + " pow"); bytes read + written per element.
struct FrameworkPass {
  std::string name;
  int64_t elements = 0;
  double bytes_per_element = 0;
  PassAccess access = PassAccess::vectorized;
  // Exponentials, logarithms, reciprocals and rsqrts per element (on the
  // SFUs): the online log-softmax 2 (the element's exponential and the
  // running sum's rescale), its backward 1, SiLU 2 (exp and the reciprocal
  // of sigmoid), rsqrt once per row of a norm; rotary's cos/sin are
  // precomputed tables (none).
  double transcendentals = 0;
  // A reduction pass whose rows each take a CTA (over the vocabulary): the
  // rows, each costing FrameworkTraits::cycles_per_row; 0 for rows short
  // enough that one CTA reduces many (the norms over the hidden size).
  int64_t rows = 0;
  // PyTorch's three-pass softmax over long rows (the eager loss's forward):
  // MemoryOpShape::multipass_row_loads.
  bool multipass_row_loads = false;
  // An eager PyTorch kernel in a compiled build (the vocabulary-parallel
  // loss under TP, which torch.compile leaves outside its graphs): costed
  // with pytorch-eager's fitted traits, not the profile's.
  bool eager_kernel = false;
  // The CTAs the kernel launches when fewer than the SMs its bytes would
  // spread over (a row reduction over few rows: eager_row_reduce_grid); 0:
  // the grid follows the bytes.
  int64_t ctas = 0;
  // With ctas: the threads of each CTA, whose warps set how much of an SM's
  // HBM reach the CTA keeps in flight (MemoryOpShape::threads_per_cta); 0:
  // a full SM's.
  int64_t threads = 0;
};

// The CTAs PyTorch's reduce_kernel launches to reduce each row of a
// contiguous [rows, cols] fp32 tensor over its last dimension (Reduce.cuh's
// setReduceConfig: 512 threads, 32 lanes along the row (or more when there
// are fewer rows), loads of 4; the rows a CTA holds share it unless each
// thread would then sum at least 16 x the CTA's rows or 256 values, when
// the CTA's warps split one row; a row still that long is split over CTAs,
// 16-256 values a thread, toward 4 CTAs of 512 threads per SM). The eager
// RMSNorm's mean over hidden 4096 of 32-512 decode rows runs 16 rows a
// CTA: 9.1-9.4 us on an H100 whatever the rows, where hidden 8192, one row
// a CTA, takes 3.3-4.4 us (calibration/measurements/h100-x4/
// serving_step_l3_8b_2026-11-27 and serving_step_2026-11-26).
struct RowReduceGrid {
  int64_t ctas = 1;
  int64_t threads = 512;  // a CTA's: the block's width x height
};
RowReduceGrid eager_row_reduce_grid(int64_t rows, int64_t cols, int sm_count);

// Fitted per framework: what the host spends issuing one kernel, the
// fraction of the achieved streaming HBM bandwidth its elementwise kernels
// reach, and the SM work per element of its generic (non-vectorised) passes
// (fitted on calibration/measurements/h200-x1/framework_step_2026-11-26,
// held out on the H100 runs; see the fit note for the range each may take).
struct FrameworkTraits {
  double host_us_per_kernel = 0;        // µs of host time per launched kernel
  double elementwise_bandwidth = 1.0;   // in (0, 1]
  // The optimizer's multi-tensor (foreach) passes: large contiguous fp32
  // tensors, nearer a streaming copy than the layers' small kernels; in (0, 1].
  double optimizer_bandwidth = 1.0;
  // SM work per element of a generic pass, in fp32 lane operations (an FMA
  // counts 2, as the vector peak does) run at the GPU's vector rate x
  // efficiency.vector: offset arithmetic per operand and dimension, scalar
  // loads and stores, the dtype conversion. A pass takes the longer of this
  // and its bytes over the bandwidth above. 1: as a vectorized pass.
  double generic_ops_per_element = 1.0;
  // The same for a reduction pass (PassAccess::reduction), in the same
  // units; its transcendentals run on the SFUs beside them.
  double reduction_ops_per_element = 1.0;
  // SM cycles each CTA-long row of a reduction pass costs beyond its
  // elements, not hidden by other work: the block-level combine at the
  // row's end (warp shuffles, barriers, shared memory) and the next row's
  // first loads in flight.
  double cycles_per_row = 0.0;
};
FrameworkTraits framework_traits(Framework f);

class FrameworkProfile {
 public:
  // `traits`: the user's overrides (workload.host_overhead,
  // workload.elementwise_bandwidth); nullopt: the profile's fitted values.
  explicit FrameworkProfile(Framework f, const std::optional<FrameworkTraits>& traits = std::nullopt);

  Framework framework() const { return f_; }
  // Megatron's kernels are the layer code's own: every list below is empty.
  bool fused() const { return f_ == Framework::megatron; }
  const FrameworkTraits& traits() const { return traits_; }
  // Host time to issue one kernel (zero: the host never holds the GPU back).
  sim::Duration host_per_kernel() const;
  // Bytes per element of the residual stream between layers, which a
  // pipeline stage sends on: autocast over fp32 parameters keeps it fp32
  // (the embedding's output and every residual add); 0: the activations'
  // own type (Megatron's bf16).
  double residual_bytes() const { return fused() ? 0.0 : 4.0; }
  // Whether each TP rank sends 1/t of a pipeline message and the next stage
  // all-gathers it (Megatron-LM's scatter-gather of the p2p tensors); plain
  // PyTorch sends the whole activation from every TP rank.
  bool pipeline_scatter_gather() const { return fused(); }

  // `rows` x `cols` activations through RMSNorm / LayerNorm, including the
  // cast of its output to the GEMM's bf16 (forward) and of that input's
  // gradient back to fp32 (backward).
  std::vector<FrameworkPass> norm_forward(int64_t rows, int64_t cols) const;
  std::vector<FrameworkPass> norm_backward(int64_t rows, int64_t cols) const;
  // The residual add after a block (fp32 stream + bf16 branch) and its
  // backward (the branch's gradient cast to bf16, the two paths summed).
  // `into_norm`: torch.compile fuses the add into the norm after it.
  std::vector<FrameworkPass> residual_forward(int64_t elements, bool into_norm) const;
  std::vector<FrameworkPass> residual_backward(int64_t elements) const;
  // Rotary embedding of q and k (elements of each), by rotate-half.
  std::vector<FrameworkPass> rope_forward(int64_t q_elements, int64_t k_elements) const;
  // Its backward and the re-assembly of dq, dk, dv into the fused QKV
  // layout (`v_elements` ride along in the copy).
  std::vector<FrameworkPass> rope_backward(int64_t q_elements, int64_t k_elements,
                                           int64_t v_elements) const;
  // SiLU(gate) * up over `elements` of the FFN width, forward and backward.
  std::vector<FrameworkPass> swiglu_forward(int64_t elements) const;
  std::vector<FrameworkPass> swiglu_backward(int64_t elements) const;
  // autocast's cast of an fp32 weight to bf16 each forward, and of its bf16
  // gradient back to the fp32 .grad.
  // `eager_op`: the linear runs eagerly in a compiled build (the head under
  // TP): its gradient cast is PyTorch's casting copy, not inductor's kernel.
  std::vector<FrameworkPass> weight_cast(int64_t params, bool eager_op = false) const;
  // `accumulate`: a later micro-batch of the step, whose fp32 gradient
  // autograd adds into the existing .grad (AccumulateGrad) as well.
  std::vector<FrameworkPass> weight_grad_cast(int64_t params, bool accumulate = false,
                                              bool eager_op = false) const;
  // logits.float() and cross_entropy over tokens x vocab, and backward.
  // With `tp` > 1, `vocab` is this rank's share of the vocabulary and the
  // loss is Megatron-LM's vocabulary-parallel cross entropy (an autograd
  // function of eager PyTorch ops around its max, target-logit and sum
  // all-reduces, strategy_step_bench.py's): the same kernels in both
  // builds, since the collectives in its middle keep torch.compile out
  // (the compiled build compiles the final norm only; measured on 4 H100s,
  // calibration/fit/strategy_ranks_2026-11-27.md).
  std::vector<FrameworkPass> cross_entropy_forward(int64_t tokens, int64_t vocab, int tp = 1) const;
  std::vector<FrameworkPass> cross_entropy_backward(int64_t tokens, int64_t vocab, int tp = 1) const;
  // nn.Embedding over fp32 weights: the gather, and the dense backward
  // (zeroed vocab x hidden gradient, sort of the token ids, index add).
  std::vector<FrameworkPass> embedding_forward(int64_t tokens, int64_t hidden) const;
  std::vector<FrameworkPass> embedding_backward(int64_t tokens, int64_t hidden,
                                                int64_t vocab) const;

  // DistributedDataParallel without gradient_as_bucket_view (its default):
  // each gradient multiplied by 1/dp into its bucket (read and write
  // `grad_bytes` each), and after the bucket's all-reduce copied back.
  std::vector<FrameworkPass> ddp_bucket_copy(int64_t params, double grad_bytes) const;
  std::vector<FrameworkPass> ddp_copy_back(int64_t params, double grad_bytes) const;

  // torch.compile under TP: each compiled piece ends at a TP collective
  // (collectives stay eager), so at each norm the cast of its fp32 output
  // to the GEMM's bf16 is a kernel of the next piece, and backward the
  // residual gradients from two pieces meet in autograd's fp32 add.
  // Empty for the other profiles and without TP.
  std::vector<FrameworkPass> tp_piece_forward(int64_t elements, int tp) const;
  std::vector<FrameworkPass> tp_piece_backward(int64_t elements, int tp) const;
  // torch.compile under TP, the head: the compiled final norm's fp32 output
  // is cast to bf16 by the eager head's autocast (tp_piece_forward), whose
  // backward casts the head's bf16 input gradient to fp32 (PyTorch's
  // unrolled casting copy: generic). Empty for the other profiles and
  // without TP (the compiled head + loss, or eager's norm backward, has it).
  std::vector<FrameworkPass> tp_head_grad_cast(int64_t elements, int tp) const;

  // A pass as the kernel cost model's shape (fp32 elementwise, the
  // framework's bandwidth fraction; a generic or reduction pass carries the
  // framework's SM operations per element, a reduction its rows' cycles,
  // every pass its transcendentals).
  models::gpu::MemoryOpShape shape(const FrameworkPass& p) const;

 private:
  Framework f_;
  FrameworkTraits traits_;
};

}  // namespace gcsim::workloads::training
