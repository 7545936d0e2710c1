// The interference model of an overlapped collective (models/gpu/
// interference.h, models/cluster/collective_hbm.h) against hand numbers:
// the HBM share arithmetic, the HBM bytes an algorithm moves, and the Gpu
// runtime giving kernel waves the HBM left beside a collective's load.
// GPU: H100 SXM datasheet (gpu_test_specs.h): 132 SMs, 3350 GB/s x 0.9 =
// 3015 GB/s achieved, 2 us launch latency, 1 us tile overhead.
#include <cstdint>
#include <stdexcept>

#include "catch.h"
#include "gpu_test_specs.h"
#include "preset_fixtures.h"
#include "models/cluster/collective_hbm.h"
#include "models/gpu/gpu.h"
#include "models/gpu/hbm.h"
#include "models/gpu/interference.h"
#include "models/gpu/kernel_cost_model.h"
#include "sim/engine/simulator.h"

namespace gpu = gcsim::models::gpu;
namespace sim = gcsim::sim;
using gcsim::models::cluster::collective_hbm_bytes;
using gcsim::models::collectives::CollectiveOp;

namespace {

constexpr double kB = 3015e9;  // achieved HBM bandwidth of h100_datasheet(), bytes/s

gpu::GpuOptions with_interference(double kernel_sensitivity) {
  gpu::GpuOptions o;
  o.interference.enabled = true;
  o.interference.kernel_sensitivity = kernel_sensitivity;
  return o;
}

// 132 tiles, each exactly 10 us of HBM traffic at the even share B / 132.
gpu::KernelDesc streaming_wave() {
  gpu::KernelDesc k;
  k.name = "stream";
  k.unit = gpu::ExecUnit::memory;
  k.tiles = 132;
  k.bytes_per_tile = kB / 132 * 10e-6;
  return k;
}

// `tiles` compute-only tiles of exactly 10 us at the full bf16 rate per SM.
gpu::KernelDesc ten_us_tiles(int64_t tiles) {
  gpu::KernelDesc k;
  k.name = "tiles";
  k.unit = gpu::ExecUnit::tensor;
  k.efficiency = 1.0;
  k.flops_per_tile = 989e12 / 132 * 10e-6;
  k.tiles = tiles;
  return k;
}

double us(sim::Time t) { return static_cast<double>(t.ps()) * 1e-6; }

}  // namespace

TEST_CASE("interference: HBM shared max-min fairly per SM", "[gpu][interference]") {
  // A streaming kernel on 108 SMs that could take all of B, and an
  // all-reduce on 24 SMs wanting 0.4 B: each side gets its SMs' share, the
  // collective 24/132 B (measured on 2x H100: an add beside a 256 MiB
  // all-reduce 1.22x slower, the all-reduce 2.7x).
  CHECK(gpu::collective_hbm_share(kB, 108, kB, 24, 0.4 * kB) == Approx(24.0 / 132.0 * kB));
  CHECK(gpu::kernel_hbm_fraction(kB, 108, kB, 24, 0.4 * kB) == Approx(108.0 / 132.0));
  // A GEMM pulling 0.1 B leaves the collective all it wants: B - r to kernels.
  CHECK(gpu::collective_hbm_share(kB, 108, 0.1 * kB, 24, 0.4 * kB) == Approx(0.4 * kB));
  CHECK(gpu::kernel_hbm_fraction(kB, 108, 0.1 * kB, 24, 0.4 * kB) == Approx(0.6));
  // In between: the collective gets what the kernels leave, B - D = 0.3 B.
  CHECK(gpu::collective_hbm_share(kB, 108, 0.7 * kB, 24, 0.4 * kB) == Approx(0.3 * kB));
  // Nothing streams: everything to kernels.
  CHECK(gpu::kernel_hbm_fraction(kB, 108, kB, 24, 0.0) == 1.0);
  CHECK_THROWS_AS(gpu::collective_hbm_share(0.0, 1, 1.0, 1, 1.0), std::invalid_argument);
  CHECK_THROWS_AS(gpu::collective_hbm_share(kB, 1, -1.0, 1, 1.0), std::invalid_argument);
}

