// Persistent kernels (KernelDesc::persistent) and holds that wait for SMs
// (Gpu::hold_sms with a `granted` callback), with hand-computed figures.
// What they model, measured on 2x H200 and 2x H100
// (calibration/measurements/h200-x2/, h100-x2/interference_2026-11-26): CTAs
// of equal-priority grids are dispatched in launch order, so an NCCL
// all-reduce launched beside a multi-wave Hopper cuBLAS GEMM gets its
// channel SMs only as the GEMM's last wave starts; a GEMM started while
// NCCL's 24 channel blocks are resident runs on the other 108 SMs and takes
// them back when they are released. Every case runs with waves coalesced
// and one event per wave.
//
// GPU: the H100 SXM datasheet values of test_gpu_runtime.cpp (132 SMs, 989
// TF/s bf16, 2 us launch latency, tensor efficiency 0.8, 1 us per wave).
// An 8192^3 bf16 GEMM is 2048 tiles of 128x256, each 2*128*256*8192 flops
// at 989e12*0.8/132 flop/s per SM = 89.568959 us, compute bound whatever
// else runs; its 196,608 B of loads overlap as the p-norm (p = 4,
// kGemmOverlapKnee), which adds 1.910 ns on 132 SMs (8.607713 us of loads),
// 0.856 ns on 108 (7.042690 us), 0.258 ns on 80, 0.135 ns on 68. Waves of
// W = 90.570869 us on 132 SMs, W108 = 90.569815, W80 = 90.569217, W68 =
// 90.569094 (1 us overhead included).
#include <cstdint>
#include <functional>
#include <vector>

#include "catch.h"
#include "gpu_test_specs.h"
#include "models/gpu/gpu.h"
#include "models/gpu/kernel_cost_model.h"
#include "sim/engine/simulator.h"

namespace gpu = gcsim::models::gpu;
namespace sim = gcsim::sim;

namespace {

using gcsim::test::h100_datasheet;

constexpr int64_t kUs = 1'000'000;         // ps per microsecond
constexpr int64_t kWave8192 = 90'570'869;  // W above, ps
constexpr int64_t kLastWave8192 = 90'569'094;  // W68 above: 68 tiles, ps
constexpr int64_t kLaunch = 2 * kUs;       // kernel_launch_latency

sim::Time at_ps(int64_t ps) { return sim::Time::from_ps(ps); }

gpu::GpuOptions coalescing(bool on) {
  gpu::GpuOptions o;
  o.coalesce_waves = on;
  return o;
}

gpu::GpuSpec hopper(bool persistent_gemm) {
  gpu::GpuSpec s = h100_datasheet();
  s.persistent_gemm = persistent_gemm;
  return s;
}

// Compute-only tiles of exactly `tile_us` at the full bf16 rate per SM:
// waves of tile_us + 1 us.
gpu::KernelDesc tiles_of(int64_t tiles, double tile_us, bool persistent, int max_sms = 0) {
  gpu::KernelDesc k;
  k.name = "compute tiles";
  k.unit = gpu::ExecUnit::tensor;
  k.efficiency = 1.0;
  k.flops_per_tile = 989e12 / 132 * tile_us * 1e-6;
  k.tiles = tiles;
  k.max_sms = max_sms;
  k.persistent = persistent;
  return k;
}

struct Span {
  int64_t start = -1, end = -1;  // ps
};

// Launches `k` at `when` (ps), recording its span.
void launch_at(sim::Simulator& s, gpu::Gpu& g, int64_t when, const gpu::KernelDesc& k, Span& out) {
  s.call_at(at_ps(when), [&g, k, &out] {
    g.launch(k, [&out](sim::Time a, sim::Time b) { out = {a.ps(), b.ps()}; });
  });
}

// Requests a hold of `count` SMs at `when` (ps); its grant time goes to `granted_ps`.
void hold_at(sim::Simulator& s, gpu::Gpu& g, int64_t when, int count, int64_t& granted_ps) {
  s.call_at(at_ps(when), [&s, &g, count, &granted_ps] {
    g.hold_sms(count, [&s, &granted_ps] { granted_ps = s.now().ps(); });
  });
}

struct Sms {
  int free = -1, busy = -1, held = -1, reserved = -1;
  bool operator==(const Sms&) const = default;
};

// Reads the SM counts at `when` (ps), after the GPU's pass of that instant.
void sample_at(sim::Simulator& s, const gpu::Gpu& g, int64_t when, Sms& out) {
  s.call_at(
      at_ps(when),
      [&g, &out] {
        out = {g.free_sms(), g.busy_sms(), g.held_sms(), g.reserved_sms()};
      },
      INT32_MAX);
}

}  // namespace

