// Wave coalescing (GpuOptions::coalesce_waves): a run of identical waves is
// one simulator event, and the results are those of the one-event-per-wave
// schedule to the picosecond. Checked on seeded random mixes of kernels,
// launches and SM holds run both ways, and by event counts for a lone GEMM
// and for kernels with hundreds of thousands to ten million waves. GPU: the
// H100 SXM datasheet values of test_gpu_runtime.cpp.
#include <array>
#include <climits>
#include <cstdint>
#include <functional>
#include <vector>

#include "catch.h"
#include "gpu_test_specs.h"
#include "models/gpu/gpu.h"
#include "models/gpu/kernel_cost_model.h"
#include "sim/engine/random.h"
#include "sim/engine/simulator.h"

namespace gpu = gcsim::models::gpu;
namespace sim = gcsim::sim;

namespace {

using gcsim::test::h100_datasheet;

struct Span {
  sim::Time start, end;
  bool operator==(const Span&) const = default;
};

gpu::GpuOptions coalescing(bool on) {
  gpu::GpuOptions o;
  o.coalesce_waves = on;
  return o;
}

// Compute-only tiles of `tile_us` at the full bf16 rate per SM: with the
// 1 us tile overhead, waves of tile_us + 1 us whatever else runs, so wave
// boundaries land on whole microseconds and collide with the events below.
gpu::KernelDesc compute_tiles(int64_t tiles, double tile_us, int max_sms) {
  gpu::KernelDesc k;
  k.name = "compute tiles";
  k.unit = gpu::ExecUnit::tensor;
  k.efficiency = 1.0;
  k.flops_per_tile = 989e12 / 132 * tile_us * 1e-6;
  k.tiles = tiles;
  k.max_sms = max_sms;
  return k;
}

// Memory-bound tiles: their length depends on how many SMs share HBM.
gpu::KernelDesc streaming_tiles(int64_t tiles, double bytes_per_tile, int max_sms) {
  gpu::KernelDesc k;
  k.name = "streaming tiles";
  k.unit = gpu::ExecUnit::memory;
  k.bytes_per_tile = bytes_per_tile;
  k.tiles = tiles;
  k.max_sms = max_sms;
  return k;
}

// ---- random scenarios ------------------------------------------------------

struct KernelPlan {
  gpu::KernelDesc kernel;
  int64_t at_ps = 0;  // launch time, unless launched by a parent
  int parent = -1;    // launched from this kernel's completion callback
};

struct HoldPlan {
  int count = 0;
  int64_t at_ps = 0;       // when the hold is taken (unless parent >= 0)
  int64_t decided_ps = -1;  // >= 0: scheduled only at this earlier time
  int parent = -1;         // taken in this kernel's completion callback
  int64_t duration_ps = 0;  // released this long after it is taken
  bool after_grant = false;  // ... after it is granted instead, as a collective is
};

struct Plan {
  std::vector<KernelPlan> kernels;
  std::vector<HoldPlan> holds;
  std::vector<int64_t> samples_ps;  // free/busy/held read at these times
};

// A time in [0, range_us) us: half on whole microseconds (where the 11 us
// and 2 us rhythms of the kernels below meet), half anywhere.
int64_t random_time(sim::RandomStream& rng, int64_t range_us) {
  const int64_t us = static_cast<int64_t>(rng.uniform_int(static_cast<uint64_t>(range_us)));
  if (rng.uniform() < 0.5) return us * 1'000'000;
  return us * 1'000'000 + static_cast<int64_t>(rng.uniform_int(1'000'000));
}

template <typename T, size_t N>
T pick(sim::RandomStream& rng, const std::array<T, N>& options) {
  return options[rng.uniform_int(N)];
}

gpu::KernelDesc random_kernel(sim::RandomStream& rng, const gpu::GpuSpec& spec) {
  const std::array<int, 4> caps = {0, 0, 32, 100};
  switch (rng.uniform_int(7)) {
    case 0: {
      const std::array<int64_t, 7> dims = {16, 128, 1000, 1024, 2048, 4096, 8192};
      gpu::GemmShape g;
      g.m = pick(rng, dims);
      g.n = pick(rng, dims);
      g.k = pick(rng, dims);
      g.batch = 1 + static_cast<int64_t>(rng.uniform_int(3));
      g.dtype = rng.uniform() < 0.7 ? gpu::Dtype::bf16 : gpu::Dtype::fp8;
      return gpu::gemm_kernel(spec, g);
    }
    case 1: {
      gpu::AttentionShape a;
      a.batch = 1 + static_cast<int64_t>(rng.uniform_int(4));
      a.heads = pick(rng, std::array<int64_t, 3>{8, 16, 32});
      a.kv_heads = rng.uniform() < 0.5 ? a.heads : a.heads / 4;
      a.q_len = pick(rng, std::array<int64_t, 5>{1, 8, 300, 1024, 2048});
      a.kv_len = pick(rng, std::array<int64_t, 3>{0, 512, 4096});
      a.causal = rng.uniform() < 0.5;
      a.backward = rng.uniform() < 0.3;
      return gpu::attention_kernel(spec, a);
    }
    case 2: {
      gpu::MemoryOpShape m;
      m.kind = static_cast<gpu::MemoryOpKind>(rng.uniform_int(5));
      m.elements = 1 + static_cast<int64_t>(rng.uniform_int(uint64_t{1} << 28));
      m.rows = 1 + static_cast<int64_t>(rng.uniform_int(16384));
      m.cols = 1 + static_cast<int64_t>(rng.uniform_int(16384));
      m.inputs = 1 + static_cast<int>(rng.uniform_int(2));
      return gpu::memory_kernel(spec, m);
    }
    case 3:  // 11 us waves, possibly capped
      return compute_tiles(1 + static_cast<int64_t>(rng.uniform_int(3000)), 10.0, pick(rng, caps));
    case 4:  // 1.25 us waves: shorter than the 2 us launch latency
      return compute_tiles(1 + static_cast<int64_t>(rng.uniform_int(3000)), 0.25,
                           pick(rng, caps));
    case 5:  // memory bound: the wave length follows the SMs sharing HBM
      return streaming_tiles(1 + static_cast<int64_t>(rng.uniform_int(2000)),
                             1e5 * (1 + static_cast<double>(rng.uniform_int(20))),
                             pick(rng, caps));
    default: {
      const double u = rng.uniform();
      if (u < 0.2) return gpu::KernelDesc{.tiles = 0};  // an empty grid
      if (u < 0.3) {  // no work: waves of just the tile overhead (0 on some seeds)
        return gpu::KernelDesc{.tiles = 1 + static_cast<int64_t>(rng.uniform_int(1000))};
      }
      return compute_tiles(1 + static_cast<int64_t>(rng.uniform_int(600)), 10.0, 0);
    }
  }
}

// The H100 with, on some seeds, no launch latency (arrivals at the launch
// instant) or no tile overhead (zero-length waves for kernels with no work).
gpu::GpuSpec random_spec(sim::RandomStream& rng) {
  gpu::GpuSpec spec = h100_datasheet();
  spec.kernel_launch_latency = pick(rng, std::array<sim::Duration, 4>{
      sim::us(int64_t{2}), sim::us(int64_t{2}), sim::Duration::zero(), sim::ns(int64_t{700})});
  if (rng.uniform() < 0.1) spec.efficiency.tile_overhead = sim::Duration::zero();
  return spec;
}

// Three regimes: launches crowded into 3 ms (kernels overlap and share the
// SMs wave by wave: little to coalesce), spread over 30 ms (kernels mostly
// alone: long batches), or mostly chained from completions with holds
// taken in callbacks, as the cluster model drives a GPU.
Plan random_plan(sim::RandomStream& rng, const gpu::GpuSpec& spec) {
  Plan p;
  const int regime = static_cast<int>(rng.uniform_int(3));
  const int64_t range_us = regime == 0 ? 3'000 : 30'000;
  const double chained = regime == 2 ? 0.7 : 0.25;
  const int kernels = 4 + static_cast<int>(rng.uniform_int(21));
  for (int i = 0; i < kernels; ++i) {
    KernelPlan k;
    k.kernel = random_kernel(rng, spec);
    const double u = rng.uniform();
    if (i > 0 && u < chained) {
      k.parent = static_cast<int>(rng.uniform_int(static_cast<uint64_t>(i)));
    } else if (i > 0 && u < chained + 0.1) {
      k.at_ps = p.kernels[rng.uniform_int(static_cast<uint64_t>(i))].at_ps;  // together
    } else {
      k.at_ps = random_time(rng, range_us);
    }
    p.kernels.push_back(std::move(k));
  }
  // At most four holds of at most 33 SMs: never more than the 132 SMs.
  const int holds = static_cast<int>(rng.uniform_int(5));
  for (int i = 0; i < holds; ++i) {
    HoldPlan h;
    h.count = 1 + static_cast<int>(rng.uniform_int(33));
    h.duration_ps = random_time(rng, 800);
    const double u = rng.uniform();
    if (u < (regime == 2 ? 0.6 : 0.3)) {
      h.parent = static_cast<int>(rng.uniform_int(static_cast<uint64_t>(kernels)));
    } else {
      h.at_ps = random_time(rng, range_us);
      // Scheduled mid-run, so that at a shared instant it may follow a wave
      // end queued before it rather than precede it.
      if (u < (regime == 2 ? 0.8 : 0.65)) {
        h.decided_ps = static_cast<int64_t>(rng.uniform_int(static_cast<uint64_t>(h.at_ps) + 1));
      }
    }
    p.holds.push_back(h);
  }
  for (int i = 0; i < 20; ++i) p.samples_ps.push_back(random_time(rng, range_us + 1000));
  return p;
}

struct Outcome {
  std::vector<Span> spans;
  std::vector<int> completion_order;
  std::vector<std::array<int, 4>> samples;  // free, busy, held, reserved
  std::vector<int64_t> grants_ps;           // when each hold was granted (-1: never)
  uint64_t events = 0;
  bool operator==(const Outcome& o) const {
    return spans == o.spans && completion_order == o.completion_order && samples == o.samples &&
           grants_ps == o.grants_ps;
  }
};

Outcome run_plan(const Plan& p, const gpu::GpuSpec& spec, bool coalesce) {
  sim::Simulator s;
  gpu::Gpu g(s, spec, 0, coalescing(coalesce));
  Outcome out;
  out.spans.resize(p.kernels.size());
  out.grants_ps.assign(p.holds.size(), -1);
  auto take_hold = [&s, &g, &out, &p](const HoldPlan& h) {
    const size_t i = static_cast<size_t>(&h - p.holds.data());
    const sim::Duration d = sim::Duration::from_ps(h.duration_ps);
    if (h.after_grant) {
      g.hold_sms(h.count, [&s, &g, &out, i, d, c = h.count] {
        out.grants_ps[i] = s.now().ps();
        s.call_in(d, [&g, c] { g.release_sms(c); });
      });
    } else {
      g.hold_sms(h.count, [&s, &out, i] { out.grants_ps[i] = s.now().ps(); });
      s.call_in(d, [&g, c = h.count] { g.release_sms(c); });
    }
  };
  std::function<void(int)> launch = [&](int i) {
    g.launch(p.kernels[static_cast<size_t>(i)].kernel, [&, i](sim::Time start, sim::Time end) {
      out.spans[static_cast<size_t>(i)] = {start, end};
      out.completion_order.push_back(i);
      for (size_t c = 0; c < p.kernels.size(); ++c) {
        if (p.kernels[c].parent == i) launch(static_cast<int>(c));
      }
      for (const HoldPlan& h : p.holds) {
        if (h.parent == i) take_hold(h);
      }
    });
  };
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    if (p.kernels[i].parent >= 0) continue;
    s.call_at(sim::Time::from_ps(p.kernels[i].at_ps), [&launch, i] { launch(static_cast<int>(i)); });
  }
  for (const HoldPlan& h : p.holds) {
    if (h.parent >= 0) continue;
    const sim::Time at = sim::Time::from_ps(h.at_ps);
    if (h.decided_ps >= 0) {
      s.call_at(sim::Time::from_ps(h.decided_ps),
                [&s, &take_hold, &h, at] { s.call_at(at, [&take_hold, &h] { take_hold(h); }); });
    } else {
      s.call_at(at, [&take_hold, &h] { take_hold(h); });
    }
  }
  // Read after the GPU's scheduling pass of that instant (priority
  // 1'000'000): the settled state, the same in both schedules.
  out.samples.resize(p.samples_ps.size());
  for (size_t i = 0; i < p.samples_ps.size(); ++i) {
    s.call_at(
        sim::Time::from_ps(p.samples_ps[i]),
        [&out, &g, i] {
          out.samples[i] = {g.free_sms(), g.busy_sms(), g.held_sms(), g.reserved_sms()};
        },
        INT32_MAX);
  }
  s.run();
  out.events = s.events_executed();
  REQUIRE(out.completion_order.size() == p.kernels.size());
  return out;
}

}  // namespace

