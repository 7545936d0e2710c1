// The host as a stream of delays (workloads/training/host_issue.h,
// with_host_timeline): the same per-launch issue model as host_issue_times,
// with a sync that makes the host wait for an op.
#include "catch.h"
#include "workloads/training/host_issue.h"

using namespace gcsim;
using namespace gcsim::workloads;
using namespace gcsim::workloads::training;

namespace {

// kernel, allocation, collective, kernel; each after the one before.
std::vector<Op> chain() {
  std::vector<Op> ops(4);
  ops[0].kind = OpKind::compute;
  ops[1].kind = OpKind::memory;
  ops[2].kind = OpKind::collective;
  ops[3].kind = OpKind::compute;
  for (uint32_t i = 1; i < 4; ++i) ops[i].deps = {i - 1};
  for (auto& op : ops) op.stream = 0;
  return ops;
}

sim::Duration delay_of(const Op& op) { return std::get<DelayOp>(op.payload).duration; }

}  // namespace

TEST_CASE("host timeline: a delay before each launch, the sync after its op", "[training][host]") {
  const HostLaunchCost cost{sim::us(int64_t{10}), sim::us(int64_t{30})};
  const auto out = with_host_timeline(chain(), 7, cost, {{2, sim::us(int64_t{5})}}, 100, 101);
  // host(k0) k0 alloc host(coll) coll sync host(k1) k1
  REQUIRE(out.size() == 8);
  CHECK(out[0].kind == OpKind::delay);
  CHECK(out[0].stream == 7);
  CHECK(out[0].name == 100);
  CHECK(delay_of(out[0]) == sim::us(int64_t{10}));
  CHECK(out[1].deps == std::vector<uint32_t>{0});      // the kernel waits for its launch
  CHECK(out[2].kind == OpKind::memory);                // an allocation costs the host nothing
  CHECK(out[2].deps == std::vector<uint32_t>{1});      // re-indexed
  CHECK(delay_of(out[3]) == sim::us(int64_t{30}));     // an NCCL call
  CHECK(out[3].deps == std::vector<uint32_t>{0});      // after the host's previous delay
  CHECK(out[4].deps == std::vector<uint32_t>{2, 3});
  CHECK(out[5].name == 101);                           // the sync waits for the collective
  CHECK(delay_of(out[5]) == sim::us(int64_t{5}));
  CHECK(out[5].deps == std::vector<uint32_t>{3, 4});
  CHECK(out[6].deps == std::vector<uint32_t>{5});      // the next launch after the sync
  CHECK(out[7].deps == std::vector<uint32_t>{4, 6});
}

TEST_CASE("host timeline: without syncs, the launches end when host_issue_times says",
          "[training][host]") {
  // One model: with one cost per launch, the k-th launch delay ends at the
  // sum of the delays before it, which is host_issue_times' time of its op.
  const sim::Duration per = sim::us(int64_t{12});
  const auto ops = chain();
  const auto out = with_host_timeline(ops, 1, {per, per}, {}, 0, 0);
  RankProgram p;
  p.ops = ops;
  const auto issue = host_issue_times(p, per);
  sim::Duration host = sim::Duration::zero();
  size_t original = 0;
  for (const Op& op : out) {
    if (op.kind == OpKind::delay) {
      host += delay_of(op);
      continue;
    }
    if (host_launches(op)) CHECK(host.ps() == issue[original]);
    ++original;
  }
  CHECK(original == ops.size());
}

TEST_CASE("host timeline: a dependency on a later op is refused", "[training][host]") {
  auto ops = chain();
  ops[0].deps = {3};
  CHECK_THROWS(with_host_timeline(ops, 1, {sim::us(int64_t{1}), sim::us(int64_t{1})}, {}, 0, 0));
}
