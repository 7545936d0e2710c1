#include "workloads/inference/comm_timer.h"

#include <algorithm>
#include <stdexcept>

namespace gcsim::workloads::inference {

ExecutorCommTimer::ExecutorCommTimer(sim::Simulator& scratch, sim::OpExecutor& executor,
                                     int gpus_per_node)
    : sim_(scratch), executor_(executor), gpus_per_node_(std::max(1, gpus_per_node)) {}

std::vector<int> ExecutorCommTimer::shape_of(const std::vector<int>& ranks) const {
  std::vector<int> s;
  s.reserve(ranks.size() + 1);
  s.push_back(ranks.front() % gpus_per_node_);
  for (int r : ranks) s.push_back(r - ranks.front());
  return s;
}

sim::Duration ExecutorCommTimer::run(const Op& op, const std::vector<int>& ranks) {
  ops_.push_back(op);
  const sim::Time start = sim_.now();
  sim::Time end = start;
  bool finished = false;
  executor_.run_communication(ops_.back(), ranks, [&](sim::Time, sim::Time e) {
    end = e;
    finished = true;
  });
  sim_.run();
  ++runs_;
  if (!finished) {
    throw std::runtime_error("serving: a " + std::to_string(ranks.size()) +
                             "-rank communication op never finished on the fabric (is the "
                             "network partitioned?)");
  }
  return end - start;
}

sim::Duration ExecutorCommTimer::collective(CollectiveKind kind, sim::Bytes bytes,
                                            const std::vector<int>& ranks) {
  if (ranks.size() < 2 || bytes.count() <= 0) return sim::Duration::zero();
  auto key = std::make_tuple(static_cast<int>(kind), bytes.count(), shape_of(ranks));
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  Op op;
  op.kind = OpKind::collective;
  CollectiveOp c;
  c.kind = kind;
  c.bytes = bytes;
  op.payload = c;
  const sim::Duration d = run(op, ranks);
  cache_.emplace(std::move(key), d);
  return d;
}

sim::Duration ExecutorCommTimer::p2p(int src, int dst, sim::Bytes bytes) {
  if (src == dst || bytes.count() <= 0) return sim::Duration::zero();
  // The executor takes the pair sorted, with the op as the lower rank's
  // half: a send if the lower rank sends.
  const std::vector<int> ranks{std::min(src, dst), std::max(src, dst)};
  auto key = std::make_tuple(src < dst ? -1 : -2, bytes.count(), shape_of(ranks));
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  Op op;
  op.kind = src < dst ? OpKind::send : OpKind::recv;
  P2pOp p;
  p.bytes = bytes;
  op.payload = p;
  const sim::Duration d = run(op, ranks);
  cache_.emplace(std::move(key), d);
  return d;
}

}  // namespace gcsim::workloads::inference
