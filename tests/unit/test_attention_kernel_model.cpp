// Attention kernel families (models/gpu/attention_kernel_model.h) against
// hand-computed figures on a round-number GPU: 100 SMs at 2 GHz, 1000 TF/s
// bf16, 3000 GB/s at hbm efficiency 0.9, launch 2 us, tile overhead 0. Its
// SFU gives 100 x 16 x 2e9 = 3.2e12 exponentials/s, 3.2e10 per SM.
#include <cstdint>
#include <stdexcept>

#include "catch.h"
#include "round_gpu.h"
#include "models/gpu/attention_kernel_model.h"
#include "models/gpu/kernel_cost_model.h"
#include "models/gpu/sustained_clocks.h"
#include "preset_fixtures.h"

namespace gpu = gcsim::models::gpu;
namespace sim = gcsim::sim;

namespace {

gpu::GpuSpec round_gpu() {
  gpu::GpuSpec s = gcsim::test::round_gpu_100sm();
  gpu::FusedAttentionPass fwd{0.5, 0.8, 0.5, sim::us(int64_t{1})};
  s.efficiency.cudnn_attention.forward = fwd;
  s.efficiency.cudnn_attention.backward = {0.4, 1.0, 0.25, sim::us(int64_t{3})};
  s.efficiency.cudnn_attention.decode_bandwidth = 0.8;
  s.efficiency.cudnn_attention.decode_wave_overhead = sim::us(int64_t{2});
  return s;
}

gpu::AttentionShape shape(int64_t q, int64_t kv, bool causal, bool backward = false) {
  gpu::AttentionShape a;
  a.batch = 1;
  a.heads = 100;
  a.q_len = q;
  a.kv_len = kv;
  a.head_dim = 128;
  a.causal = causal;
  a.backward = backward;
  a.family = gpu::AttentionFamily::cudnn;
  return a;
}

}  // namespace

TEST_CASE("attention families: executed pairs count whole blocks", "[gpu][attention]") {
  // Causal 512 x 512 in 128 x 128 blocks: query block i sees (i + 1) key
  // blocks, 1 + 2 + 3 + 4 = 10 blocks of 16384 pairs = 163840, against the
  // 512 x 513 / 2 = 131328 unmasked pairs (+25% at this length).
  auto a = shape(512, 512, true);
  CHECK(gpu::executed_pairs(a, {128, 128}) == 163840.0);
  CHECK(gpu::attention_pairs(a) == 131328.0);
  // Backward, 64-row query blocks over 128-key blocks: key block j is seen
  // from query block 2j on, 8 + 6 + 4 + 2 = 20 blocks of 8192 = 163840.
  a.backward = true;
  CHECK(gpu::executed_pairs(a, {64, 128}) == 163840.0);
  // Not causal, 300 x 300: 3 x 3 whole blocks of 16384 = 147456.
  CHECK(gpu::executed_pairs(shape(300, 300, false), {128, 128}) == 147456.0);
  // Chunked prefill, 256 queries at the end of 1024 keys: the first query
  // block's last row sees 1024 - 256 + 128 = 896 keys (7 blocks), the
  // second all 1024 (8): 15 x 16384 = 245760 >= 256 x 768 + 256 x 257 / 2 = 229504.
  CHECK(gpu::executed_pairs(shape(256, 1024, true), {128, 128}) == 245760.0);
  CHECK(gpu::attention_pairs(shape(256, 1024, true)) == 229504.0);
}