TEST_CASE("coalesced waves reproduce the per-wave schedule on random mixes", "[gpu]") {
  constexpr uint64_t kSeeds = 400;
  size_t kernels = 0;
  uint64_t events_on = 0, events_off = 0;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    INFO("seed " << seed);
    sim::RandomStream rng(seed, "wave batching equivalence");
    const gpu::GpuSpec spec = random_spec(rng);
    const Plan plan = random_plan(rng, spec);
    const Outcome off = run_plan(plan, spec, false);
    const Outcome on = run_plan(plan, spec, true);
    // Every kernel's start and end to the picosecond, the order in which
    // kernels complete (callbacks at one instant included), and the SMs
    // free, busy and held at the sampled times.
    REQUIRE(on.spans == off.spans);
    REQUIRE(on.completion_order == off.completion_order);
    REQUIRE(on.samples == off.samples);
    kernels += plan.kernels.size();
    events_on += on.events;
    events_off += off.events;
  }
  // 400 seeds of 4 to 24 kernels (plus holds): 5,504 kernels in all.
  CHECK(kernels == 5504);
  // Events when written: 1,889,858 per wave, 1,594,597 coalesced. These
  // mixes overlap kernels heavily, and hungry kernels side by side share the
  // SMs anew at every wave end (down to 1-SM waves): no two waves alike,
  // nothing to coalesce. The lone and stream cases below are where it pays.
  CHECK(events_on < events_off);
}

