// Pipeline schedules as the order of passes each pipeline rank runs:
// GPipe (Huang et al. 2019), 1F1B (PipeDream-Flush, Narayanan et al. 2021),
// Megatron's interleaved 1F1B with virtual stages (Narayanan et al. SC'21),
// ZB-H1 (Qi et al. 2024: backward split into input and weight gradients,
// W passes delayed to fill the cool-down) and DualPipe (DeepSeek-V3 report
// section 3.2.1 and its reference implementation: two directions, each rank
// holding stage i and stage pp-1-i, forward of one micro-batch overlapped
// with the backward of another).
//
// The model is cut into model stages (pp of them, or pp x v interleaved);
// micro-batch j runs model stages 0, 1, ... in turn, on rank_of(stage, j).
// The generator turns each pass into kernels and the p2p messages between
// consecutive model stages; evaluate() runs the order with fixed pass costs
// and free communication, the closed form the schedules are checked with.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "workloads/training/training_config.h"

namespace gcsim::workloads::training {

enum class PassKind : uint8_t {
  forward,
  backward,          // input and weight gradients together (autograd's full backward)
  backward_input,    // input gradients only; the weight gradients wait for a weight pass
  weight,            // the oldest pending weight gradients of this rank (FIFO)
  forward_backward,  // a forward and a full backward of two micro-batches, overlapped
};

struct Work {
  int stage = 0;  // model stage
  int micro = 0;  // micro-batch
};

struct Pass {
  PassKind kind = PassKind::forward;
  Work f;  // forward, or the forward half of forward_backward
  Work b;  // backward, backward_input, weight, or the backward half
};

struct PipelinePlan {
  Schedule schedule = Schedule::one_f_one_b;
  int ranks = 1;          // pipeline ranks (pp)
  int model_stages = 1;   // pp x virtual_stages (pp for DualPipe)
  int micro_batches = 1;
  std::vector<std::vector<Pass>> passes;  // per pipeline rank, in issue order

  // DualPipe runs the second half of the micro-batches the other way.
  bool reversed(int micro) const {
    return schedule == Schedule::dualpipe && micro >= micro_batches / 2;
  }
  int rank_of(int stage, int micro) const {
    if (schedule == Schedule::dualpipe) return reversed(micro) ? ranks - 1 - stage : stage;
    return stage % ranks;
  }
  // Model stages a rank holds (v interleaved, 2 DualPipe, else 1).
  std::vector<int> stages_of(int rank) const;
};

// Builds the order for `pp` ranks, `v` virtual stages (interleaved only) and
// `m` micro-batches. The caller has checked the schedule's constraints
// (check_strategy).
PipelinePlan build_pipeline(Schedule schedule, int pp, int v, int m);

// Peak of the activations held by `rank` in program order: a forward adds
// its stage's bytes, a full backward or a weight pass frees them (a
// backward_input keeps them for its weight pass). `stage_bytes` is indexed by
// model stage; pass 1.0 per stage to count stage-chunks in flight.
double peak_activations(const PipelinePlan& plan, int rank, const std::vector<double>& stage_bytes);

// Pass costs of one model stage, for evaluate().
struct PassCosts {
  double forward = 1, backward_input = 1, weight = 1;  // full backward = backward_input + weight
  double forward_backward = -1;  // < 0: forward + full backward (no overlap gain)
};
struct Evaluation {
  double makespan = 0;
  std::vector<double> busy;  // per rank
  std::vector<double> idle;  // per rank: makespan - busy
};
// Runs the plan with free communication: a pass starts when its rank is
// free and its input (the previous stage's forward, the next stage's
// backward) is done. Throws std::logic_error if the order deadlocks.
Evaluation evaluate(const PipelinePlan& plan, const PassCosts& costs);

}  // namespace gcsim::workloads::training
