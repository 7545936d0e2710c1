// Where a pipeline rank posts its receives (pipeline_receives.h), against
// Megatron-LM's schedules.py by hand.
//
// 1F1B, 2 stages, 4 micro-batches (strategy_step_bench.py's TP2xPP2 with
// m = 4). Stage 0 runs F0 F1 B0 F2 B1 F3 B2 B3 (one warm-up forward), stage 1
// F0 B0 F1 B1 F2 B2 F3 B3.
//   forward_backward_pipelining_without_interleaving: stage 1's recv_forward
//   of m0 before the loop (pass 0), then send_backward_recv_forward after each
//   backward (before passes 2, 4, 6); stage 0's send_forward_recv_backward after
//   each steady forward (before B0 at 2, B1 at 4, B2 at 6) and recv_backward
//   before the cool-down B3 (7).
//   Megatron's overlap_p2p_comm (interleaved schedule): the receive for the
//   next pass of a kind after the current one, so each waits beside the pass
//   between: stage 1's forwards at 0 (step start), 1, 3, 5; stage 0's first
//   backward after the last warm-up forward (1), then after each backward (3,
//   5, 7).
#include <algorithm>
#include <vector>

#include "catch.h"
#include "workloads/training/pipeline_receives.h"

using namespace gcsim::workloads::training;

namespace {

// The pass index each receive is posted at, in production order.
std::vector<int> post_indices(const std::vector<std::vector<PostedReceive>>& posts) {
  std::vector<int> at;
  for (size_t i = 0; i < posts.size(); ++i) {
    for (size_t k = 0; k < posts[i].size(); ++k) at.push_back(static_cast<int>(i));
  }
  return at;
}

std::vector<int> micros(const std::vector<std::vector<PostedReceive>>& posts) {
  std::vector<int> m;
  for (const auto& at : posts) {
    for (const PostedReceive& r : at) m.push_back(r.msg.micro);
  }
  return m;
}

}  // namespace

TEST_CASE("pipeline receives: 1F1B posts each receive before the pass that reads it",
          "[training][pipeline]") {
  const PipelinePlan plan = build_pipeline(Schedule::one_f_one_b, 2, 1, 4);
  const auto first = receive_posts(plan, 0, ReceivePosting::before_consumer);
  const auto last = receive_posts(plan, 1, ReceivePosting::before_consumer);
  REQUIRE(first.size() == plan.passes[0].size() + 1);
  // Stage 0 receives the four input gradients, stage 1 the four activations.
  CHECK(post_indices(first) == std::vector<int>{2, 4, 6, 7});
  CHECK(micros(first) == std::vector<int>{0, 1, 2, 3});
  for (const auto& at : first) {
    for (const PostedReceive& r : at) CHECK((r.src == 1 && r.msg.backward && r.msg.stage == 1));
  }
  CHECK(post_indices(last) == std::vector<int>{0, 2, 4, 6});
  for (const auto& at : last) {
    for (const PostedReceive& r : at) CHECK((r.src == 0 && !r.msg.backward && r.msg.stage == 0));
  }
}

TEST_CASE("pipeline receives: Megatron's overlapped receives wait beside the pass between",
          "[training][pipeline]") {
  const PipelinePlan plan = build_pipeline(Schedule::one_f_one_b, 2, 1, 4);
  CHECK(post_indices(receive_posts(plan, 0, ReceivePosting::after_previous_of_kind)) ==
        std::vector<int>{1, 3, 5, 7});
  CHECK(post_indices(receive_posts(plan, 1, ReceivePosting::after_previous_of_kind)) ==
        std::vector<int>{0, 1, 3, 5});
  // Megatron overlaps only in its interleaved schedule; PyTorch steps batch.
  CHECK(receive_posting(Framework::megatron, Schedule::interleaved) ==
        ReceivePosting::after_previous_of_kind);
  CHECK(receive_posting(Framework::megatron, Schedule::one_f_one_b) == ReceivePosting::before_consumer);
  CHECK(receive_posting(Framework::pytorch_eager, Schedule::interleaved) ==
        ReceivePosting::before_consumer);
}

TEST_CASE("pipeline receives: read out of production order, posted no later than the earliest reader",
          "[training][pipeline]") {
  // Stage 1 sends the gradients of m0 then m1; stage 0 reads m1's first.
  // NCCL meets the n-th send with the n-th receive of the pair, so both are
  // posted before the first reader (pass 2), in production order.
  PipelinePlan plan;
  plan.ranks = 2;
  plan.model_stages = 2;
  plan.micro_batches = 2;
  auto f = [](int s, int m) { return Pass{PassKind::forward, {s, m}, {}}; };
  auto b = [](int s, int m) { return Pass{PassKind::backward, {}, {s, m}}; };
  plan.passes = {{f(0, 0), f(0, 1), b(0, 1), b(0, 0)}, {f(1, 0), b(1, 0), f(1, 1), b(1, 1)}};
  const auto posts = receive_posts(plan, 0, ReceivePosting::before_consumer);
  CHECK(post_indices(posts) == std::vector<int>{2, 2});
  CHECK(micros(posts) == std::vector<int>{0, 1});
  // Stage 1 reads in production order: before F0 (0) and F1 (2).
  CHECK(post_indices(receive_posts(plan, 1, ReceivePosting::before_consumer)) ==
        std::vector<int>{0, 2});
}

TEST_CASE("pipeline receives: one stage receives nothing", "[training][pipeline]") {
  const PipelinePlan plan = build_pipeline(Schedule::one_f_one_b, 1, 1, 3);
  const auto posts = receive_posts(plan, 0, ReceivePosting::before_consumer);
  CHECK(post_indices(posts).empty());
  CHECK(outgoing_messages(plan, 0).empty());
}