TEST_CASE("attention families: a cudnn forward kernel by hand", "[gpu][attention]") {
  const gpu::GpuSpec g = round_gpu();
  // 100 heads x 1024 queries in blocks of 64 (cuDNN's knob_7 64 x 128
  // forward tile): 1600 CTAs, 16 waves on 100 SMs (this pass keeps one CTA
  // a SM). Per CTA: 1024^2 x 100 / 1600 = 65536 scores; tensor work 2 x 256
  // flops each = 3.3554e7 flops at 1e13 flop/s per SM = 3.3554 us at
  // efficiency 1, 6.7109 us at 0.5; exponentials 65536 / 3.2e10 = 2.048 us,
  // half exposed = 1.024 us. Wave: 7.7349 + 1 (overhead) = 8.7349 us;
  // kernel 2 + 16 x 8.7349 = 141.758 us. HBM: 1.049e8 B / 1600 = 65536 B
  // per CTA at 2.7e12 / 100 B/s = 2.43 us, under the compute.
  const auto k = gpu::attention_kernel(g, shape(1024, 1024, false));
  CHECK(k.tiles == 1600);
  CHECK(k.total_flops() == Approx(100.0 * 1024 * 1024 * 512));
  const auto t = gpu::fused_attention_terms(g, shape(1024, 1024, false));
  CHECK(t.waves == 16);
  CHECK(t.mma_s == Approx(3.3554e-6).epsilon(1e-4));
  CHECK(t.exp_s == Approx(2.048e-6).epsilon(1e-6));
  CHECK(gpu::isolated_time(g, k, g.sm_count).microseconds() == Approx(141.758).epsilon(1e-4));
  // The folded efficiency: useful 3.3554 us of peak work in 7.7349 us.
  CHECK(k.efficiency == Approx(3.3554 / 7.7349).epsilon(1e-4));
  CHECK(k.efficiency <= 1.0);
}

TEST_CASE("attention families: cudnn forward CTAs sharing an SM, by hand", "[gpu][attention]") {
  gpu::GpuSpec g = round_gpu();
  // Two CTAs a SM; alone one reaches half the SM's rate and pays one key
  // block of fixed latency; 2 us a kernel.
  auto& fwd = g.efficiency.cudnn_attention.forward;
  fwd.ctas_per_sm = 2;
  fwd.lone_cta_fraction = 0.5;
  fwd.cta_latency_blocks = 1.0;
  fwd.kernel_overhead = sim::us(int64_t{2});
  // 25 heads x 512 queries, full: 8 CTAs of 64 rows a head, four 128-key
  // blocks each: 200 CTAs, 2 a SM (n = 2). A block: 8192 scores x 512 flops
  // = 4.194e6 flops, 0.41943 us at the SM's 1e13, 0.83886 us at efficiency
  // 0.5; 8192 exponentials / 3.2e10 = 0.256 us, half exposed: 0.128 us;
  // 0.96686 us. A CTA takes max((1 + 4) / 0.5, 2 x 4) = 10 block-times,
  // all 200 at once: 10 against the wave model's one wave of tiles of 2
  // CTAs (8 blocks): tail 1.25. Tile: 1.25 x 8 x 0.96686 = 9.6686 us, + 1
  // us wave overhead; kernel 2 (launch) + 2 (kernel) + 10.6686 = 14.6686
  // us. HBM: 1.31e7 B / 100 tiles at 2.7e12 / 100 B/s = 4.85 us, under it.
  auto a = shape(512, 512, false);
  a.heads = 25;
  const auto t = gpu::fused_attention_terms(g, a);
  CHECK(t.ctas == 200);
  CHECK(t.tiles == 100);
  CHECK(t.waves == 1);
  CHECK(t.tail == Approx(1.25).epsilon(1e-12));
  const auto k = gpu::attention_kernel(g, a);
  CHECK(k.setup == sim::us(int64_t{2}));
  CHECK(gpu::isolated_time(g, k, g.sm_count).microseconds() == Approx(14.6686).epsilon(1e-4));
  // Out of range: refused with a clear error.
  fwd.lone_cta_fraction = 0.0;
  CHECK_THROWS_AS(gpu::attention_kernel(g, a), std::invalid_argument);
}

