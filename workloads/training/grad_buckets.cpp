#include "workloads/training/grad_buckets.h"

#include <algorithm>
#include <utility>

namespace gcsim::workloads::training {

double megatron_bucket_params(int dp) { return std::max(40e6, 1e6 * dp); }

double grad_bucket_bytes(const TrainingConfig& c) {
  if (c.parallel.dp_bucket_bytes) return static_cast<double>(*c.parallel.dp_bucket_bytes);
  if (c.framework == Framework::megatron) {
    return megatron_bucket_params(c.parallel.dp) * c.optimizer.grad_bytes;
  }
  return kDdpBucketCapBytes;
}

GradBucketRule grad_bucket_rule(const TrainingConfig& c, int pipeline_rank, int stage,
                                int first_stage_of_rank) {
  GradBucketRule r;
  r.bytes = grad_bucket_bytes(c);
  if (c.framework == Framework::megatron) {
    r.first_bytes = r.bytes;
    r.whole_stage = pipeline_rank > 0 || stage != first_stage_of_rank;
  } else {
    // DDP's small first bucket only with the default cap (distributed.py).
    r.first_bytes = c.parallel.dp_bucket_bytes ? r.bytes : kDdpFirstBucketBytes;
  }
  return r;
}

std::vector<size_t> autograd_ready_order(size_t n) {
  // (priority, index): the input gradient first at a lower priority, then
  // the weights; std::push_heap / pop_heap as std::priority_queue runs them.
  using Task = std::pair<int, size_t>;
  const auto lower = [](const Task& a, const Task& b) { return a.first < b.first; };
  std::vector<Task> heap{{0, n}};
  for (size_t i = 0; i < n; ++i) {
    heap.emplace_back(1, i);
    std::push_heap(heap.begin(), heap.end(), lower);
  }
  std::vector<size_t> order;
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), lower);
    if (heap.back().second != n) order.push_back(heap.back().second);
    heap.pop_back();
  }
  return order;
}

GradBucketFiller::GradBucketFiller(const GradBucketRule& rule, double grad_bytes)
    : rule_(rule), grad_bytes_(grad_bytes) {}

double GradBucketFiller::close(Buffer& b, double params) {
  b.params += params;
  if (b.params <= 0 || rule_.whole_stage) return 0;
  const double limit = b.first ? rule_.first_bytes : rule_.bytes;
  if (b.params * grad_bytes_ < limit) return 0;
  const double closed = b.params;
  b.params = 0;
  b.first = false;
  return closed;
}

GradBucket GradBucketFiller::add(double dense, double expert) {
  GradBucket out;
  if (dense > 0) out.dense = close(dense_, dense);
  if (expert > 0) out.expert = close(expert_, expert);
  return out;
}

GradBucket GradBucketFiller::flush() {
  GradBucket out{dense_.params, expert_.params};
  dense_ = {};
  expert_ = {};
  return out;
}

}  // namespace gcsim::workloads::training