TEST_CASE("interference: stretches of the kernel and of the collective", "[gpu][interference]") {
  // u = 1/3 of B streamed by collectives, sensitivity 0.6: 1 + 0.6/3.
  CHECK(gpu::kernel_compute_stretch(kB, kB / 3, 0.6) == Approx(1.2));
  // u is at most 1.
  CHECK(gpu::kernel_compute_stretch(kB, 2 * kB, 0.6) == Approx(1.6));
  CHECK(gpu::kernel_compute_stretch(kB, 0.0, 0.6) == 1.0);
  // Beside the streaming kernel: 0.4 / (24/132) = 2.2 from HBM, times
  // 1 + 0.3 x 108/132 for the busy SMs.
  CHECK(gpu::collective_stretch(kB, 108, kB, 24, 0.4 * kB, 108.0 / 132.0, 0.3) ==
        Approx(2.2 * (1.0 + 0.3 * 108.0 / 132.0)));
  // Beside a GEMM's 0.1 B only the busy SMs count (0.8 x 0.25).
  CHECK(gpu::collective_stretch(kB, 108, 0.1 * kB, 24, 0.4 * kB, 0.8, 0.25) == Approx(1.2));
  CHECK(gpu::collective_stretch(kB, 0, 0.0, 24, 0.4 * kB, 0.0, 0.25) == 1.0);
}

TEST_CASE("interference: HBM bytes per GPU of NCCL's algorithms", "[gpu][interference]") {
  const double s = 1 << 30;
  // Ring all-reduce: input S + output S + 2 x 2(n-1)/n S through staging.
  CHECK(collective_hbm_bytes(CollectiveOp::all_reduce, s, 2) == Approx(4.0 * s));
  CHECK(collective_hbm_bytes(CollectiveOp::all_reduce, s, 4) == Approx(5.0 * s));
  // Per wire byte (2(n-1)/n S sent): 2 + n/(n-1): 4 at n = 2, 10/3 at n = 4.
  CHECK(collective_hbm_bytes(CollectiveOp::all_reduce, s, 4) / (1.5 * s) == Approx(10.0 / 3.0));
  // Reduce-scatter (S in) and all-gather (S out) on 4: S + S/4 + 2 x 3/4 S.
  CHECK(collective_hbm_bytes(CollectiveOp::reduce_scatter, s, 4) == Approx(2.75 * s));
  CHECK(collective_hbm_bytes(CollectiveOp::all_gather, s, 4) == Approx(2.75 * s));
  // ... per wire byte (3/4 S): 2 + (n+1)/(n-1) = 11/3.
  CHECK(collective_hbm_bytes(CollectiveOp::all_gather, s, 4) / (0.75 * s) == Approx(11.0 / 3.0));
  CHECK(collective_hbm_bytes(CollectiveOp::all_to_all, s, 4) == Approx(3.5 * s));
  CHECK(collective_hbm_bytes(CollectiveOp::broadcast, s, 8) == Approx(3.0 * s));
  CHECK(collective_hbm_bytes(CollectiveOp::all_reduce, s, 1) == 0.0);
  CHECK_THROWS_AS(collective_hbm_bytes(CollectiveOp::all_reduce, s, 0), std::invalid_argument);
}

TEST_CASE("interference: the per-SM HBM share with part of B taken", "[gpu][interference]") {
  const gpu::GpuSpec h100 = gcsim::test::h100_datasheet();
  // 132 active SMs, 70% of B left: 0.7 B / 132 (under the 2 B / 132 cap).
  CHECK(gpu::hbm_bandwidth_per_sm(h100, 132, 0.7).bytes_per_s() == Approx(0.7 * kB / 132));
  // One SM alone: capped by what one SM can pull, 2 B / 132.
  CHECK(gpu::hbm_bandwidth_per_sm(h100, 1, 0.7).bytes_per_s() == Approx(2.0 * kB / 132));
  CHECK(gpu::hbm_bandwidth_per_sm(h100, 132, 1.0).bytes_per_s() ==
        gpu::hbm_bandwidth_per_sm(h100, 132).bytes_per_s());
  CHECK_THROWS_AS(gpu::hbm_bandwidth_per_sm(h100, 132, 0.0), std::invalid_argument);
}

