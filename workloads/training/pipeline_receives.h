// Where a pipeline rank posts each receive, as the framework issues it.
//
// Megatron-LM's 1F1B (schedules.py, forward_backward_pipelining_without_
// interleaving) and PyTorch steps written after it (calibration/microbench/
// strategy_step_bench.py) issue the receive a pass needs in one batched
// NCCL group with the send of the pass before (batch_isend_irecv, then
// req.wait()): recv_forward before a warm-up forward, send_forward_recv_
// backward after a steady forward, send_backward_recv_forward after a
// backward, recv_backward before a cool-down backward. So a receive is
// posted when the rank's previous pass has been issued, and NCCL's stream
// waits for the compute stream there: its kernel starts at the end of that
// pass and the consuming pass waits for it (`before_consumer`).
//
// Megatron's interleaved schedule overlaps them (overlap_p2p_comm, on by
// default there: arguments.py `--no-overlap-p2p-communication` is
// store_false; forward_backward_pipelining_with_interleaving): the receive
// for the next forward is posted after the current forward and waited for
// only before the next one, and the receive for the next backward after
// the current backward, so each waits beside the pass between
// (`after_previous_of_kind`).
//
// NCCL matches the n-th send of a (src, dst) pair with the n-th receive,
// and the generator puts a sender's messages on one stream in production
// order; a receive is therefore posted no later than any receive after it
// from the same sender (a running minimum from the back), so a schedule
// whose consumption order differs from production still meets its sends.
#pragma once

#include <tuple>
#include <utility>
#include <vector>

#include "workloads/training/framework_profile.h"
#include "workloads/training/pipeline_schedule.h"

namespace gcsim::workloads::training {

// A pipeline message: the output of forward (stage, micro) or the input
// gradient of backward (stage, micro).
struct PipelineMessage {
  bool backward = false;
  int stage = 0, micro = 0;
  bool operator<(const PipelineMessage& o) const {
    return std::tie(backward, stage, micro) < std::tie(o.backward, o.stage, o.micro);
  }
  bool operator==(const PipelineMessage& o) const {
    return backward == o.backward && stage == o.stage && micro == o.micro;
  }
};

// Messages pipeline rank `pr` sends, in the order its passes produce them,
// each with its destination pipeline rank.
std::vector<std::pair<int, PipelineMessage>> outgoing_messages(const PipelinePlan& plan, int pr);

enum class ReceivePosting {
  before_consumer,        // batched with the previous pass's send, then waited for
  after_previous_of_kind  // Megatron's overlap_p2p_comm (interleaved schedule)
};
// Megatron's interleaved schedule overlaps its receives; every other
// (framework, schedule) pair batches and waits.
ReceivePosting receive_posting(Framework framework, Schedule schedule);

struct PostedReceive {
  int src = 0;  // sending pipeline rank
  PipelineMessage msg;
};
// Per pass index of `pr` (plan.passes[pr]), the receives posted just
// before that pass (after the previous pass's kernels): per sender in its
// production order. Index 0 is the step's start.
std::vector<std::vector<PostedReceive>> receive_posts(const PipelinePlan& plan, int pr,
                                                      ReceivePosting posting);

}  // namespace gcsim::workloads::training
