// The causal grid's tail (models/gpu/attention_grid_tail.h) against a case
// worked by hand and against cuDNN SDPA measured alone on one H100
// (calibration/measurements/h100-sxm/attention_grid_size_2026-11-27/README.md:
// s 4096, d 128, time per (batch, head) against the b8 h8 grid).
#include <cstdint>
#include <vector>

#include "catch.h"
#include "models/gpu/attention_grid_tail.h"
#include "models/gpu/attention_kernel_model.h"
#include "models/gpu/kernel_cost_model.h"
#include "preset_fixtures.h"

namespace gpu = gcsim::models::gpu;

namespace {

gpu::AttentionShape sdpa(int64_t batch, int64_t heads, bool causal, bool backward) {
  gpu::AttentionShape a;
  a.batch = batch;
  a.heads = heads;
  a.q_len = 4096;
  a.head_dim = 128;
  a.causal = causal;
  a.backward = backward;
  a.family = gpu::AttentionFamily::cudnn;
  return a;
}

// The grid's tail times its waves per (batch, head): the model's time per
// pair in units of the mean tile, so a ratio of two grids is the ratio of
// their kernel times per unit of work (overheads aside).
double per_pair(const gpu::GpuSpec& spec, const gpu::AttentionShape& a) {
  const auto t = gpu::fused_attention_terms(spec, a);
  return t.tail * static_cast<double>(t.waves) / static_cast<double>(a.batch * a.heads);
}

}  // namespace

TEST_CASE("attention grid tail: a small causal grid by hand", "[gpu][attention]") {
  // Causal 512 x 512, 128 x 128 blocks: forward CTAs run 1, 2, 3, 4 key
  // blocks; backward (64-row query blocks) key block j runs 8 - 2j.
  gpu::AttentionShape a;
  a.q_len = 512;
  a.causal = true;
  CHECK(gpu::blocks_per_cta(a, 128, 128) == std::vector<int64_t>{1, 2, 3, 4});
  a.backward = true;
  CHECK(gpu::blocks_per_cta(a, 64, 128) == std::vector<int64_t>{8, 6, 4, 2});
  // 2 slots, in order: slot A takes 1, B 2; A (free at 1) takes 3 -> 4;
  // B (free at 2) takes 4 -> 6. Makespan 6.
  CHECK(gpu::list_makespan({1, 2, 3, 4}, 1, 2) == 6.0);
  // The wave model charges ceil(4 / 2) = 2 waves of the mean 2.5 = 5: tail 1.2.
  a.backward = false;
  const gpu::CtaSharing one{};
  CHECK(gpu::attention_grid_tail(gpu::AttentionFamily::cudnn, a, 128, 128, 2, one) ==
        Approx(1.2).epsilon(1e-12));
  // Longest first (flash3's LPT order): 4, 3 -> 3 + 2 = 5, 4 + 1 = 5: no tail.
  CHECK(gpu::attention_grid_tail(gpu::AttentionFamily::flash3, a, 128, 128, 2, one) ==
        Approx(1.0).epsilon(1e-12));
  // Two CTAs a SM with nothing known of how they share it (flash2's 4-warp
  // forward): no tail charged (not measured).
  CHECK(gpu::attention_grid_tail(gpu::AttentionFamily::flash2, a, 128, 128, 2, one, 2) == 1.0);
  // Full attention: equal CTAs, no tail.
  a.causal = false;
  CHECK(gpu::attention_grid_tail(gpu::AttentionFamily::cudnn, a, 128, 128, 2, one) == 1.0);
}