TEST_CASE("attention families: head dims above 128 pay wide_head, backward its own pass",
          "[gpu][attention]") {
  const gpu::GpuSpec g = round_gpu();
  // d = dv = 192 in 128 x 64 blocks (cudnn above d = 128): the same 8 waves;
  // the tensor time per CTA is 1024 x 1024 x 100 / 800 x 2 x 384 / 1e13 =
  // 10.066 us at efficiency 1, / (0.5 x 0.8) = 25.166 us; exponentials as at
  // d = 128. MLA (d 192, dv 128) keeps the plain efficiency.
  auto a = shape(1024, 1024, false);
  a.head_dim = 192;
  const auto t = gpu::fused_attention_terms(g, a);
  CHECK(t.wide == 1.0);  // dv = 192: one 64-wide step past 128
  CHECK(t.mma_s == Approx(10.066e-6).epsilon(1e-4));
  const auto k = gpu::attention_kernel(g, a);
  CHECK(gpu::isolated_time(g, k, g.sm_count).microseconds() ==
        Approx(2.0 + 8 * (25.166 + 2.048 + 1.0)).epsilon(1e-4));
  a.head_dim_v = 128;
  CHECK(gpu::fused_attention_terms(g, a).wide == 0.0);
  // Backward (d = 128): cuDNN's bprop tile is 64 x 64 (knob_26_64x64x128):
  // 100 heads x 1024 keys in blocks of 64 = 1600 CTAs, 16 waves on 100 SMs.
  // A CTA: 64 keys x 1024 queries = 65536 scores, tensor work 2 x (3 x 128
  // + 2 x 128) = 1280 flops a score: 8.389 us at efficiency 1, / 0.4 =
  // 20.972 us; exponentials 2.048 x 0.25 = 0.512 us; overhead 3 us: 24.484
  // us a wave. 2 + 16 x 24.484 = 393.75 us (this GPU models no side kernels).
  const auto b = gpu::attention_kernel(g, shape(1024, 1024, false, true));
  CHECK(b.tiles == 1600);
  CHECK(b.total_flops() == Approx(2.5 * 100.0 * 1024 * 1024 * 512));
  CHECK(gpu::isolated_time(g, b, g.sm_count).microseconds() == Approx(393.75).epsilon(1e-4));
}

TEST_CASE("attention families: cudnn backward's side kernels, by hand", "[gpu][attention]") {
  gpu::GpuSpec g = round_gpu();
  // GQA, 16 query / 2 KV heads, 512 tokens, d 128, bf16 (the serving
  // model's TP4 rank): dO.O reads O and dO and writes an fp32 sum a row,
  // 16 x 512 x (2 x 128 x 2 + 4) = 4227072 B; dQ's fp32 -> bf16 conversion
  // 16 x 512 x 128 x 6 = 6291456 B; dK and dV summed over each group of 8
  // heads, read per query head and written per KV head, 512 x 256 x 18 x 2
  // = 4718592 B: 15237120 B in 4 kernels (the trace of
  // calibration/measurements/h100-sxm/serving_attention_2026-11-27).
  gpu::AttentionShape a = shape(512, 512, true, true);
  a.heads = 16;
  a.kv_heads = 2;
  const auto side = gpu::attention_side_kernels(a);
  CHECK(side.kernels == 4);
  CHECK(side.bytes == 15237120.0);
  // MHA: no head reduction, 2 kernels; a forward has none.
  a.kv_heads = 16;
  CHECK(gpu::attention_side_kernels(a).kernels == 2);
  CHECK(gpu::attention_side_kernels(a).bytes == 4227072.0 + 6291456.0);
  CHECK(gpu::attention_side_kernels(shape(512, 512, true, false)).kernels == 0);
  // At 0.5 of the 3000 GB/s peak the GQA call's side kernels add 15237120 /
  // 1.5e12 = 10.158 us and 4 launches of 2 us to the kernel's time, in its
  // body (a profiler counts them), beside its 3 us overhead in the setup.
  a.kv_heads = 2;
  auto& bwd = g.efficiency.cudnn_attention.backward;
  bwd.kernel_overhead = sim::us(int64_t{3});
  const double without = gpu::isolated_time(g, gpu::attention_kernel(g, a), g.sm_count).microseconds();
  bwd.side_bandwidth = 0.5;
  const auto k = gpu::attention_kernel(g, a);
  CHECK(k.setup == sim::us(int64_t{3}));
  CHECK(gpu::isolated_time(g, k, g.sm_count).microseconds() - without == Approx(8.0 + 10.158).epsilon(1e-4));
  // A pass's side_bandwidth outside [0, 1] is refused.
  bwd.side_bandwidth = 1.5;
  CHECK_THROWS_AS(gpu::attention_kernel(g, a), std::invalid_argument);
}