TEST_CASE("a hold asked mid-GEMM waits for the GEMM's last wave", "[gpu]") {
  for (const bool coalesce : {false, true}) {
    INFO((coalesce ? "waves coalesced" : "one event per wave"));
    for (const bool persistent : {true, false}) {
      INFO((persistent ? "persistent GEMM" : "one CTA per tile"));
      const gpu::GpuSpec spec = hopper(persistent);
      const gpu::KernelDesc gemm = gpu::gemm_kernel(spec, {8192, 8192, 8192, 1, gpu::Dtype::bf16});
      REQUIRE(gemm.persistent == persistent);
      REQUIRE(gemm.tiles == 2048);  // 15 waves of 132 tiles and one of 68
      sim::Simulator s;
      gpu::Gpu g(s, spec, 0, coalescing(coalesce));
      Span span;
      int64_t granted = -1;
      Sms after_wave1, in_last_wave, after_end;
      launch_at(s, g, 0, gemm, span);
      hold_at(s, g, 10 * kUs, 24, granted);  // NCCL's 24 channels, mid first wave
      sample_at(s, g, kLaunch + kWave8192 + 1, after_wave1);
      sample_at(s, g, 1400 * kUs, in_last_wave);
      sample_at(s, g, kLaunch + 15 * kWave8192 + kLastWave8192 + 1, after_end);
      s.run();
      // Persistent or not, the GEMM launched first has its CTAs dispatched
      // first: alone on all 132 SMs, 16 waves, 2 + 15 W + W68 = 1451.132129 us.
      // The hold gets no SM at the first 15 wave boundaries; the last wave
      // (2 + 15 W = 1360.563035 us) runs 68 tiles and the hold takes 24 of
      // the 64 SMs the grid has no CTA left for.
      CHECK(span.end == kLaunch + 15 * kWave8192 + kLastWave8192);
      CHECK(span.end == 1'451'132'129);
      CHECK(granted == kLaunch + 15 * kWave8192);
      CHECK(granted == 1'360'563'035);
      CHECK(after_wave1 == Sms{0, 132, 0, 0});
      CHECK(in_last_wave == Sms{40, 68, 24, 0});
      CHECK(after_end == Sms{108, 0, 24, 0});
    }
  }
}

TEST_CASE("a persistent GEMM launched beside 24 held SMs takes them back when released", "[gpu]") {
  // 2048 tiles on 132 - 24 = 108 SMs: ceil(2048/108) = 19 waves if the hold
  // stayed. It is released at 500 us, inside the GEMM's 6th wave (2 + 5 W108 =
  // 454.849075 to 2 + 6 W108 = 545.418890 us): a persistent GEMM's queued CTAs
  // take the 24 SMs at that wave's end, 6 x 108 = 648 tiles in; the other
  // 1400 run on 132 SMs, 10 waves of 132 and one of 80: 2 + 6 W108 +
  // 10 W + W80 = 1541.696797 us. A GEMM of one CTA per tile widens at the release itself
  // (a second lane of 24 SMs, 45 us earlier): 672 tiles by 500 us, 132 a
  // wave after, its 56 last tiles start on the 108-SM lane at 2 + 16 W, so
  // it too ends then.
  for (const bool coalesce : {false, true}) {
    INFO((coalesce ? "waves coalesced" : "one event per wave"));
    Span lane[2];
    for (const bool persistent : {true, false}) {
      const gpu::GpuSpec spec = hopper(persistent);
      const gpu::KernelDesc gemm = gpu::gemm_kernel(spec, {8192, 8192, 8192, 1, gpu::Dtype::bf16});
      sim::Simulator s;
      gpu::Gpu g(s, spec, 0, coalescing(coalesce));
      int64_t granted = -1;
      hold_at(s, g, 0, 24, granted);  // before the launch: all 132 SMs are free
      launch_at(s, g, 0, gemm, lane[persistent]);
      s.call_at(at_ps(500 * kUs), [&g] { g.release_sms(24); });
      Sms mid;
      sample_at(s, g, 600 * kUs, mid);
      s.run();
      CHECK(granted == 0);  // at once, at the request
      CHECK(gpu::wave_count(spec, gemm, 108) == 19);
      if (persistent) {
        CHECK(lane[1].start == kLaunch);
        // 2 + 6 W108 + 10 W + W80 = 1541.696797 us (the waves' widths
        // differ by their loads' share only: 17 W to within 25 ns).
        CHECK(lane[1].end == kLaunch + 6 * 90'569'815 + 10 * kWave8192 + 90'569'217);
        CHECK(lane[1].end == 1'541'696'797);
        CHECK(mid == Sms{0, 132, 0, 0});  // grown back at 545.418890 us
      } else {
        CHECK(mid.busy == 132);
      }
    }
    CHECK(lane[0].end == lane[1].end);
  }
}

TEST_CASE("a hold's callback fires exactly at its grant, holds granted in order", "[gpu]") {
  const gpu::GpuSpec spec = hopper(false);
  for (const bool coalesce : {false, true}) {
    INFO((coalesce ? "waves coalesced" : "one event per wave"));
    SECTION("on an idle GPU: at the request, zero SMs too") {
      sim::Simulator s;
      gpu::Gpu g(s, spec, 0, coalescing(coalesce));
      int64_t granted = -1, empty = -1;
      int held_then = -1;
      s.call_at(at_ps(5 * kUs), [&] {
        g.hold_sms(10, [&] {
          granted = s.now().ps();
          held_then = g.held_sms();
        });
      });
      hold_at(s, g, 6 * kUs, 0, empty);
      s.run();
      CHECK(granted == 5 * kUs);
      CHECK(held_then == 10);
      CHECK(empty == 6 * kUs);
    }
    SECTION("owed SMs: oldest hold first, each at the wave end that completes it") {
      // Two 66-SM kernels land together at 2 us (max_sms 66 each): K1's one
      // wave of 10 us tiles ends at 13 us, K2's of 20 us tiles at 23 us. A
      // (60 SMs, asked at 5 us) is owed before B (40, asked at 6 us): K1's
      // 66 SMs give A its 60 at 13 us and B 6; K2's end gives B the other
      // 34 at 23 us.
      sim::Simulator s;
      gpu::Gpu g(s, spec, 0, coalescing(coalesce));
      Span k1, k2;
      int64_t a = -1, b = -1;
      launch_at(s, g, 0, tiles_of(66, 10.0, false, 66), k1);
      launch_at(s, g, 0, tiles_of(66, 20.0, false, 66), k2);
      hold_at(s, g, 5 * kUs, 60, a);
      hold_at(s, g, 6 * kUs, 40, b);
      Sms at_15us;
      sample_at(s, g, 15 * kUs, at_15us);
      s.run();
      CHECK(k1.end == 13 * kUs);
      CHECK(k2.end == 23 * kUs);
      CHECK(a == 13 * kUs);
      CHECK(b == 23 * kUs);
      CHECK(at_15us == Sms{0, 66, 66, 0});
    }
    SECTION("behind a kernel launched before it and not yet landed") {
      // In one event at t = 0, a kernel of 132 tiles (10 us each) is
      // launched and then 20 SMs are asked for: the hold waits for the
      // kernel to land (2 us), which takes all 132 SMs; its wave ends at
      // 13 us and repays the hold. Asked before the launch, the hold is
      // granted at once and the kernel runs 112 + 20 tiles: 2 waves, 24 us.
      for (const bool launch_first : {true, false}) {
        INFO((launch_first ? "launch, then hold" : "hold, then launch"));
        sim::Simulator s;
        gpu::Gpu g(s, spec, 0, coalescing(coalesce));
        Span k;
        int64_t granted = -1;
        s.call_at(sim::Time::zero(), [&] {
          auto launch = [&] {
            g.launch(tiles_of(132, 10.0, false), [&](sim::Time x, sim::Time y) {
              k = {x.ps(), y.ps()};
            });
          };
          auto hold = [&] { g.hold_sms(20, [&] { granted = s.now().ps(); }); };
          if (launch_first) {
            launch();
            hold();
          } else {
            hold();
            launch();
          }
        });
        s.run();
        CHECK(granted == (launch_first ? 13 * kUs : 0));
        CHECK(k.end == (launch_first ? 13 * kUs : 24 * kUs));
      }
    }
    SECTION("between two kernels: after the older's last wave starts, before the younger") {
      // In one event at t = 0: K1 (200 tiles of 10 us), a hold of 24 SMs,
      // K2 (1320 tiles of 10 us), as Megatron issues a weight-gradient GEMM
      // after the input gradient's reduce-scatter. Both land at 2 us. While
      // K1 cannot start its last tiles the hold waits and K1 and K2 share
      // the SMs (66 / 66 at 2 and 13 us). At 24 us K1's last 68 tiles
      // start, then the hold takes 24 of the 64 SMs left, then K2 the
      // other 40 (before holds kept launch order K2 took all 64 and the
      // hold waited for K1's end at 35 us).
      sim::Simulator s;
      gpu::Gpu g(s, spec, 0, coalescing(coalesce));
      Span k1, k2;
      int64_t granted = -1;
      s.call_at(sim::Time::zero(), [&] {
        g.launch(tiles_of(200, 10.0, false), [&](sim::Time x, sim::Time y) { k1 = {x.ps(), y.ps()}; });
        g.hold_sms(24, [&] { granted = s.now().ps(); });
        g.launch(tiles_of(1320, 10.0, false), [&](sim::Time x, sim::Time y) { k2 = {x.ps(), y.ps()}; });
      });
      Sms at_25us;
      sample_at(s, g, 25 * kUs, at_25us);
      s.run();
      CHECK(k1.start == 2 * kUs);
      CHECK(k1.end == 35 * kUs);
      CHECK(granted == 24 * kUs);
      CHECK(k2.start == 2 * kUs);
      CHECK(at_25us == Sms{0, 108, 24, 0});
    }
  }
}

TEST_CASE("a persistent kernel keeps its first SMs: no re-sharing at wave boundaries", "[gpu]") {
  for (const bool coalesce : {false, true}) {
    INFO((coalesce ? "waves coalesced" : "one event per wave"));
    SECTION("a kernel launched beside it waits for its end") {
      // A: 1320 tiles of 10 us on 132 SMs, 10 waves of 11 us from 2 us: ends
      // at 112 us. B: 10 tiles, launched at 5 us, lands at 7 us with no SM
      // free. Persistent A keeps every SM: B runs 112 to 123 us. With one
      // CTA per tile, A's first wave end (13 us) shares the 132 SMs between
      // A (1188 tiles left) and B (10): B takes 10, runs 13 to 24 us.
      for (const bool persistent : {true, false}) {
        INFO((persistent ? "A persistent" : "A one CTA per tile"));
        sim::Simulator s;
        gpu::Gpu g(s, h100_datasheet(), 0, coalescing(coalesce));
        Span a, b;
        launch_at(s, g, 0, tiles_of(1320, 10.0, persistent), a);
        launch_at(s, g, 5 * kUs, tiles_of(10, 10.0, false), b);
        s.run();
        if (persistent) {
          CHECK(a.end == 112 * kUs);
          CHECK(b.start == 112 * kUs);
          CHECK(b.end == 123 * kUs);
        } else {
          CHECK(b.start == 13 * kUs);
          CHECK(b.end == 24 * kUs);
        }
      }
    }
    SECTION("landing together: persistent kernels take their SMs in launch order") {
      // A (660 tiles) and B (66 tiles) land together at 2 us, A launched
      // first. Persistent, A takes all 132 SMs (measured on an H100: a GEMM
      // enqueued first runs at full width beside another op): 5 waves of
      // 11 us, ends at 57 us; B waits for it and ends at 68 us. With one
      // CTA per tile they split 66 / 66: B ends at 13 us, then A takes all
      // 132: 594 tiles, 5 waves (4 of 132, one of 66): 68 us.
      for (const bool persistent : {true, false}) {
        INFO((persistent ? "persistent" : "one CTA per tile"));
        sim::Simulator s;
        gpu::Gpu g(s, h100_datasheet(), 0, coalescing(coalesce));
        Span a, b;
        launch_at(s, g, 0, tiles_of(660, 10.0, persistent), a);
        launch_at(s, g, 0, tiles_of(66, 10.0, persistent), b);
        Sms at_50us;
        sample_at(s, g, 50 * kUs, at_50us);
        s.run();
        CHECK(b.end == (persistent ? 68 : 13) * kUs);
        CHECK(a.end == (persistent ? 57 : 68) * kUs);
        CHECK(at_50us == Sms{0, 132, 0, 0});
      }
    }
    SECTION("landing on few free SMs, it grows into SMs that come free") {
      // 100 SMs held at 0; a persistent kernel of 320 tiles lands at 2 us
      // on the 32 free ones (waves of 11 us: 2-13, 13-24 us). The hold goes
      // at 20 us, mid-wave; at 24 us (64 tiles in) the kernel restarts on
      // its 32 SMs and grows by the 100 free ones (its queued CTAs): 132
      // tiles 24-35 us, then the last 124 (the 8 SMs it has no tile for come
      // free) 35-46 us.
      sim::Simulator s;
      gpu::Gpu g(s, h100_datasheet(), 0, coalescing(coalesce));
      Span k;
      int64_t granted = -1;
      hold_at(s, g, 0, 100, granted);
      launch_at(s, g, 0, tiles_of(320, 10.0, true), k);
      s.call_at(at_ps(20 * kUs), [&g] { g.release_sms(100); });
      Sms at_50us;
      sample_at(s, g, 50 * kUs, at_50us);
      s.run();
      CHECK(granted == 0);
      CHECK(k.end == 46 * kUs);
      CHECK(at_50us == Sms{132, 0, 0, 0});
    }
  }
}

TEST_CASE("releasing: held SMs go to the oldest owed hold, the excess cancels the newest",
          "[gpu]") {
  // The pool semantics of SmArray::release, with callbacks: the held SMs a
  // release gives back go first to the holds still owed SMs, oldest first;
  // releasing more than is held cancels the newest holds' owed parts, and
  // a hold cancelled before any SM reached it never calls back.
  const gpu::GpuSpec spec = h100_datasheet();
  SECTION("released SMs complete an older hold") {
    // a (30) is granted at 0; a kernel of 102 tiles of 10 us runs on the
    // other 102 SMs, one wave, 2 to 13 us; b (40), asked at 5 us when the
    // kernel has every tile started, is owed. a's release at 7 us hands its
    // 30 SMs to b; the wave ending at 13 us repays b's last 10.
    sim::Simulator s;
    gpu::Gpu g(s, spec, 0);
    Span k;
    int64_t a = -1, b = -1;
    hold_at(s, g, 0, 30, a);
    launch_at(s, g, 0, tiles_of(102, 10.0, false), k);
    hold_at(s, g, 5 * kUs, 40, b);
    s.call_at(at_ps(7 * kUs), [&g] { g.release_sms(30); });
    Sms at_9us;
    sample_at(s, g, 9 * kUs, at_9us);
    s.run();
    CHECK(a == 0);
    CHECK(b == 13 * kUs);
    CHECK(at_9us == Sms{0, 102, 30, 0});
    CHECK(g.held_sms() == 40);
  }
  SECTION("releasing a hold not yet granted cancels it") {
    // All 132 SMs run 10 us tiles from 2 us: one wave (2-13 us), or four
    // (to 13, 24, 35, 46 us). b (40) is asked at 5 us, c (10) at 6 us: owed
    // behind the single wave, deferred behind the kernel with waves to go.
    // Nothing is held at 7 us, so release_sms(10) cancels c, the newest.
    // b is granted at the end of the single wave (13 us); deferred, it is
    // served as the last wave starts (35 us), finds no SM free, and is
    // granted at that wave's end (46 us).
    for (const int waves : {1, 4}) {
      INFO(waves << " waves");
      sim::Simulator s;
      gpu::Gpu g(s, spec, 0);
      Span k;
      int64_t b = -1, c = -1;
      launch_at(s, g, 0, tiles_of(132 * waves, 10.0, false), k);
      hold_at(s, g, 5 * kUs, 40, b);
      hold_at(s, g, 6 * kUs, 10, c);
      s.call_at(at_ps(7 * kUs), [&g] { g.release_sms(10); });
      s.run();
      CHECK(b == (waves == 1 ? 13 : 46) * kUs);
      CHECK(c == -1);
      CHECK(g.held_sms() == 40);
    }
  }
}
