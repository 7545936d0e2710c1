// The fitted eager-kernel bandwidth fractions of the MoE layer
// (workloads/moe/moe_layer.h, EagerKernelEfficiency, fitted on the 2-H200
// measurements) must stay inside the ranges the hardware allows; a refit
// that leaves them has absorbed something else and must be looked at.
#include "catch.h"
#include "workloads/moe/moe_layer.h"

using namespace gcsim::workloads::moe;  // NOLINT: the host profiles and their ranges

// Little's law on an H200: bandwidth = bytes in flight / DRAM latency.
// 132 SMs x 64 resident warps, ~700 ns to DRAM, 4.8 TB/s peak. A kernel off
// the vectorized path loads one bf16 per thread: 64 B per warp and load.
// One load in flight per warp gives 132 x 64 x 64 B / 700 ns = 0.77 TB/s,
// 0.16 of peak; PyTorch's elementwise loop keeps 4 loads in flight per
// thread (thread_work_size 4), at most 0.64. So a non-vectorized,
// non-atomic kernel sits in [0.15, 0.65] of streaming bandwidth.
constexpr double kUnvectorizedLow = 0.15, kUnvectorizedHigh = 0.65;
// index_add_ adds each bf16 row element with an atomicAdd, a read-modify-
// write in L2 on top of its load, so half of each bound: the atomic is a
// fire-and-forget reduction (no return value), so the loads still keep at
// least one in flight per warp (0.16 / 2), at most the unrolled 0.64 / 2.
constexpr double kAtomicLow = 0.08, kAtomicHigh = kUnvectorizedHigh / 2;

TEST_CASE("moe: fitted eager kernel efficiencies lie in their physical ranges", "[moe][fit]") {
  const EagerKernelEfficiency e;
  // Broadcast multiply x * w[:, None]: stride-0 operand, unvectorized.
  CHECK(e.broadcast >= kUnvectorizedLow);
  CHECK(e.broadcast <= kUnvectorizedHigh);
  // SwiGLU on the two strided halves of fc1's output: unvectorized loads.
  CHECK(e.strided >= kUnvectorizedLow);
  CHECK(e.strided <= kUnvectorizedHigh);
  // Atomic bf16 index_add_.
  CHECK(e.atomic >= kAtomicLow);
  CHECK(e.atomic <= kAtomicHigh);
  // The atomic kernel does the broadcast kernel's loads plus an L2
  // read-modify-write per element: it cannot be the faster one.
  CHECK(e.atomic < e.broadcast);
}

// The host profiles' costs (EagerHostCost, read from each machine's host
// timings by calibration/fit/moe_host_costs.py). A Python call that
// launches a kernel costs at least the CUDA driver's launch and PyTorch's
// dispatch (a few µs each on any server CPU: 3 µs together) and, like the
// framework profiles' fitted per-kernel cost (48.6 µs), well under 200 µs;
// the router's calls (top-k launches a sort) and the permute's gather are
// no cheaper than a plain launch. An NCCL call is an aten op plus
// ProcessGroupNCCL's work (events, the grouped send/recv plan and launch):
// no cheaper than a kernel, at most 400 µs. Reading the counts back is a
// device-to-host copy and a stream synchronize's wake-up (2 µs at least),
// at most 200 µs.
TEST_CASE("moe: host profiles' costs lie in their physical ranges", "[moe][fit]") {
  REQUIRE(host_profile_names().size() == 3);
  for (const std::string& name : host_profile_names()) {
    INFO(name);
    const EagerHostCost* h = host_profile(name);
    REQUIRE(h != nullptr);
    CHECK(h->modelled);
    CHECK(h->profile == name);
    for (double call : {h->router_us, h->permute_us, h->launch_us, h->expert_us}) {
      CHECK(call >= kHostCallMinUs);
      CHECK(call <= kHostCallMaxUs);
    }
    // The loop's fixed cost: its first iteration (a few of its calls'
    // worth, 4-6 measured) and the output's allocation; below a millisecond.
    for (double loop : {h->loop_fwd_us, h->loop_bwd_us}) {
      CHECK(loop >= h->expert_us);
      CHECK(loop <= 10 * h->expert_us);
      CHECK(loop <= kHostLoopMaxUs);
    }
    CHECK(h->router_us >= h->launch_us);
    CHECK(h->permute_us >= h->launch_us);
    CHECK(h->collective_us >= h->launch_us);
    CHECK(h->collective_us <= kHostNcclMaxUs);
    CHECK(h->sync_us >= kHostSyncMinUs);
    CHECK(h->sync_us <= kHostSyncMaxUs);
    // The slowest rank's pace: no faster than a typical rank, under 2x.
    CHECK(h->slowest_rank >= 1.0);
    CHECK(h->slowest_rank <= kHostSlowestRankMax);
  }
  CHECK(eager_host_cost().profile == "h200");
  CHECK(host_profile("h300") == nullptr);
}

TEST_CASE("moe: eager kernel efficiencies follow the SMs, not HBM, on another GPU", "[moe][fit]") {
  const EagerKernelEfficiency h200;
  // The fit's own GPU: unchanged.
  const auto same = h200.on_gpu(132, 4.8e12);
  CHECK(same.atomic == h200.atomic);
  CHECK(same.broadcast == h200.broadcast);
  CHECK(same.strided == h200.strided);
  // An H100 (132 SMs, 3.35 TB/s): the same bytes per second, a larger
  // share of its HBM: 0.17 x 4.8 / 3.35 = 0.2436.
  const auto h100 = h200.on_gpu(132, 3.35e12);
  CHECK(h100.atomic == Approx(0.17 * 4.8 / 3.35));
  CHECK(h100.broadcast == Approx(0.33 * 4.8 / 3.35));
  CHECK(h100.strided == Approx(0.37 * 4.8 / 3.35));
  // Half the SMs at the same bandwidth: half the loads in flight.
  CHECK(h200.on_gpu(66, 4.8e12).atomic == Approx(0.085));
  // Never above streaming.
  CHECK(h200.on_gpu(132, 1.0e12).strided == 1.0);
}
