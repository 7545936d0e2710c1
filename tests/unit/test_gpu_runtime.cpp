// The Gpu runtime on the simulator: a kernel alone reproduces the cost
// model's closed form to the picosecond, and concurrent kernels and
// communication holds share the SMs as hand-computed below. GPU: H100 SXM
// from datasheet values (REFERENCE.md hardware table; NVIDIA H100 datasheet):
// 132 SMs, 989 TF/s bf16, 3350 GB/s, 80 GB; 2 us launch latency; default
// GpuEfficiency (tensor 0.8, hbm 0.9, tile overhead 1 us).
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include "catch.h"
#include "gpu_test_specs.h"
#include "models/gpu/gpu.h"
#include "models/gpu/kernel_cost_model.h"
#include "models/gpu/sm_array.h"
#include "sim/engine/simulator.h"

namespace gpu = gcsim::models::gpu;
namespace sim = gcsim::sim;

namespace {

using gcsim::test::h100_datasheet;

struct Span {
  sim::Time start, end;
  bool operator==(const Span&) const = default;
};

// Launches `kernel` at `at` and records its span into `out`.
void launch_at(sim::Simulator& s, gpu::Gpu& g, sim::Time at, const gpu::KernelDesc& kernel,
               Span& out) {
  s.call_at(at, [&g, kernel, &out] {
    g.launch(kernel, [&out](sim::Time start, sim::Time end) { out = {start, end}; });
  });
}

// A compute-only tile of exactly 10 us at the full bf16 rate per SM.
gpu::KernelDesc ten_us_tiles(int64_t tiles) {
  gpu::KernelDesc k;
  k.unit = gpu::ExecUnit::tensor;
  k.efficiency = 1.0;
  k.flops_per_tile = 989e12 / 132 * 10e-6;
  k.tiles = tiles;
  return k;
}

gpu::KernelDesc memcpy_1gib(const gpu::GpuSpec& spec) {
  gpu::MemoryOpShape copy;
  copy.kind = gpu::MemoryOpKind::memcpy;
  copy.elements = int64_t{1} << 30;
  return gpu::memory_kernel(spec, copy);
}

}  // namespace

TEST_CASE("a kernel alone reproduces isolated_time to the picosecond", "[gpu]") {
  const gpu::GpuSpec h100 = h100_datasheet();
  gpu::AttentionShape prefill;
  prefill.batch = 1;
  prefill.heads = 32;
  prefill.kv_heads = 8;
  prefill.q_len = 8192;
  prefill.causal = true;
  gpu::AttentionShape decode = prefill;
  decode.batch = 16;
  decode.q_len = 1;
  decode.kv_len = 3000;
  gpu::KernelDesc capped = ten_us_tiles(100);
  capped.max_sms = 32;  // 4 waves: 32, 32, 32, 4
  const std::vector<gpu::KernelDesc> kernels = {
      gpu::gemm_kernel(h100, {8192, 8192, 8192, 1, gpu::Dtype::bf16}),
      gpu::gemm_kernel(h100, {4096, 4096, 4096, 1, gpu::Dtype::bf16}),
      gpu::gemm_kernel(h100, {1024, 1024, 1024, 1, gpu::Dtype::bf16}),
      gpu::gemm_kernel(h100, {16, 4096, 4096, 1, gpu::Dtype::bf16}),
      gpu::gemm_kernel(h100, {4096, 1000, 333, 7, gpu::Dtype::fp8}),
      memcpy_1gib(h100),
      gpu::attention_kernel(h100, prefill),
      gpu::attention_kernel(h100, decode),
      capped};
  // Each also as a persistent kernel (KernelDesc::persistent): alone, it
  // runs the same waves, of width min(tiles, 132, max_sms) until the last.
  std::vector<gpu::KernelDesc> both;
  for (gpu::KernelDesc k : kernels) {
    both.push_back(k);
    k.persistent = true;
    both.push_back(k);
  }
  for (const gpu::KernelDesc& k : both) {
    for (const bool coalesce : {false, true}) {
      INFO(k.name << (k.persistent ? ", persistent" : "")
                  << (coalesce ? ", waves coalesced" : ", one event per wave"));
      sim::Simulator s;
      gpu::GpuOptions options;
      options.coalesce_waves = coalesce;
      gpu::Gpu g(s, h100, 0, options);
      Span span;
      const sim::Time t0 = sim::Time::zero() + sim::us(int64_t{5});
      launch_at(s, g, t0, k, span);
      s.run();
      CHECK(span.end - t0 == gpu::isolated_time(h100, k, 132));
      // A kernel's setup (split decode's combine) runs before its first wave.
      CHECK(span.start - t0 == h100.kernel_launch_latency + k.setup);
      if (!coalesce) {
        // One event per wave, not per tile: the launch closure, the arrival,
        // and per wave its end plus one scheduling pass (and one at arrival).
        CHECK(s.events_executed() == uint64_t(3 + 2 * gpu::wave_count(h100, k, 132)));
      } else {
        // At most: closure, arrival, pass, first wave's end, the end of the
        // run of identical waves after it, and the last partial wave's pass
        // and end (test_gpu_wave_batching.cpp).
        CHECK(s.events_executed() <= 7);
      }
      CHECK(g.free_sms() == 132);
      CHECK(g.reserved_sms() == 0);
    }
  }
}