TEST_CASE("coalesced waves reproduce the per-wave schedule with persistent kernels", "[gpu]") {
  // The mixes above with about half the kernels persistent (keeping the SMs
  // of their first wave to their end, holds repaid only when they end) and
  // half the holds released a while after they are granted (the collective
  // pattern of the cluster model) instead of after they are requested. The
  // grant times are compared too.
  constexpr uint64_t kSeeds = 400;
  size_t kernels = 0, persistent = 0, granted = 0, holds = 0;
  uint64_t events_on = 0, events_off = 0;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    INFO("seed " << seed);
    sim::RandomStream rng(seed, "wave batching equivalence, persistent");
    const gpu::GpuSpec spec = random_spec(rng);
    Plan plan = random_plan(rng, spec);
    for (KernelPlan& k : plan.kernels) {
      k.kernel.persistent = rng.uniform() < 0.5;
      persistent += k.kernel.persistent;
    }
    for (HoldPlan& h : plan.holds) h.after_grant = rng.uniform() < 0.5;
    const Outcome off = run_plan(plan, spec, false);
    const Outcome on = run_plan(plan, spec, true);
    REQUIRE(on.spans == off.spans);
    REQUIRE(on.completion_order == off.completion_order);
    REQUIRE(on.samples == off.samples);
    REQUIRE(on.grants_ps == off.grants_ps);
    kernels += plan.kernels.size();
    holds += plan.holds.size();
    for (const int64_t t : on.grants_ps) granted += t >= 0;
    events_on += on.events;
    events_off += off.events;
  }
  // The mixes exercise what they should: persistent kernels, and holds
  // granted (most) or given back before their grant (a few).
  CHECK(persistent * 3 > kernels);
  CHECK(granted * 2 > holds);
  CHECK(events_on < events_off);
}