TEST_CASE("attention families: causal costs about half, plus the diagonal blocks",
          "[gpu][attention]") {
  const gpu::GpuSpec g = round_gpu();
  // 8192 tokens: 128 query blocks of 64 rows, query block i runs
  // ceil((i + 1) / 2) key blocks of 128: 2 x 64 x 65 / 2 = 4160 of 8192
  // run (0.5078 of the non-causal work), times the causal grid's tail
  // (12800 CTAs of 1..64 blocks list-scheduled on 100 SMs, about 1%): about
  // 0.513 of the full kernel's tile time; the launch and per-wave overheads,
  // equal in both, pull the ratio towards 1, hence up to 0.53.
  const double full = gpu::isolated_time(g, gpu::attention_kernel(g, shape(8192, 8192, false)),
                                         g.sm_count).seconds();
  const double causal = gpu::isolated_time(g, gpu::attention_kernel(g, shape(8192, 8192, true)),
                                           g.sm_count).seconds();
  CHECK(causal / full > 0.51);
  CHECK(causal / full < 0.53);
}

TEST_CASE("attention families: decode reads the KV cache at decode_bandwidth of the peak",
          "[gpu][attention]") {
  gpu::GpuSpec g = round_gpu();
  g.efficiency.cudnn_attention.decode_split_overhead = sim::us(int64_t{3});
  // 8 sequences x 8 KV heads x 4096 keys x 128 x 2 B x (K and V) = 134 MB.
  // 64 (b x kv_heads) heads fill under 80% of the 100 SMs, so the keys are
  // split: waves / whole waves for 1, 2, 3 splits is 0.64, 0.64, 0.96 (best
  // of 1..16: 14 splits, 8.96 / 9 = 0.996; 0.96 is within 85% of it), so 3
  // splits, 192 CTAs: a wave of 100 and one of 92. decode_bandwidth 0.8 of
  // the 3000 GB/s peak: 2.4e10 B/s per SM on a full wave (the kernel counts
  // 0.8 / 0.9 of the 2.7e12 streaming rate); on the 92-CTA wave each SM
  // gets 2.7e12 / 92 x 0.8 / 0.9. Plus the launch (2 us), the split
  // combine (3 us) and 2 us per wave. Q and O add 4 KiB per head.
  gpu::AttentionShape a = shape(1, 4096, false);
  a.batch = 8;
  a.heads = 32;
  a.kv_heads = 8;
  REQUIRE(g.sm_bandwidth_headroom == 2.0);
  const auto k = gpu::attention_kernel(g, a);
  CHECK(k.tiles == 192);
  CHECK(k.bandwidth_efficiency == Approx(0.8 / 0.9));
  CHECK(k.setup.microseconds() == Approx(3.0));
  const double kv_bytes = 8.0 * 8 * 4096 * 128 * 2 * 2;
  const double per_cta = (kv_bytes + 8.0 * 32 * 128 * 2 * 2) / 192;
  const double full_us = per_cta / 2.4e10 * 1e6, last_us = per_cta / (2.7e12 / 92 * 0.8 / 0.9) * 1e6;
  CHECK(gpu::isolated_time(g, k, g.sm_count).microseconds() ==
        Approx(2.0 + 3.0 + full_us + 2.0 + last_us + 2.0).epsilon(1e-4));
  // 32 sequences: 256 heads fill the SMs, no split, no combine kernel.
  a.batch = 32;
  const auto unsplit = gpu::attention_kernel(g, a);
  CHECK(unsplit.tiles == 256);
  CHECK(unsplit.setup == sim::Duration::zero());
}