TEST_CASE("two concurrent memory-bound kernels each take about twice their solo time", "[gpu]") {
  const gpu::GpuSpec h100 = h100_datasheet();
  const gpu::KernelDesc copy = memcpy_1gib(h100);  // 132 tiles of 2 GiB / 132
  sim::Simulator s;
  gpu::Gpu g(s, h100, 0);
  Span a, b;
  launch_at(s, g, sim::Time::zero(), copy, a);
  launch_at(s, g, sim::Time::zero(), copy, b);
  s.run();
  // Solo: 2 + 712.266550 + 1 = 715.266550 us. Together each gets 66 SMs;
  // all 132 SMs are busy, so each SM's HBM share is still 3015e9/132 B/s and a
  // tile still takes 712.266550 us: two waves each, both ending at
  // 2 + 2 x 713.266550 = 1428.533100 us (1.997x solo).
  const sim::Duration solo = gpu::isolated_time(h100, copy, 132);
  CHECK(solo.ps() == 715'266'550);
  CHECK(a.end.ps() == 1'428'533'100);
  CHECK(b.end == a.end);
  CHECK((a.end - sim::Time::zero()).seconds() / solo.seconds() == Approx(1.997).epsilon(0.001));
}

TEST_CASE("free SMs are water-filled: a small kernel's surplus goes to the big one", "[gpu]") {
  const gpu::GpuSpec h100 = h100_datasheet();
  sim::Simulator s;
  gpu::Gpu g(s, h100, 0);
  Span small, big;
  launch_at(s, g, sim::Time::zero(), ten_us_tiles(10), small);
  launch_at(s, g, sim::Time::zero(), ten_us_tiles(1000), big);
  int busy_at_5us = -1;
  s.call_at(sim::Time::zero() + sim::us(int64_t{5}), [&] { busy_at_5us = g.busy_sms(); });
  s.run();
  // At 2 us: even split is 66/66, but the small kernel needs only 10 SMs, so
  // the big one gets 122. All 132 SMs are busy.
  CHECK(busy_at_5us == 132);
  // Small: one wave, 2 + 11 = 13 us.
  CHECK(small.end.ps() == 13'000'000);
  // Big: 122 tiles by 13 us, then 878 left on 132 SMs = 7 waves (6 full + 86):
  // 8 waves of 11 us after the 2 us launch = 90 us.
  CHECK(big.end.ps() == 90'000'000);
}

TEST_CASE("a GEMM beside 20 held SMs runs ceil(tiles/112) waves", "[gpu]") {
  const gpu::GpuSpec h100 = h100_datasheet();
  const gpu::KernelDesc gemm = gpu::gemm_kernel(h100, {8192, 8192, 8192, 1, gpu::Dtype::bf16});
  sim::Simulator s;
  gpu::Gpu g(s, h100, 0);
  g.hold_sms(20);  // e.g. NCCL with 20 channels
  CHECK(g.held_sms() == 20);
  CHECK(g.free_sms() == 112);
  Span with_hold;
  launch_at(s, g, sim::Time::zero(), gemm, with_hold);
  s.run();
  // 2048 tiles on 112 SMs: ceil(2048/112) = 19 waves instead of 16. Each wave
  // is compute bound (89.568959 us + 1 us overhead), its 196,608 B of loads
  // overlapped as the p-norm (p = 4, kGemmOverlapKnee): + 0.990 ns on 112
  // SMs (7.303 us of loads), + 0.119 ns on the last wave's 32 (4.304 us):
  // 2 + 18 x 90.569949 + 90.569078 = 1722.828160 us, 271.696031 us longer
  // than the solo 1451.132129 us (2 + 15 x 90.570869 + 90.569094: 132 SMs,
  // then 68).
  CHECK(gpu::wave_count(h100, gemm, 112) == 19);
  CHECK(with_hold.end.ps() == 1'722'828'160);
  CHECK((with_hold.end - with_hold.start) + h100.kernel_launch_latency -
            gpu::isolated_time(h100, gemm, 132) ==
        sim::ps(271'696'031));

  g.release_sms(20);
  CHECK(g.free_sms() == 132);
  CHECK(g.held_sms() == 0);
  Span after;
  const sim::Time t1 = s.now();
  launch_at(s, g, t1, gemm, after);
  s.run();
  CHECK((after.end - t1).ps() == 1'451'132'129);
}

TEST_CASE("a hold on a busy GPU waits for the running kernel's last wave", "[gpu]") {
  // CTAs of equal-priority grids are dispatched in launch order: the GEMM
  // launched first keeps all 132 SMs until its 16th and last wave (68
  // tiles, from 2 + 15 W = 1360.563035 us), where the hold takes 20 of the
  // 64 SMs left; the GEMM is not slowed (2 + 15 W + W68 = 1451.132129 us;
  // W = 90.570869, W68 = 90.569094 us: test_gpu_persistent.cpp).
  const gpu::GpuSpec h100 = h100_datasheet();
  const gpu::KernelDesc gemm = gpu::gemm_kernel(h100, {8192, 8192, 8192, 1, gpu::Dtype::bf16});
  sim::Simulator s;
  gpu::Gpu g(s, h100, 0);
  Span span;
  launch_at(s, g, sim::Time::zero(), gemm, span);
  int held_at_10us = -1, held_after_wave1 = -1, busy_after_wave1 = -1, held_last = -1;
  s.call_at(sim::Time::zero() + sim::us(int64_t{10}), [&] {
    g.hold_sms(20);  // deferred behind the GEMM's unstarted tiles
    held_at_10us = g.held_sms();
  });
  s.call_at(sim::Time::from_ps(1'360'563'035 + 1), [&] { held_last = g.held_sms(); });
  // First wave: 2 us to 92.570869 us; sample just after.
  s.call_at(sim::Time::from_ps(92'570'869 + 1), [&] {
    held_after_wave1 = g.held_sms();
    busy_after_wave1 = g.busy_sms();
  });
  s.run();
  CHECK(held_at_10us == 0);
  CHECK(held_after_wave1 == 0);
  CHECK(busy_after_wave1 == 132);
  CHECK(held_last == 20);
  CHECK(span.end.ps() == 1'451'132'129);
}

TEST_CASE("the SM array refuses holds beyond the GPU and tracks debt", "[gpu]") {
  gpu::SmArray sms(132);
  sms.start_tiles(130);
  CHECK(sms.hold(24) == 2);  // 2 free now, 22 owed
  CHECK(sms.debt() == 22);
  sms.finish_tiles(30);  // 22 repay the debt, 8 free
  CHECK(sms.held() == 24);
  CHECK(sms.free() == 8);
  CHECK_THROWS_AS(sms.hold(109), std::invalid_argument);  // 24 + 109 > 132
  sms.release(24);
  CHECK(sms.free() == 32);
}

TEST_CASE("HBM capacity: allocate beyond capacity fails, peak is tracked", "[gpu]") {
  const gpu::GpuSpec h100 = h100_datasheet();  // 80 GB = 80e9 B
  sim::Simulator s;
  gpu::Gpu g(s, h100, 0);
  CHECK(g.allocate(sim::Bytes(60'000'000'000)));
  CHECK_FALSE(g.allocate(sim::Bytes(30'000'000'000)));   // 90 GB > 80 GB
  CHECK(g.memory_used() == sim::Bytes(60'000'000'000));  // refused: unchanged
  CHECK(g.allocate(sim::Bytes(20'000'000'000)));         // exactly full
  CHECK_FALSE(g.allocate(sim::Bytes(1)));
  g.free(sim::Bytes(70'000'000'000));
  CHECK(g.memory_used() == sim::Bytes(10'000'000'000));
  CHECK(g.memory_peak() == sim::Bytes(80'000'000'000));
  CHECK_THROWS_AS(g.free(sim::Bytes(10'000'000'001)), std::invalid_argument);
}

TEST_CASE("the GPU runtime is deterministic", "[gpu]") {
  const gpu::GpuSpec h100 = h100_datasheet();
  auto run_once = [&h100] {
    sim::Simulator s;
    gpu::Gpu g(s, h100, 0);
    std::vector<Span> spans(6);
    launch_at(s, g, sim::Time::zero(), gpu::gemm_kernel(h100, {4096, 4096, 4096, 1}), spans[0]);
    launch_at(s, g, sim::Time::zero(), memcpy_1gib(h100), spans[1]);
    launch_at(s, g, sim::Time::zero() + sim::us(int64_t{7}),
              gpu::gemm_kernel(h100, {16, 4096, 4096, 1}), spans[2]);
    launch_at(s, g, sim::Time::zero() + sim::us(int64_t{7}), ten_us_tiles(300), spans[3]);
    s.call_at(sim::Time::zero() + sim::us(int64_t{50}), [&g] { g.hold_sms(16); });
    s.call_at(sim::Time::zero() + sim::us(int64_t{400}), [&g] { g.release_sms(16); });
    launch_at(s, g, sim::Time::zero() + sim::us(int64_t{60}), ten_us_tiles(1), spans[4]);
    launch_at(s, g, sim::Time::zero() + sim::us(int64_t{60}), gpu::KernelDesc{.tiles = 0},
              spans[5]);
    s.run();
    return std::pair(spans, s.events_executed());
  };
  const auto first = run_once();
  const auto second = run_once();
  CHECK(first == second);
  // An empty grid completes at its arrival: 60 + 2 us.
  CHECK(first.first[5].end.ps() == 62'000'000);
  for (const Span& sp : first.first) CHECK(sp.end >= sp.start);
}

TEST_CASE("launch refuses a kernel the GPU has no rate for", "[gpu]") {
  gpu::GpuSpec no_fp8 = h100_datasheet();
  no_fp8.tensor_peak[static_cast<size_t>(gpu::Dtype::fp8)] = sim::FlopRate();  // as on an A100
  sim::Simulator s;
  gpu::Gpu g(s, no_fp8, 0);
  gpu::KernelDesc k = ten_us_tiles(4);
  k.dtype = gpu::Dtype::fp8;
  CHECK_THROWS_AS(g.launch(k, nullptr), std::invalid_argument);
  CHECK(s.events_pending() == 0);
}
