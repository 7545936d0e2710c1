#include "workloads/training/pipeline_receives.h"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace gcsim::workloads::training {

namespace {

bool has_forward(const Pass& p) {
  return p.kind == PassKind::forward || p.kind == PassKind::forward_backward;
}
bool has_backward(const Pass& p) {
  return p.kind == PassKind::backward || p.kind == PassKind::backward_input ||
         p.kind == PassKind::forward_backward;
}

// The index of the pass of `passes` that reads `msg`.
int consumer_of(const std::vector<Pass>& passes, const PipelineMessage& msg) {
  for (size_t i = 0; i < passes.size(); ++i) {
    const Pass& p = passes[i];
    if (!msg.backward && has_forward(p) && p.f.stage == msg.stage + 1 && p.f.micro == msg.micro) {
      return static_cast<int>(i);
    }
    if (msg.backward && has_backward(p) && p.b.stage == msg.stage - 1 && p.b.micro == msg.micro) {
      return static_cast<int>(i);
    }
  }
  throw std::logic_error("pipeline_receives: no pass reads a message sent to this rank");
}

// Where a receive read by pass `c` is posted.
int post_index(const std::vector<Pass>& passes, int c, bool backward, ReceivePosting posting) {
  if (posting == ReceivePosting::before_consumer) return c;
  for (int q = c - 1; q >= 0; --q) {
    const Pass& p = passes[static_cast<size_t>(q)];
    if (backward ? has_backward(p) : has_forward(p)) return q + 1;
  }
  // The first of its kind: posted with the pass before (Megatron posts the
  // first backward's receive after the last warm-up forward).
  return std::max(0, c - 1);
}

}  // namespace

std::vector<std::pair<int, PipelineMessage>> outgoing_messages(const PipelinePlan& plan, int pr) {
  std::vector<std::pair<int, PipelineMessage>> out;
  const int last = plan.model_stages - 1;
  auto fwd = [&](const Work& w) {
    if (w.stage < last) out.push_back({plan.rank_of(w.stage + 1, w.micro), {false, w.stage, w.micro}});
  };
  auto bwd = [&](const Work& w) {
    if (w.stage > 0) out.push_back({plan.rank_of(w.stage - 1, w.micro), {true, w.stage, w.micro}});
  };
  for (const Pass& p : plan.passes[static_cast<size_t>(pr)]) {
    switch (p.kind) {
      case PassKind::forward: fwd(p.f); break;
      case PassKind::backward:
      case PassKind::backward_input: bwd(p.b); break;
      case PassKind::weight: break;
      case PassKind::forward_backward:
        fwd(p.f);
        bwd(p.b);
        break;
    }
  }
  return out;
}

ReceivePosting receive_posting(Framework framework, Schedule schedule) {
  return framework == Framework::megatron && schedule == Schedule::interleaved
             ? ReceivePosting::after_previous_of_kind
             : ReceivePosting::before_consumer;
}

std::vector<std::vector<PostedReceive>> receive_posts(const PipelinePlan& plan, int pr,
                                                      ReceivePosting posting) {
  const std::vector<Pass>& passes = plan.passes[static_cast<size_t>(pr)];
  std::vector<std::vector<PostedReceive>> posts(passes.size() + 1);
  if (plan.ranks == 1) return posts;
  const int pp = plan.ranks;
  std::vector<int> senders{(pr + 1) % pp};
  if ((pr + pp - 1) % pp != senders.front()) senders.push_back((pr + pp - 1) % pp);
  for (int src : senders) {
    std::vector<PostedReceive> mine;
    for (const auto& [dst, msg] : outgoing_messages(plan, src)) {
      if (dst == pr) mine.push_back({src, msg});
    }
    std::vector<int> at(mine.size());
    int earliest = static_cast<int>(passes.size());
    for (size_t i = mine.size(); i-- > 0;) {
      const int c = consumer_of(passes, mine[i].msg);
      earliest = std::min(earliest, post_index(passes, c, mine[i].msg.backward, posting));
      at[i] = earliest;
    }
    for (size_t i = 0; i < mine.size(); ++i) posts[static_cast<size_t>(at[i])].push_back(mine[i]);
  }
  return posts;
}

}  // namespace gcsim::workloads::training
