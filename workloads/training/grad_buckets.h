// Data-parallel gradient buckets: which gradients each DP reduce carries and
// when it may start, by the rules of the framework that runs the step
// (`workload.framework`).
//
// PyTorch DDP (pytorch-eager, torch-compile; torch/nn/parallel/distributed.py
// and c10d's reducer): after the first iteration the reducer rebuilds its
// buckets in the order the gradients became ready, and
// compute_bucket_assignment_by_size closes a bucket once it holds at least its
// limit: the first bucket 1 MiB (dist._DEFAULT_FIRST_BUCKET_BYTES) and every
// later one bucket_cap_mb (25 MiB) when the cap is left at its default, every
// one the cap when the user sets it. A gradient larger than the limit makes a
// bucket of its own. Each pipeline stage module is its own DDP
// (torch.distributed.pipelining), bucketed alike. A bucket's all-reduce starts
// once all of its gradients are ready, buckets in order.
//
// Megatron-LM (megatron/core/distributed/param_and_grad_buffer.py): parameters
// in reverse registration order (backward order) in one contiguous buffer, a
// bucket closing once it holds bucket_size elements, by default
// max(40M, 1M x dp) (distributed_data_parallel.py); dense and expert
// parameters in separate buffers, each bucketed on its own. No bucketing (the
// whole buffer one bucket, reduced once every gradient is ready) on pipeline
// ranks after the first, on model chunks after the first (interleaved:
// `disable_bucketing`), or without overlap_grad_reduce (which gcsim runs as
// one reduce after the pipeline flush instead, reduce_after_flush()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "workloads/training/training_config.h"

namespace gcsim::workloads::training {

// DDP's default bucket cap and first bucket (bytes of gradient).
inline constexpr double kDdpBucketCapBytes = 25.0 * 1024 * 1024;
inline constexpr double kDdpFirstBucketBytes = 1024.0 * 1024;
// Megatron-LM's default bucket: max(40M, 1M x dp) parameters.
double megatron_bucket_params(int dp);

// How one model stage's gradients are cut into buckets (bytes of gradient).
struct GradBucketRule {
  double first_bytes = 0;    // the stage's first bucket closes at this size
  double bytes = 0;          // every later one
  bool whole_stage = false;  // one bucket for all of the stage's gradients
};

// The bucket size the config resolves to, in bytes of gradient:
// parallelism.dp_bucket when set, else DDP's 25 MiB or Megatron's default.
double grad_bucket_bytes(const TrainingConfig& c);

// The rule for model stage `stage` on pipeline rank `pipeline_rank`, whose
// first model chunk is `first_stage_of_rank` (Megatron buckets pipeline rank
// 0's first chunk only).
GradBucketRule grad_bucket_rule(const TrainingConfig& c, int pipeline_rank, int stage,
                                int first_stage_of_rank);

// The order in which autograd hands out `n` weight gradients that one node
// (a torch.compile'd region's backward) produces together: its engine's
// ready queue is a std::priority_queue by sequence number, every
// AccumulateGrad sharing the highest, pushed after the region's input
// gradient (lower) in the order the region's forward first used them; equal
// keys pop in the heap's order. Returns indices into that use order.
// Measured (calibration/measurements/h100-x4/ddp_bucket_timeline_2026-11-26,
// DDP's rebuilt buckets): a compiled Llama layer's norm1, qkv, proj, norm2,
// fc1, fc2 come out as norm1, qkv, fc1, fc2, norm2, proj.
std::vector<size_t> autograd_ready_order(size_t n);

// The parameters a closed bucket carries, dense and expert apart (each its
// own buffer and DP group); a part of 0 closed nothing.
struct GradBucket {
  double dense = 0, expert = 0;
};

// Fills one stage's buckets as its gradients become ready, in that order.
class GradBucketFiller {
 public:
  GradBucketFiller() = default;
  GradBucketFiller(const GradBucketRule& rule, double grad_bytes);

  // `dense` and `expert` parameters' gradients are ready: returns the
  // bucket parts they close.
  GradBucket add(double dense, double expert);
  // The parts still open once the stage's backward is done.
  GradBucket flush();

 private:
  struct Buffer {
    double params = 0;   // held in the open bucket
    bool first = true;   // the open bucket is the stage's first
  };
  double close(Buffer& b, double params);

  GradBucketRule rule_;
  double grad_bytes_ = 2.0;
  Buffer dense_, expert_;
};

}  // namespace gcsim::workloads::training