TEST_CASE("decode split-KV: FlashAttention-2's num_splits choice fills one wave",
          "[gpu][attention]") {
  const gpu::GpuSpec h100 = gcsim::test::gpu_preset("h100-sxm");
  REQUIRE(h100.sm_count == 132);
  // 8 KV heads (batch 1): 8n / 132 rises to 0.97 at 16 splits and 1.0 at 33;
  // the fewest within 85% of 1.0 is 15 (0.909; 14 gives 0.848).
  CHECK(gpu::decode_kv_splits(h100, 8, 16384) == 15);
  // Short KV caps the splits at kv / 256.
  CHECK(gpu::decode_kv_splits(h100, 8, 1024) == 4);
  // 64 heads: 2 splits fill 128 of 132 SMs (0.97).
  CHECK(gpu::decode_kv_splits(h100, 64, 1024) == 2);
  // 106 heads fill 80% of the SMs: no split.
  CHECK(gpu::decode_kv_splits(h100, 106, 65536) == 1);
}

TEST_CASE("attention families: unfused is its GEMMs and score passes back to back",
          "[gpu][attention]") {
  const gpu::GpuSpec g = gcsim::test::gpu_preset("h100-sxm");
  auto a = shape(2048, 2048, true);
  a.batch = 2;
  a.heads = 16;
  a.family = gpu::AttentionFamily::unfused;
  // Forward: S = Q K^T, the causal mask pass, softmax, O = P V.
  gpu::MemoryOpShape mask{gpu::MemoryOpKind::elementwise, 32 * 2048 * 2048, 0, 0, 1};
  gpu::MemoryOpShape softmax;
  softmax.kind = gpu::MemoryOpKind::softmax;
  softmax.rows = 32 * 2048;
  softmax.cols = 2048;
  double sum = 0;
  for (const auto& k : {gpu::gemm_kernel(g, {2048, 2048, 128, 32}), gpu::memory_kernel(g, mask),
                        gpu::memory_kernel(g, softmax), gpu::gemm_kernel(g, {2048, 128, 2048, 32})}) {
    sum += gpu::isolated_time(g, k, g.sm_count).seconds();
  }
  const auto k = gpu::attention_kernel(g, a);
  CHECK(gpu::isolated_time(g, k, g.sm_count).seconds() == Approx(sum).epsilon(1e-6));
  // Unfused computes every score: causal saves nothing, so it is far slower
  // than the fused kernel on the same shape.
  a.family = gpu::AttentionFamily::cudnn;
  CHECK(gpu::isolated_time(g, gpu::attention_kernel(g, a), g.sm_count).seconds() < sum / 2);
}

TEST_CASE("attention families: auto follows the preset, sustained clocks derate",
          "[gpu][attention]") {
  const gpu::GpuSpec h100 = gcsim::test::gpu_preset("h100-sxm");
  const gpu::GpuSpec a100 = gcsim::test::gpu_preset("a100-sxm-80gb");
  CHECK(gpu::resolve_attention_family(std::nullopt, h100, false) == gpu::AttentionFamily::cudnn);
  CHECK(gpu::resolve_attention_family(std::nullopt, h100, true) == gpu::AttentionFamily::cudnn);
  CHECK(gpu::resolve_attention_family(std::nullopt, a100, false) == gpu::AttentionFamily::flash2);
  CHECK(gpu::resolve_attention_family(gpu::AttentionFamily::unfused, h100, false) ==
        gpu::AttentionFamily::unfused);
  CHECK_FALSE(a100.efficiency.flash3_attention.available);
  // At sustained clocks both the tensor cores and the SFU slow by the
  // fraction: the kernel's compute time grows by 1 / f.
  gpu::GpuSpec g = round_gpu();
  g.sustained_tensor_fraction = 0.8;
  const gpu::GpuSpec s = gpu::at_sustained_clocks(g);
  const auto rested = gpu::fused_attention_terms(g, shape(4096, 4096, false));
  const auto slow = gpu::fused_attention_terms(s, shape(4096, 4096, false));
  CHECK(slow.exp_s == Approx(rested.exp_s / 0.8));
  CHECK(s.efficiency.cudnn_attention.forward.efficiency == Approx(0.4));
}

