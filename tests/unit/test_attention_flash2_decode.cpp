// flash2's decode (models/gpu/attention_flash2_decode.h) against
// FlashAttention-2's num_splits_heuristic worked by hand and against
// hand-computed times on a round-number GPU: 100 SMs, 1000 TF/s bf16,
// 3000 GB/s at hbm efficiency 0.9 (2.7e12 B/s achieved), launch 2 us, tile
// overhead 0, sm_bandwidth_headroom 2.
#include <cstdint>

#include "catch.h"
#include "round_gpu.h"
#include "models/gpu/attention_flash2_decode.h"
#include "models/gpu/kernel_cost_model.h"

namespace gpu = gcsim::models::gpu;
namespace sim = gcsim::sim;

namespace {

gpu::GpuSpec round_gpu() {
  gpu::GpuSpec s = gcsim::test::round_gpu_100sm();
  s.efficiency.flash2_decode = {0.2, 0.8, sim::us(int64_t{1}), sim::us(int64_t{3}), sim::ns(int64_t{500})};
  return s;
}

// Llama-style GQA decode: 32 query heads over 8 KV heads, head dim 128.
gpu::AttentionShape decode(int64_t batch, int64_t kv) {
  gpu::AttentionShape a;
  a.batch = batch;
  a.heads = 32;
  a.kv_heads = 8;
  a.q_len = 1;
  a.kv_len = kv;
  a.head_dim = 128;
  a.family = gpu::AttentionFamily::flash2;
  return a;
}

}  // namespace

TEST_CASE("flash2 decode: FlashAttention-2's num_splits_heuristic worked by hand",
          "[gpu][attention]") {
  // 132 SMs, 264 slots. 8 query blocks (batch 1, 8 KV heads), 1K keys in
  // 8 blocks of 128: eligible 1, 2, 3, 4, 8 (5-7 leave 2 blocks a split, as
  // 4 does); 8 x 8 / 264 is the best (0.24), and only 8 reaches 85% of it.
  CHECK(gpu::flash2_num_splits(8, 264, 8) == 8);
  // 4K keys, 32 blocks: 32 splits (256 CTAs, 0.97 of a wave) is the best;
  // 85% of it needs 28+, of which only 32 is eligible.
  CHECK(gpu::flash2_num_splits(8, 264, 32) == 32);
  // 64K keys, 512 blocks: 33 is not eligible (16 blocks each, as 32), so
  // the best is 32 (0.97); 29 (18 blocks each, 232 CTAs, 0.88) is the first
  // within 85%.
  CHECK(gpu::flash2_num_splits(8, 264, 512) == 29);
  // Batch 8: 64 blocks; 4 splits fill 256 of 264 slots.
  CHECK(gpu::flash2_num_splits(64, 264, 32) == 4);
  // Batch 32: 256 blocks fill 80% of the slots: no split.
  CHECK(gpu::flash2_num_splits(256, 264, 128) == 1);
  CHECK(gpu::flash2_num_splits(211, 264, 128) > 1);
  CHECK(gpu::flash2_num_splits(212, 264, 128) == 1);
}

TEST_CASE("flash2 decode: a GQA group's heads are the rows of one query block",
          "[gpu][attention]") {
  gpu::GpuSpec h100 = round_gpu();
  h100.sm_count = 132;
  const auto g = gpu::flash2_decode_grid(h100, decode(1, 65536));
  CHECK(g.rows == 4);
  CHECK(g.splits == 29);
  CHECK(g.block_m == 64);
  CHECK(g.ctas() == 8 * 29);
  // MHA at batch 8: 256 (batch, head) blocks of one row, unsplit, 128-row CTAs.
  auto mha = decode(8, 4096);
  mha.kv_heads = 32;
  const auto m = gpu::flash2_decode_grid(h100, mha);
  CHECK(m.rows == 1);
  CHECK(m.splits == 1);
  CHECK(m.block_m == 128);
  CHECK(m.ctas() == 256);
}

TEST_CASE("flash2 decode: unsplit, the padded 128-row tile is compute-bound", "[gpu][attention]") {
  const gpu::GpuSpec s = round_gpu();
  // Batch 32 x 8 KV heads = 256 blocks >= 0.8 x 200 slots: no split, 256
  // CTAs of 128 rows (4 of them real). Per CTA 128 x 4096 keys x 2 x 256
  // = 268,435,456 flops at 0.2 x 1000 TF/s / 100 SMs = 2e12/s: 134.217728
  // us. Its KV share, 2,099,200 B at 24 GB/s per SM (2.7e12 / 100 x
  // 0.8 / 0.9), is 87.5 us: the MMAs bound it. Waves of 100, 100, 56, each
  // 134.217728 + 1 us: 2 + 3 x 135.217728 = 407.653184 us.
  const auto k = gpu::attention_kernel(s, decode(32, 4096));
  CHECK(k.tiles == 256);
  CHECK(k.setup == sim::Duration::zero());  // no combine kernel
  CHECK(gpu::isolated_time(s, k, s.sm_count).microseconds() == Approx(407.653184).epsilon(1e-6));
  // It reports the useful flops, 32 x less than it executes (4 of 128 rows).
  CHECK(k.total_flops() == Approx(32.0 * 32 * 4096 * 2 * 256));
}

TEST_CASE("flash2 decode: split, the KV read at bandwidth of the peak plus the combine",
          "[gpu][attention]") {
  gpu::GpuSpec s = round_gpu();
  s.efficiency.flash2_decode.efficiency = 1.0;
  // Batch 1: 8 blocks, 512 key blocks, 200 slots: 22 splits (the first
  // eligible count within 85% of 25's full wave), 176 CTAs of 64 rows.
  // Bytes (32 + 8 x 65536) x 256 x 2 = 268,451,840, 1,525,294.5 per CTA;
  // MMAs 9.8 us per CTA. Wave 1 (100 CTAs) at 24 GB/s per SM: 63.5539 us;
  // wave 2 (76) at min(2 x 27, 2700 / 76) x 0.8 / 0.9 = 31.58 GB/s:
  // 48.3010 us; + 1 us each. Combine: 3 + 22 x 0.5 = 14 us.
  // 2 + 14 + 64.5539 + 49.3010 = 129.8549 us.
  const auto k = gpu::attention_kernel(s, decode(1, 65536));
  CHECK(k.tiles == 176);
  CHECK(k.setup == sim::us(int64_t{14}));
  CHECK(gpu::isolated_time(s, k, s.sm_count).microseconds() == Approx(129.8549).epsilon(1e-5));
}

TEST_CASE("flash2 decode: parameters out of range are refused", "[gpu][attention]") {
  const gpu::GpuSpec s = round_gpu();
  gpu::Flash2DecodeParams p = s.efficiency.flash2_decode;
  p.bandwidth = 1.5;
  CHECK_THROWS_AS(gpu::flash2_decode_kernel(s, decode(1, 4096), p), std::invalid_argument);
  p = s.efficiency.flash2_decode;
  p.efficiency = 0.0;
  CHECK_THROWS_AS(gpu::flash2_decode_kernel(s, decode(1, 4096), p), std::invalid_argument);
}