TEST_CASE("interference: kernel waves beside a collective's HBM load", "[gpu][interference]") {
  const gpu::GpuSpec h100 = gcsim::test::h100_datasheet();
  SECTION("a streaming kernel beside 24 held SMs gets its SMs' share") {
    sim::Simulator s;
    gpu::Gpu g(s, h100, 0, with_interference(0.6));
    sim::Time end;
    s.call_at(sim::Time::zero(), [&] {
      g.hold_sms(24);
      g.add_hbm_load(kB / 3);
      g.launch(streaming_wave(), [&](sim::Time, sim::Time e) { end = e; });
    });
    s.run();
    // A memory-bound kernel spreads (models/gpu/memory_spread.h): its work
    // goes to the 108 SMs left, one wave of 108 tiles of 10 x 132/108 us
    // each at B/132. At its own pace (the 108 SMs draw B: this spec has no
    // clock, so the hard knee min(1, 108 x 2/132)) 10 + 1 us, pulling
    // 10/11 B; the collective's 24 SMs get their fair 24/132 B, the kernel
    // 108/132 B: 10 x 132/108 = 12.222 + 1 us. (Without the load: 2 + 11
    // us; with one tile per SM, as before, a wave of 108 and one of 24:
    // 2 + 11 + 6 = 19 us.) To 2 ps: each traffic time is rounded once to 1 ps.
    CHECK(us(end) == Approx(2.0 + 10.0 * 132.0 / 108.0 + 1.0).margin(2e-6));
    CHECK(g.hbm_load() == Approx(kB / 3));
    g.remove_hbm_load(kB / 3);
    CHECK(g.hbm_load() == 0.0);
  }
  SECTION("a compute tile's arithmetic stretches; a wave in flight keeps its length") {
    sim::Simulator s;
    gpu::Gpu g(s, h100, 0, with_interference(0.6));
    sim::Time end;
    s.call_at(sim::Time::zero(), [&] {
      g.launch(ten_us_tiles(264), [&](sim::Time, sim::Time e) { end = e; });
    });
    // Arrives while the first wave (2 .. 13 us) runs: the second wave is
    // 10 x (1 + 0.6/3) + 1 = 13 us.
    s.call_at(sim::Time::zero() + sim::us(int64_t{5}), [&] { g.add_hbm_load(kB / 3); });
    s.run();
    CHECK(us(end) == Approx(2.0 + 11.0 + 13.0).epsilon(1e-9));
  }
  SECTION("a fused (cuDNN) attention kernel: SMs, HBM share, its own sensitivity") {
    // SDPA backward, b 2, h 32, s 4096, d 128, causal: compute-bound tiles
    // (its q, k, v, o and gradients are a small part of each tile's time).
    // Beside 24 held SMs and a load of B/3 (attention_sensitivity 0.6) it runs
    // on 108 SMs and every tile's arithmetic takes 1 + 0.6/3 = 1.2x: the
    // waves of 108 tiles are 1.2 x compute + the two per-wave overheads.
    // (B/3 of the preset's own achieved bandwidth.)
    gpu::AttentionShape a;
    a.batch = 2;
    a.heads = 32;
    a.q_len = 4096;
    a.causal = true;
    a.backward = true;
    a.family = gpu::AttentionFamily::cudnn;
    const gpu::GpuSpec spec = gcsim::test::gpu_preset("h100-sxm");  // its fitted cuDNN figures
    const gpu::KernelDesc k = gpu::attention_kernel(spec, a);
    REQUIRE(k.unit == gpu::ExecUnit::tensor);
    const gpu::TileCost c = gpu::tile_cost(spec, k, 108);
    REQUIRE(c.memory * 2 < c.compute);  // compute-bound even on a third less HBM
    sim::Simulator s;
    gpu::GpuOptions o = with_interference(0.0);  // GEMMs' sensitivity: not used here
    o.interference.attention_sensitivity = 0.6;
    gpu::Gpu g(s, spec, 0, o);
    sim::Time end;
    s.call_at(sim::Time::zero(), [&] {
      g.hold_sms(24);
      g.add_hbm_load(gpu::achieved_hbm_bandwidth(spec).bytes_per_s() / 3);
      g.launch(k, [&](sim::Time, sim::Time e) { end = e; });
    });
    s.run();
    const int64_t waves = gpu::wave_count(spec, k, 108);
    const double wave_us = us(sim::Time::zero() + c.compute) * 1.2 +
                           us(sim::Time::zero() + spec.efficiency.tile_overhead) +
                           us(sim::Time::zero() + k.extra_wave_overhead);
    CHECK(us(end) == Approx(us(sim::Time::zero() + spec.kernel_launch_latency + k.setup) +
                            static_cast<double>(waves) * wave_us)
                         .epsilon(1e-6));
  }
  SECTION("a memory kernel's issue-bound tiles take memory_sensitivity, not the GEMMs'") {
    // 132 tiles of a memory-unit kernel timed by their arithmetic (10 us at
    // the vector rate, 1 KiB of traffic each: PyTorch's non-vectorised
    // passes): beside a load of B/3 with kernel_sensitivity 0.6 the tiles
    // keep their length under memory_sensitivity 0 (the default: measured
    // in the DP4 step, models/gpu/interference.h) and take 1 + 0.6/3 = 1.2x
    // their arithmetic under memory_sensitivity 0.6 (10 x 0.2 = 2 us more).
    // No SM held: one wave either way.
    gpu::KernelDesc k;
    k.name = "issue-bound pass";
    k.unit = gpu::ExecUnit::memory;
    k.efficiency = 1.0;
    k.bandwidth_efficiency = 1.0;
    k.tiles = 132;
    k.bytes_per_tile = 1024.0;
    k.flops_per_tile = 1.0;
    const sim::Duration unit = gpu::tile_cost(h100, k, 132).compute;
    REQUIRE(unit > sim::Duration::zero());
    k.flops_per_tile = 10e-6 / unit.seconds();  // 10 us of arithmetic per tile
    REQUIRE(gpu::tile_cost(h100, k, 132).memory * 10 < gpu::tile_cost(h100, k, 132).compute);
    auto run = [&](bool load, double memory_sensitivity) {
      sim::Simulator s;
      gpu::GpuOptions o = with_interference(0.6);
      o.interference.memory_sensitivity = memory_sensitivity;
      gpu::Gpu g(s, h100, 0, o);
      sim::Time end;
      s.call_at(sim::Time::zero(), [&] {
        if (load) g.add_hbm_load(kB / 3);
        g.launch(k, [&](sim::Time, sim::Time e) { end = e; });
      });
      s.run();
      return us(end);
    };
    // The tile's arithmetic as the cost model times it (the launch and
    // per-wave overheads are the rest of `alone` and do not stretch).
    const double arithmetic = us(sim::Time::zero() + gpu::tile_cost(h100, k, 132).compute);
    const double alone = run(false, 0.0);
    // ~10 us: the one-flop probe above is rounded to whole picoseconds.
    CHECK(arithmetic == Approx(10.0).epsilon(0.02));
    CHECK(run(true, 0.0) == Approx(alone).epsilon(1e-9));
    CHECK(run(true, 0.6) == Approx(alone + 0.2 * arithmetic).epsilon(1e-3));
  }
  SECTION("off: the same load changes nothing") {
    sim::Simulator s;
    gpu::GpuOptions off = with_interference(0.6);
    off.interference.enabled = false;
    gpu::Gpu g(s, h100, 0, off);
    sim::Time end;
    s.call_at(sim::Time::zero(), [&] {
      g.add_hbm_load(kB / 3);
      g.launch(ten_us_tiles(132), [&](sim::Time, sim::Time e) { end = e; });
    });
    s.run();
    CHECK(us(end) == Approx(13.0).epsilon(1e-9));
  }
  SECTION("removing a load never added is a bug") {
    sim::Simulator s;
    gpu::Gpu g(s, h100, 0, with_interference(0.6));
    CHECK_THROWS_AS(g.remove_hbm_load(1.0), std::logic_error);
  }
}

TEST_CASE("interference: the GPU integrates busy SMs and HBM demand", "[gpu][interference]") {
  const gpu::GpuSpec h100 = gcsim::test::h100_datasheet();
  sim::Simulator s;
  gpu::Gpu g(s, h100, 0, with_interference(0.6));
  s.call_at(sim::Time::zero(), [&] {
    g.launch(ten_us_tiles(132), nullptr);
    g.launch(streaming_wave(), nullptr);
  });
  s.run();
  const gpu::GpuActivityIntegral a = g.activity_integral();
  // The GEMM-like kernel: 132 SMs for 11 us, no bytes; then the streaming
  // one: 132 SMs for 11 us moving 132 x B/132 x 10 us at its own pace.
  CHECK(a.busy_sm_seconds == Approx(2 * 132 * 11e-6));
  CHECK(a.hbm_demand_bytes == Approx(kB * 10e-6));
}