TEST_CASE("attention families: fp32 and bad heads are refused", "[gpu][attention]") {
  const gpu::GpuSpec g = round_gpu();
  auto a = shape(1024, 1024, false);
  a.dtype = gpu::Dtype::fp32;
  CHECK_THROWS_AS(gpu::attention_kernel(g, a), std::invalid_argument);
  a = shape(1024, 1024, false);
  a.kv_heads = 3;
  CHECK_THROWS_AS(gpu::attention_kernel(g, a), std::invalid_argument);
}

TEST_CASE("flash2 prefill: FlashAttention-2's tiles and CTAs a SM by head dim", "[gpu][attention]") {
  using F = gpu::AttentionFamily;
  // PyTorch's FA2 on sm_90 (flash_fwd/bwd_launch_template.h): forward
  // 128 x 128 x 4 warps (d 64), 128 x 64 x 4 (d 128), 128 x 64 x 8 (d 192),
  // 64 x 64 x 4 (d 256); backward 128 x 128 (d 64), 64 x 128 (d 128),
  // 64 x 64 (d 192, 256), all 8 warps.
  auto same = [](gpu::AttentionTile t, int64_t m, int64_t n, int64_t w) {
    return t.m == m && t.n == n && t.warps == w;
  };
  CHECK(same(gpu::attention_tile(F::flash2, 64, false), 128, 128, 4));
  CHECK(same(gpu::attention_tile(F::flash2, 128, false), 128, 64, 4));
  CHECK(same(gpu::attention_tile(F::flash2, 192, false), 128, 64, 8));
  CHECK(same(gpu::attention_tile(F::flash2, 256, false), 64, 64, 4));
  CHECK(same(gpu::attention_tile(F::flash2, 64, true), 128, 128, 8));
  CHECK(same(gpu::attention_tile(F::flash2, 128, true), 64, 128, 8));
  CHECK(same(gpu::attention_tile(F::flash2, 192, true), 64, 64, 8));
  // Registers: 65536 / (128 threads x 255) = 2 CTAs of 4 warps, 1 of 8.
  // Shared memory (forward): (128 + 2 x 128) x 64 x 2 B = 48 KiB (d 64),
  // 64 KiB (d 128), (64 + 128) x 256 x 2 B = 96 KiB (d 256): 2 fit in 228 KiB.
  auto per_sm = [](int64_t d, bool bwd) {
    return gpu::attention_ctas_per_sm(F::flash2, gpu::attention_tile(F::flash2, d, bwd), d, bwd);
  };
  CHECK(per_sm(64, false) == 2);
  CHECK(per_sm(128, false) == 2);
  CHECK(per_sm(192, false) == 1);
  CHECK(per_sm(256, false) == 2);
  CHECK(per_sm(128, true) == 1);
  CHECK(gpu::attention_ctas_per_sm(F::cudnn, {128, 128, 4}, 128, false) == 1);
}