TEST_CASE("a lone 8192^3 GEMM takes 7 events instead of 35", "[gpu]") {
  const gpu::GpuSpec h100 = h100_datasheet();
  const gpu::KernelDesc gemm = gpu::gemm_kernel(h100, {8192, 8192, 8192, 1, gpu::Dtype::bf16});
  REQUIRE(gemm.tiles == 2048);  // 15 full waves of 132 and one of 68
  std::array<uint64_t, 2> events{};
  std::array<Span, 2> spans;
  for (const bool on : {false, true}) {
    sim::Simulator s;
    gpu::Gpu g(s, h100, 0, coalescing(on));
    s.call_at(sim::Time::zero(), [&] {
      g.launch(gemm, [&](sim::Time a, sim::Time b) { spans[on] = {a, b}; });
    });
    s.run();
    events[on] = s.events_executed();
  }
  CHECK(spans[1] == spans[0]);
  CHECK(spans[1].end.ps() == 1'451'132'129);  // test_gpu_persistent.cpp: 2 + 15 W + W68
  // Per wave: the launch closure, the arrival, and per wave its end plus a
  // scheduling pass (one more at arrival): 3 + 2 x 16 = 35.
  CHECK(events[0] == 35);
  // Coalesced: the launch closure, the arrival, the pass at 2 us, the first
  // wave's end (where the next 14 identical waves start as one run), that
  // run's end, the pass that starts the 68-tile wave, and its end (no pass
  // after it: nothing is waiting).
  CHECK(events[1] == 7);
}

TEST_CASE("coalescing splits a run exactly where a hold, release or arrival lands", "[gpu]") {
  const gpu::GpuSpec h100 = h100_datasheet();
  // 11 us waves from 2 us: boundaries at 13, 24, 35, ... us. The hold lands
  // inside a wave (30 us), the release exactly on a boundary (57 us), a
  // second kernel arrives inside a wave, and a hold decided at 50 us lands on
  // the 68 us boundary after that wave's end event was queued.
  auto run = [&h100](bool on) {
    sim::Simulator s;
    gpu::Gpu g(s, h100, 0, coalescing(on));
    std::array<Span, 2> spans;
    s.call_at(sim::Time::zero(), [&] {
      g.launch(compute_tiles(5000, 10.0, 0), [&](sim::Time a, sim::Time b) { spans[0] = {a, b}; });
    });
    s.call_at(sim::Time::zero() + sim::us(int64_t{30}), [&] { g.hold_sms(20); });
    s.call_at(sim::Time::zero() + sim::us(int64_t{57}), [&] { g.release_sms(20); });
    s.call_at(sim::Time::zero() + sim::us(int64_t{50}), [&] {
      s.call_at(sim::Time::zero() + sim::us(int64_t{68}), [&] { g.hold_sms(7); });
    });
    s.call_at(sim::Time::from_ps(140'500'000), [&] {
      g.launch(streaming_tiles(132, 1e6, 64), [&](sim::Time a, sim::Time b) { spans[1] = {a, b}; });
    });
    s.run();
    return std::pair(spans, s.events_executed());
  };
  const auto off = run(false);
  const auto on = run(true);
  CHECK(on.first == off.first);
  CHECK(on.second < off.second / 2);
}

TEST_CASE("a kernel of ten million waves takes a handful of events", "[gpu]") {
  const gpu::GpuSpec h100 = h100_datasheet();
  // 132 x 10^7 tiles of 11 us: 110 s of simulated time, 20 million events
  // per wave; coalesced: closure, arrival, pass, first wave end, run end.
  const gpu::KernelDesc k = compute_tiles(int64_t{132} * 10'000'000, 10.0, 0);
  sim::Simulator s;
  gpu::Gpu g(s, h100, 0);
  Span span;
  s.call_at(sim::Time::zero(), [&] { g.launch(k, [&](sim::Time a, sim::Time b) { span = {a, b}; }); });
  s.run();
  CHECK(span.end - sim::Time::zero() == gpu::isolated_time(h100, k, 132));
  CHECK(span.end.ps() == 110'000'002'000'000);
  CHECK(s.events_executed() < 100);
  CHECK(s.events_executed() == 5);
}

TEST_CASE("an attention op of batch 100000 and 1000 heads takes a handful of events", "[gpu]") {
  const gpu::GpuSpec h100 = h100_datasheet();
  gpu::AttentionShape a;
  a.batch = 100'000;
  a.heads = 1000;
  // One FA2 query block per (batch, head): 10^8 CTAs, two a SM (4 warps
  // each at head dim 128): 5 x 10^7 tiles, 378,788 waves.
  a.q_len = 128;
  const gpu::KernelDesc k = gpu::attention_kernel(h100, a);
  REQUIRE(gpu::wave_count(h100, k, 132) == 378'788);
  sim::Simulator s;
  gpu::Gpu g(s, h100, 0);
  Span span;
  s.call_at(sim::Time::zero(), [&] { g.launch(k, [&](sim::Time a0, sim::Time b) { span = {a0, b}; }); });
  s.run();
  CHECK(span.end - sim::Time::zero() == gpu::isolated_time(h100, k, 132));
  CHECK(s.events_executed() < 100);
}

TEST_CASE("a stream of kernels beside collectives takes under a third of the events", "[gpu]") {
  const gpu::GpuSpec h100 = h100_datasheet();
  // One stream as the cluster model drives a rank: 60 kernels back to back
  // (each launched at its predecessor's end), GEMMs, attention and norms of
  // a transformer layer, while collectives every 700 us hold 20 SMs
  // (NCCL channels) for 400 us, starting and ending inside waves.
  std::vector<gpu::KernelDesc> layer = {
      gpu::gemm_kernel(h100, {8192, 12288, 4096, 1, gpu::Dtype::bf16}),
      gpu::attention_kernel(h100, {.batch = 2, .heads = 32, .kv_heads = 8, .q_len = 4096,
                                   .causal = true}),
      gpu::gemm_kernel(h100, {8192, 4096, 4096, 1, gpu::Dtype::bf16}),
      gpu::memory_kernel(h100, {.kind = gpu::MemoryOpKind::rms_norm, .rows = 8192, .cols = 4096}),
      gpu::gemm_kernel(h100, {8192, 28672, 4096, 1, gpu::Dtype::bf16}),
      gpu::gemm_kernel(h100, {8192, 4096, 14336, 1, gpu::Dtype::bf16})};
  auto run = [&](bool on) {
    sim::Simulator s;
    gpu::Gpu g(s, h100, 0, coalescing(on));
    std::vector<Span> spans;
    std::function<void(size_t)> next = [&](size_t i) {
      if (i == 60) return;
      g.launch(layer[i % layer.size()], [&, i](sim::Time a, sim::Time b) {
        spans.push_back({a, b});
        next(i + 1);
      });
    };
    s.call_at(sim::Time::zero(), [&] { next(0); });
    for (int64_t t = 123; t < 40'000; t += 700) {
      s.call_at(sim::Time::zero() + sim::us(t), [&] { g.hold_sms(20); });
      s.call_at(sim::Time::zero() + sim::us(t + 400), [&] { g.release_sms(20); });
    }
    s.run();
    return std::pair(spans, s.events_executed());
  };
  const auto off = run(false);
  const auto on = run(true);
  REQUIRE(off.first.size() == 60);
  CHECK(on.first == off.first);
  // When written: 3,778 events per wave, 1,190 coalesced (about 20 per
  // kernel), most of those around each hold and release: the split, the
  // wave ending with its SMs repaid to the hold (a narrower restart), the
  // release's pass, which gives the kernel a second lane of 20 SMs, and each
  // lane's first end.
  CHECK(on.second * 3 < off.second);
}

TEST_CASE("two concurrent memcpys: nothing to coalesce, one pass fewer", "[gpu]") {
  // test_gpu_runtime.cpp's pair of 1 GiB copies launched together: 66 SMs
  // each, two waves each, all four ending in pairs at the same instants.
  const gpu::GpuSpec h100 = h100_datasheet();
  gpu::MemoryOpShape copy;
  copy.kind = gpu::MemoryOpKind::memcpy;
  copy.elements = int64_t{1} << 30;
  const gpu::KernelDesc k = gpu::memory_kernel(h100, copy);
  std::array<uint64_t, 2> events{};
  std::array<std::array<Span, 2>, 2> spans;
  for (const bool on : {false, true}) {
    sim::Simulator s;
    gpu::Gpu g(s, h100, 0, coalescing(on));
    for (int i = 0; i < 2; ++i) {
      s.call_at(sim::Time::zero(), [&, i, on] {
        g.launch(k, [&, i, on](sim::Time a, sim::Time b) { spans[on][i] = {a, b}; });
      });
    }
    s.run();
    events[on] = s.events_executed();
  }
  CHECK(spans[1] == spans[0]);
  CHECK(spans[1][0].end.ps() == 1'428'533'100);
  // Per wave: 2 launch closures, 2 arrivals, the pass at 2 us, 2 wave ends,
  // a pass, 2 wave ends, a pass: 11. Coalesced: each wave end finds the
  // other copy wanting SMs too (the pass splits them, no identical
  // restart), so only the last pass, with nothing waiting, is saved: 10.
  CHECK(events[0] == 11);
  CHECK(events[1] == 10);
}