TEST_CASE("attention grid schedule: CTAs sharing an SM, latency-bound alone, by hand",
          "[gpu][attention]") {
  // CTAs of 1, 2, 3, 4 key blocks. A lone CTA reaches half the SM's rate
  // (lone_fraction 0.5) and pays 1 block of fixed latency; two share an SM.
  const gpu::CtaSharing two{2, 0.5, 1.0};
  // 2 SMs: 4 CTAs, n = min(2, 4 / 2) = 2 a SM; each takes
  // max((1 + w) / 0.5, 2 w) = 2 + 2w: 4, 6, 8, 10, all resident at once
  // (4 slots): makespan 10 block-times.
  CHECK(gpu::shared_makespan({1, 2, 3, 4}, 1, 2, two) == Approx(10.0).epsilon(1e-12));
  // 1 SM, 2 slots: A takes 4, B 6; A (free at 4) takes 8 -> 12; B (free
  // at 6) takes 10 -> 16.
  CHECK(gpu::shared_makespan({1, 2, 3, 4}, 1, 1, two) == Approx(16.0).epsilon(1e-12));
  // One CTA a SM, latency-bound alone without fixed latency: each takes
  // max(w / 0.5, w) = 2w: 2, 4, 6, 8 on 2 SMs: A 2, B 4; A takes 6 -> 8; B
  // takes 8 -> 12.
  CHECK(gpu::shared_makespan({1, 2, 3, 4}, 1, 2, gpu::CtaSharing{1, 0.5, 0.0}) ==
        Approx(12.0).epsilon(1e-12));
  // Many CTAs: 8 equal CTAs of 3 blocks on 2 SMs, 2 a SM: n = min(2, 8 /
  // 2) = 2, each max((1 + 3) / 0.5, 2 x 3) = 8 (latency-bound: sharing
  // alone would give 6), 2 rounds on 4 slots: 16.
  CHECK(gpu::shared_makespan({3, 3, 3, 3}, 2, 2, two) == Approx(16.0).epsilon(1e-12));
  // Trivial sharing is plain list scheduling: 6 (the case above).
  CHECK(gpu::shared_makespan({1, 2, 3, 4}, 1, 2, gpu::CtaSharing{}) == 6.0);
  // The tail against the wave model: causal 512 x 512 with 128 x 128 blocks
  // (1, 2, 3, 4). 2 SMs: tiles ceil(4 / 2) = 2, one wave of the mean tile
  // (10 / 2 = 5 block-times): 10 / 5 = 2. 1 SM: 2 waves of 5: 16 / 10 = 1.6.
  gpu::AttentionShape a;
  a.q_len = 512;
  a.causal = true;
  CHECK(gpu::attention_grid_tail(gpu::AttentionFamily::cudnn, a, 128, 128, 2, two) ==
        Approx(2.0).epsilon(1e-12));
  CHECK(gpu::attention_grid_tail(gpu::AttentionFamily::cudnn, a, 128, 128, 1, two) ==
        Approx(1.6).epsilon(1e-12));
  // Full attention is scheduled too once CTAs share: 4 CTAs of 4 blocks on
  // 2 SMs, each max((1 + 4) / 0.5, 2 x 4) = 10, one round: 10 against one
  // wave of the mean tile (2 x 4 = 8): 1.25.
  a.causal = false;
  CHECK(gpu::attention_grid_tail(gpu::AttentionFamily::cudnn, a, 128, 128, 2, two) ==
        Approx(1.25).epsilon(1e-12));
}

TEST_CASE("attention grid tail: cuDNN SDPA's small grids on an H100", "[gpu][attention]") {
  const gpu::GpuSpec h100 = gcsim::test::gpu_preset("h100-sxm");
  REQUIRE(h100.sm_count == 132);
  // Backward (cuDNN's 64-key CTAs two a SM, a lone one latency-bound: the
  // preset's sharing, fitted on the serving grids): measured per (batch,
  // head) over b8 h8 (attention_grid_size_2026-11-27): causal b1 h16 1.214,
  // b1 h32 1.068, full b1 h16 1.030. Plain list scheduling of one CTA a SM
  // (calibration/fit/attention_grid_tail.py) gave 1.197, 1.066 and 1.000,
  // the preset's schedule 1.202 for b1 h16 causal: within 3.5% of each, the
  // tolerance here (nothing is fitted to these grids).
  struct Case {
    int64_t heads;
    bool causal;
    double measured;
  };
  for (const Case& c : {Case{16, true, 1.214}, Case{32, true, 1.068}, Case{16, false, 1.030}}) {
    const double ratio =
        per_pair(h100, sdpa(1, c.heads, c.causal, true)) / per_pair(h100, sdpa(8, 8, c.causal, true));
    INFO("b1 h" << c.heads << (c.causal ? " causal" : " full") << " bwd");
    CHECK(ratio == Approx(c.measured).epsilon(0.035));
  }
  // Forward (two 64-row CTAs a SM, a lone one latency-bound): the kernel's
  // time against the measured spacing of back-to-back calls
  // (attention_grid_size.json, time_us; the spacing's memset and gap stand
  // in for gcsim's launch latency). Nothing fitted to these grids: causal
  // within 5% (the refit's report gives -1.6 .. +0.3% on the H100 profile);
  // full attention, which the fit puts 5-6% above the measurement at every
  // grid size (its causal and full shapes share one efficiency), within
  // 0 .. +10%.
  struct Timed {
    int64_t batch, heads;
    bool causal;
    double us;
  };
  for (const Timed& c : {Timed{1, 8, true, 95.0}, Timed{1, 16, true, 151.5}, Timed{1, 32, true, 261.7},
                         Timed{8, 8, true, 480.2}, Timed{1, 8, false, 105.7},
                         Timed{1, 16, false, 206.5}, Timed{1, 32, false, 411.5},
                         Timed{8, 8, false, 817.5}}) {
    const auto a = sdpa(c.batch, c.heads, c.causal, false);
    const double us = gpu::isolated_time(h100, gpu::attention_kernel(h100, a), h100.sm_count).microseconds();
    INFO("b" << c.batch << " h" << c.heads << (c.causal ? " causal" : " full") << " fwd: gcsim " << us
             << " us, measured " << c.us);
    if (c.causal) {
      CHECK(us == Approx(c.us).epsilon(0.05));
    } else {
      CHECK(us >= c.us);
      CHECK(us <= 1.10 * c.us);
    }
  }
}