TEST_CASE("flash2 prefill: a forward and a backward kernel by hand", "[gpu][attention]") {
  gpu::GpuSpec g = round_gpu();
  g.efficiency.attention = 0.5;
  g.efficiency.attention_backward = 0.4;
  g.efficiency.attention_tile_overhead = sim::us(int64_t{1});
  g.efficiency.attention_backward_tile_overhead = sim::us(int64_t{3});
  g.efficiency.flash2_prefill.forward = {0.8, 0.5};
  g.efficiency.flash2_prefill.backward = {1.0, 0.25};
  auto a = shape(1024, 1024, false);
  a.family = gpu::AttentionFamily::flash2;
  // d 64: 128 x 128 blocks, 100 x 8 = 800 CTAs, 2 a SM: 400 tiles, 4 waves.
  // A tile (2 CTAs): 2 x 128 x 1024 = 262144 scores x 2 x 128 flops =
  // 6.7109 us at 1e13 flop/s, / 0.5 = 13.4218 us; exponentials 262144 /
  // 3.2e10 = 8.192 us, half exposed 4.096 us; + 1 us a wave. 2 + 4 x
  // 18.5178 = 76.071 us. (HBM: 52.4 MB / 400 tiles at 2.7e10 B/s = 4.9 us.)
  a.head_dim = 64;
  const auto t64 = gpu::fused_attention_terms(g, a);
  CHECK(t64.ctas == 800);
  CHECK(t64.tiles == 400);
  CHECK(t64.waves == 4);
  const auto k64 = gpu::attention_kernel(g, a);
  CHECK(k64.total_flops() == Approx(100.0 * 1024 * 1024 * 256));
  CHECK(gpu::isolated_time(g, k64, g.sm_count).microseconds() == Approx(76.071).epsilon(1e-4));
  // d 192: 128 x 64 blocks of 8 warps, 1 a SM: 800 tiles, 8 waves. A tile:
  // 131072 scores x 2 x 384 flops = 10.066 us at 1, x (1/0.5 + 1 x (1/(0.5 x
  // 0.8) - 1/0.5)) = x 2.5: 25.166 us; exponentials 4.096 x 0.5 = 2.048 us.
  // 2 + 8 x (25.166 + 2.048 + 1) = 227.71 us.
  a.head_dim = 192;
  const auto k192 = gpu::attention_kernel(g, a);
  CHECK(k192.tiles == 800);
  CHECK(gpu::isolated_time(g, k192, g.sm_count).microseconds() == Approx(227.71).epsilon(1e-4));
  // Backward d 128: key blocks of 128, 800 CTAs, 1 a SM, 8 waves; a tile
  // 131072 scores x 1280 flops = 16.777 us, / 0.4 = 41.943 us; exponentials
  // 4.096 x 0.25 = 1.024 us; + 3 us. 2 + 8 x 45.967 = 369.74 us.
  a.head_dim = 128;
  a.backward = true;
  const auto kb = gpu::attention_kernel(g, a);
  CHECK(kb.tiles == 800);
  CHECK(gpu::isolated_time(g, kb, g.sm_count).microseconds() == Approx(369.74).epsilon(1e-4));
  // Its decode stays FA2's own kernel (attention_flash2_decode.h).
  auto d = shape(1, 4096, false);
  d.family = gpu::AttentionFamily::flash2;
  CHECK_THROWS_AS(gpu::fused_attention_kernel(g, d), std::invalid_argument);
}

TEST_CASE("attention: MLA's absorbed decode reads its one latent once", "[gpu][attention]") {
  const gpu::GpuSpec g = round_gpu();
  // 100 heads over one latent of 512 + 64 = 576 per token (V: its first 512),
  // 4096 tokens, bf16: K/V 4096 x 576 x 2 = 4718592 B once (9437184 as two
  // tensors would be counted before), Q and O 100 x (576 + 512) x 2 =
  // 217600 B: 4936192 B in all.
  auto a = shape(1, 4096, false);
  a.kv_heads = 1;
  a.head_dim = 576;
  a.head_dim_v = 512;
  a.kv_shared = true;
  for (auto f : {gpu::AttentionFamily::cudnn, gpu::AttentionFamily::flash2}) {
    a.family = f;
    CHECK(gpu::attention_kernel(g, a).total_bytes() == Approx(4936192.0));
  }
  a.kv_shared = false;
  CHECK(gpu::attention_kernel(g, a).total_bytes() == Approx(217600.0 + 4096.0 * 1088 * 2));
}
