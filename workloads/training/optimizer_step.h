// The HBM passes of one mixed-precision optimizer step, as Megatron-LM's
// fp16/bf16 optimizers (Float16OptimizerWithFloat16Params and the distributed
// optimizer) run them once per iteration. All are memory-bound: time = bytes
// through HBM. The generator emits one kernel per pass and `gcsim explain`
// sums the same list, so both use one definition.
//
// Per parameter, with 2-byte gradients, fp32 master weights and fp32 Adam
// states (the defaults), fp16 with dynamic loss scaling:
//   zero gradients            write 2                      (every held gradient)
//   gradients to fp32 main    read 2,  write 4             (optimizer shard)
//   unscale + inf check       read 4,  write 4             (fp16 only)
//   gradient norm             read 4                       (grad_clip > 0)
//   Adam                      read 4 + 12, write 12        (grad, master, m, v)
//   master to model weights   read 4,  write 2
// = 54 B per parameter (bf16: 46, no loss scaling); Adam alone is 28.
// Under `framework: pytorch-eager | torch-compile` the step is PyTorch's own
// (AMP over fp32 parameters, so the gradients are already fp32 and no master
// copy exists): clip_grad_norm_ (foreach norm, then a foreach scale that
// always runs) and torch.optim.AdamW's foreach path, one multi-tensor pass
// per foreach call (torch/optim/adamw.py, _multi_tensor_adamw):
//   grad norm  read 4 | clip scale  read 4, write 4 | weight decay  read 4, write 4
//   m lerp  read 8, write 4 | v scale  read 4, write 4 | v addcmul  read 8, write 4
//   sqrt(v)  read 4, write 4 | / bias correction  read 4, write 4
//   + eps  read 4, write 4 | param addcdiv  read 12, write 4
// = 92 B per parameter in 10 passes (the fused Adam above: 28 in one).
// After the passes marked `reduces_scalar` (the norm, and fp16's inf check)
// the generator all-reduces one fp32 scalar over the ranks whose gradients
// differ (TP x EP x PP; every rank when the optimizer is sharded), as
// Megatron-LM's clip_grad_norm_fp32 and the measured PyTorch step do. It
// moves 4 bytes, but it is where every pipeline stage waits for the first
// stage's last backward (a profiler counts that wait as NCCL kernel time).
// Not modelled: Megatron's clip scaling pass (only when the norm exceeds the
// threshold).
#pragma once

#include <string>
#include <vector>

#include "workloads/training/memory_model.h"
#include "workloads/training/training_config.h"

namespace gcsim::workloads::training {

struct OptimizerPass {
  std::string name;
  double read_bytes = 0;   // per parameter
  double write_bytes = 0;  // per parameter
  // true: over the parameters whose optimizer state this rank owns (its
  // ZeRO shard); false: over every gradient the rank holds.
  bool over_shard = true;
  double flops = 0;  // per parameter (vector work; it never bounds these passes)
  // A scalar (the norm's partial sum, or the inf flag) is all-reduced over
  // the model-parallel ranks after this pass.
  bool reduces_scalar = false;

  double bytes() const { return read_bytes + write_bytes; }
};

std::vector<OptimizerPass> optimizer_passes(const OptimizerConfig& o, Precision precision,
                                            Framework framework = Framework::megatron);

// The parameters one rank's passes run over: its optimizer shard (ZeRO 1 and
// up shard the states over the data-parallel ranks, experts' over the
// expert-data-parallel ones) and the gradients it holds (sharded from ZeRO 2).
struct OptimizerScope {
  double shard = 0;
  double held = 0;
};
OptimizerScope optimizer_scope(const RankParams& p, int zero_stage, int dp_ranks, int expert_dp_ranks);

// HBM bytes the passes move over `scope`.
double optimizer_bytes(const std::vector<OptimizerPass>& passes, const OptimizerScope& scope);

}  // namespace gcsim::workloads::training
