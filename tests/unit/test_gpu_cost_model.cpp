// Kernel cost model against hand-computed figures. The GPU is an H100 SXM
// built from datasheet values (REFERENCE.md hardware table; NVIDIA H100
// Tensor Core GPU datasheet): 132 SMs, 989 TF/s dense bf16, 1979 TF/s fp8,
// 67 TF/s fp32, 3350 GB/s, 80 GB; launch latency 2 us; default
// GpuEfficiency: tensor 0.8, hbm 0.9, attention 0.65, tile overhead 1 us.
#include <cstdint>
#include <cstdlib>
#include <stdexcept>

#include "catch.h"
#include "gpu_test_specs.h"
#include "models/gpu/gpu_spec.h"
#include "models/gpu/hbm.h"
#include "models/gpu/kernel_cost_model.h"
#include "preset_fixtures.h"

namespace gpu = gcsim::models::gpu;
namespace sim = gcsim::sim;

namespace {

using gcsim::test::h100_datasheet;

// A100 SXM 80 GB (REFERENCE.md): no fp8 tensor cores, so its fp8 peak is 0.
gpu::GpuSpec a100_datasheet() {
  gpu::GpuSpec s;
  s.name = "a100-sxm-80gb";
  s.sm_count = 108;
  s.tensor_peak[static_cast<size_t>(gpu::Dtype::bf16)] = sim::FlopRate::tflops(312);
  s.vector_fp32_peak = sim::FlopRate::tflops(19.5);
  s.hbm_bandwidth = sim::Bandwidth::gb_per_s(2039);
  s.hbm_capacity = sim::Bytes(80'000'000'000);
  s.kernel_launch_latency = sim::us(int64_t{2});
  return s;
}

// Hand computations below round like the model: once per tile time, to 1 ps.
bool within_ps(sim::Duration d, int64_t expected_ps, int64_t tolerance_ps = 2) {
  return std::llabs(d.ps() - expected_ps) <= tolerance_ps;
}

}  // namespace

TEST_CASE("133 tiles on 132 SMs take two waves, 132 take one", "[gpu]") {
  const gpu::GpuSpec h100 = h100_datasheet();
  // A compute-only tile at full tensor rate: 989e12/132 flop/s per SM x 10 us.
  gpu::KernelDesc k;
  k.unit = gpu::ExecUnit::tensor;
  k.efficiency = 1.0;
  k.flops_per_tile = 989e12 / 132 * 10e-6;
  k.tiles = 132;
  CHECK(gpu::wave_count(h100, k, 132) == 1);
  // 2 us launch + one wave of (10 us tile + 1 us overhead) = 13 us.
  CHECK(within_ps(gpu::isolated_time(h100, k, 132), 13'000'000));
  k.tiles = 133;
  CHECK(gpu::wave_count(h100, k, 132) == 2);
  // The 133rd tile costs a full wave: 2 + 2 x 11 = 24 us.
  CHECK(within_ps(gpu::isolated_time(h100, k, 132), 24'000'000));
}

TEST_CASE("8192^3 bf16 GEMM on H100: 128x256 tiles, 16 compute-bound waves", "[gpu]") {
  const gpu::GpuSpec h100 = h100_datasheet();
  const gpu::KernelDesc k = gpu::gemm_kernel(h100, {8192, 8192, 8192, 1, gpu::Dtype::bf16});
  // 128x256 tiles: 64 x 32 = 2048 tiles (128x128 would need 32 waves of 4096
  // half-size tiles and pay twice the per-wave overhead).
  CHECK(k.tiles == 2048);
  CHECK(k.flops_per_tile == 2.0 * 128 * 256 * 8192);  // 536,870,912
  CHECK(k.unit == gpu::ExecUnit::tensor);
  CHECK(k.efficiency == 0.8);
  // A, B, C once: 3 x 8192^2 x 2 B = 402,653,184 B over 2048 tiles = 196,608 B.
  CHECK(k.bytes_per_tile == 196'608.0);
  // Per-SM rate 989e12 x 0.8 / 132 = 5.99394e12 flop/s: 89.568959 us per tile.
  // Per-SM HBM share with 132 SMs busy: 3350e9 x 0.9 / 132 = 22.84 GB/s, so
  // 196,608 B take 8.61 us: compute bound.
  const gpu::TileCost c = gpu::tile_cost(h100, k, 132);
  CHECK(c.compute.ps() == 89'568'959);
  CHECK(!c.memory_bound());
  // ceil(2048/132) = 16 waves (the last has 68 tiles, still compute bound).
  // A tile overlaps its arithmetic and loads as the p-norm, p =
  // kGemmOverlapKnee = 4: 89.568959 x (1 + (8.607713 / 89.568959)^4)^(1/4)
  // = 89.570869 us on 132 SMs; on 68 (44.34 GB/s each, 4.434277 us of
  // loads) 89.569094 us. 2 + 15 x (89.570869 + 1) + (89.569094 + 1) =
  // 1451.132129 us, i.e. 757.7 TF/s (29 ns more than the plain max).
  CHECK(gpu::kGemmOverlapKnee == 4.0);
  CHECK(gpu::wave_count(h100, k, 132) == 16);
  CHECK(within_ps(gpu::isolated_time(h100, k, 132), 1'451'132'129, 16));
}

TEST_CASE("1 GiB memcpy runs at the HBM roofline plus one wave overhead", "[gpu]") {
  const gpu::GpuSpec h100 = h100_datasheet();
  gpu::MemoryOpShape copy;
  copy.kind = gpu::MemoryOpKind::memcpy;
  copy.elements = int64_t{1} << 30;  // bytes
  const gpu::KernelDesc k = gpu::memory_kernel(h100, copy);
  // 2 GiB moved (read + write); ceil(2 GiB / 64 KiB) = 32768 > 132: one tile per SM.
  CHECK(k.tiles == 132);
  CHECK(k.total_bytes() == Approx(2.0 * (1 << 30)));
  CHECK(k.total_flops() == 0.0);
  // Roofline: 2^31 B / (3350e9 x 0.9 B/s) = 712.266550 us; + 2 us launch
  // + 1 us tile overhead = 715.266550 us.
  const sim::Duration roofline = sim::transfer_time(sim::GiB(2), gpu::achieved_hbm_bandwidth(h100));
  CHECK(roofline.ps() == 712'266'550);
  CHECK(gpu::isolated_time(h100, k, 132) ==
        roofline + h100.kernel_launch_latency + h100.efficiency.tile_overhead);
}

TEST_CASE("small-M GEMM (16 x 4096 x 4096) is memory bound", "[gpu]") {
  const gpu::GpuSpec h100 = h100_datasheet();
  const gpu::KernelDesc k = gpu::gemm_kernel(h100, {16, 4096, 4096, 1, gpu::Dtype::bf16});
  // Bytes: (16x4096 + 4096x4096 + 16x4096) x 2 B = 33,816,576 B, the weight
  // dominating. Tiles 64 wide in N: 1 x 64 = 64 tiles of 528,384 B. The
  // MMAs run the 16 rows, not the tile's 64 or 128 (wgmma's N is 8..256 in
  // steps of 8 on the batch side): 128x64 and 64x64 tie on time and flops,
  // the first candidate (128x64) stays.
  CHECK(k.tiles == 64);
  CHECK(k.flops_per_tile == 2.0 * 16 * 64 * 4096);
  CHECK(k.total_bytes() == Approx(33'816'576.0));
  // With 64 SMs busy each gets min(2 x 3015e9/132, 3015e9/64) = 45.68 GB/s:
  // 528,384 B take 11.566615 us against 1.399515 us of arithmetic.
  const gpu::TileCost c = gpu::tile_cost(h100, k, 64);
  CHECK(c.memory_bound());
  CHECK(within_ps(c.memory, 11'566'615, 1));
  CHECK(within_ps(c.compute, 1'399'515, 1));
  // Overlapped (p = 4): 11.566615 x (1 + (1.399515/11.566615)^4)^(1/4) =
  // 11.567235 us. 2 + 11.567235 + 1 = 14.567235 us, one wave. The
  // whole-chip roofline (33.8 MB / 3015 GB/s = 11.2 us) is out of reach on
  // 64 of 132 SMs.
  CHECK(within_ps(gpu::isolated_time(h100, k, 132), 14'567'235));
}

TEST_CASE("causal attention does (q+1)/(2q) of the non-causal flops", "[gpu]") {
  const gpu::GpuSpec h100 = h100_datasheet();
  gpu::AttentionShape a;
  a.batch = 2;
  a.heads = 32;
  a.q_len = 4096;
  a.head_dim = 128;
  const gpu::KernelDesc full = gpu::attention_kernel(h100, a);
  // 4 x 2 x 32 x 4096 x 4096 x 128 = 549,755,813,888 flops.
  CHECK(full.total_flops() == Approx(549'755'813'888.0));
  // FlashAttention-2's forward at head dim 128: query blocks of 128 rows,
  // 2 x 32 x ceil(4096/128) = 2048 CTAs, two a SM: 1024 tiles. Whole key
  // blocks and no exposed softmax by default: the efficiency as given.
  CHECK(full.tiles == 1024);
  CHECK(full.efficiency == Approx(0.65));
  a.causal = true;
  const gpu::KernelDesc causal = gpu::attention_kernel(h100, a);
  CHECK(causal.total_flops() / full.total_flops() == Approx(4097.0 / 8192.0));
  // Backward: 5 matmuls against the forward's 2.
  a.backward = true;
  CHECK(gpu::attention_kernel(h100, a).total_flops() == Approx(2.5 * causal.total_flops()));

  // Chunked prefill, 4 queries at the end of 10 keys: rows see 7, 8, 9, 10.
  gpu::AttentionShape chunk;
  chunk.q_len = 4;
  chunk.kv_len = 10;
  chunk.causal = true;
  CHECK(gpu::attention_pairs(chunk) == 34.0);
}

TEST_CASE("GQA decode reads K and V of kv_heads only, split over the SMs", "[gpu]") {
  const gpu::GpuSpec h100 = h100_datasheet();
  gpu::AttentionShape a;
  a.batch = 8;
  a.heads = 64;
  a.kv_heads = 8;
  a.q_len = 1;
  a.kv_len = 4096;
  a.head_dim = 128;
  const gpu::KernelDesc gqa = gpu::attention_kernel(h100, a);
  // Q and O: 8 x 64 x 1 x 128 = 65,536 elements each; K and V:
  // 8 x 8 x 4096 x 128 = 33,554,432 each; x 2 B = 134,479,872 B.
  CHECK(gqa.total_bytes() == Approx(134'479'872.0));
  // FlashAttention-2's split-KV (attention_flash2_decode.h): the 8 query
  // heads of a KV head are one block's rows, 8 x 8 = 64 blocks on 2 x 132
  // slots; of the 32 key blocks, 4 splits fill 256 of them: 256 tiles.
  CHECK(gqa.tiles == 256);
  // The same shape as MHA reads 8x the KV: 2 x (65,536 + 268,435,456) x 2 B.
  a.kv_heads = 64;
  CHECK(gpu::attention_kernel(h100, a).total_bytes() == Approx(1'074'003'968.0));
  // Decode is bandwidth bound: 525,312 B per tile at 22.84 GB/s (the split
  // kernel's 0.9 of the peak) = 23.0 us, against its 64-row tile's 64 x 4096
  // x 2 x 256 / 4 = 33.6e6 executed flops = 12.4 us at 0.36 of the tensor rate.
  CHECK(gpu::tile_cost(h100, gqa, 132).memory_bound());
}

TEST_CASE("memory ops move each tensor once, grid-stride tiles", "[gpu]") {
  const gpu::GpuSpec h100 = h100_datasheet();
  gpu::MemoryOpShape add;
  add.kind = gpu::MemoryOpKind::elementwise;
  add.inputs = 2;
  add.elements = 1 << 20;
  // (2 inputs + 1 output) x 2^20 x 2 B = 6 MiB = 96 tiles of 64 KiB (< 132 SMs).
  const gpu::KernelDesc k = gpu::memory_kernel(h100, add);
  CHECK(k.total_bytes() == Approx(6.0 * (1 << 20)));
  CHECK(k.tiles == 96);
  CHECK(k.unit == gpu::ExecUnit::memory);

  gpu::MemoryOpShape norm;
  norm.kind = gpu::MemoryOpKind::rms_norm;
  norm.rows = 8192;
  norm.cols = 8192;
  // Read + write 8192^2 x 2 B = 268,435,456 B; 4096 x 64 KiB > 132: 132 tiles.
  const gpu::KernelDesc n = gpu::memory_kernel(h100, norm);
  CHECK(n.total_bytes() == Approx(268'435'456.0));
  CHECK(n.tiles == 132);

  // Mixed types (an fp16 gradient read, an fp32 copy written): the bytes
  // per element are given, 2 + 4 = 6.
  gpu::MemoryOpShape widen;
  widen.kind = gpu::MemoryOpKind::elementwise;
  widen.elements = 1 << 20;
  widen.bytes_per_element = 6;
  CHECK(gpu::memory_kernel(h100, widen).total_bytes() == Approx(6.0 * (1 << 20)));

  gpu::MemoryOpShape tiny;
  tiny.kind = gpu::MemoryOpKind::memcpy;
  tiny.elements = 10;
  CHECK(gpu::memory_kernel(h100, tiny).tiles == 1);
}

TEST_CASE("a dtype without tensor cores on the GPU is an error, not a guess", "[gpu]") {
  const gpu::GpuSpec a100 = a100_datasheet();
  CHECK_THROWS_AS(gpu::gemm_kernel(a100, {4096, 4096, 4096, 1, gpu::Dtype::fp8}),
                  std::invalid_argument);
  gpu::AttentionShape a;
  a.q_len = 1024;
  a.dtype = gpu::Dtype::fp8;
  CHECK_THROWS_AS(gpu::attention_kernel(a100, a), std::invalid_argument);
  try {
    gpu::gemm_kernel(a100, {4096, 4096, 4096, 1, gpu::Dtype::fp8});
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("fp8") != std::string::npos);
    CHECK(std::string(e.what()).find("a100-sxm-80gb") != std::string::npos);
  }
  // bf16 works on the A100, and fp8 on the H100 writes a bf16 output:
  // 4096^2 x (1 + 1) B inputs + 4096^2 x 2 B output = 67,108,864 B.
  CHECK_NOTHROW(gpu::gemm_kernel(a100, {4096, 4096, 4096, 1, gpu::Dtype::bf16}));
  const gpu::KernelDesc f8 =
      gpu::gemm_kernel(h100_datasheet(), {4096, 4096, 4096, 1, gpu::Dtype::fp8});
  CHECK(f8.total_bytes() == Approx(67'108'864.0));
}

TEST_CASE("fp32 GEMM runs on the CUDA cores", "[gpu]") {
  const gpu::GpuSpec h100 = h100_datasheet();
  const gpu::KernelDesc k = gpu::gemm_kernel(h100, {4096, 4096, 4096, 1, gpu::Dtype::fp32});
  CHECK(k.unit == gpu::ExecUnit::vector);
  // 128x256 tile: 2 x 128 x 256 x 4096 flops at 67e12 x 0.8 / 132 flop/s
  // per SM = 661.07 us per tile, 14.8x slower than bf16's 44.78 us.
  const gpu::KernelDesc t =
      gpu::gemm_kernel_with_tile(h100, {4096, 4096, 4096, 1, gpu::Dtype::fp32}, {128, 256});
  CHECK(within_ps(gpu::tile_cost(h100, t, 132).compute, 661'072'392, 2));
}

TEST_CASE("A100 preset: the published maximum achievable matmul rate at its best shape",
          "[gpu][a100]") {
  // S. Bekman, ml-engineering, "Maximum Achievable Matmul FLOPS comparison
  // table" (mamf-finder.py, CUDA 12.1): A100 SXM 267.9 TF/s bf16 at
  // 6912x16384x2048, 85.9% of 312. The preset's tensor efficiency is
  // anchored to it (rested clocks: a short measurement).
  const gpu::GpuSpec a100 = gcsim::test::gpu_preset("a100-sxm-80gb");
  const int64_t m = 6912, n = 16384, k = 2048;
  const gpu::KernelDesc g = gpu::gemm_kernel(a100, {m, n, k, 1, gpu::Dtype::bf16});
  const double seconds = gpu::isolated_time(a100, g, a100.sm_count).seconds();
  const double tflops = 2.0 * m * n * k / seconds / 1e12;
  CHECK(tflops == Approx(267.9).epsilon(0.01));
}

TEST_CASE("split-K: 128 x 128 x 8192 runs its 4 tiles as 32 CTAs of 1024 columns of K", "[gpu]") {
  gpu::GpuSpec h100 = h100_datasheet();
  h100.efficiency.gemm_setup_per_cta = sim::ns(int64_t{10});
  h100.efficiency.gemm_split_k_min_slice = 1024;
  const gpu::GemmShape shape{128, 128, 8192, 1, gpu::Dtype::bf16};
  // 64x64 tiles: 2 x 2 = 4 tiles; slices min(132 / 4, 8192 / 1024) = min(33, 8) = 8.
  CHECK(gpu::gemm_split_k_slices(h100, shape, {64, 64}) == 8);
  // A single 128x256 tile: min(132, 8) = 8 as well; without a slice length, never.
  CHECK(gpu::gemm_split_k_slices(h100, shape, {128, 256}) == 8);
  gpu::GpuSpec unsplit = h100;
  unsplit.efficiency.gemm_split_k_min_slice = 0;
  CHECK(gpu::gemm_split_k_slices(unsplit, shape, {64, 64}) == 1);
  // The reduction reads 8 fp32 partials of 128 x 128 and writes bf16 C:
  // 128 x 128 x (8 x 4 + 2) = 557,056 B.
  CHECK(gpu::gemm_split_k_reduce_bytes(shape, 8) == 557'056.0);

  const gpu::KernelDesc k = gpu::gemm_kernel(h100, shape);
  CHECK(k.split_k == 8);
  CHECK(k.tiles == 32);
  // Each CTA: 2 x 64 x 64 x 1024 = 8,388,608 flops, 1.399515 us at 989e12 x
  // 0.8 / 132 flop/s. Bytes: A and B once, (128 x 8192 + 8192 x 128) x 2 B =
  // 4,194,304, and the partials 8 x 128 x 128 x 4 B = 524,288: 147,456 B a
  // CTA, 3.227893 us at one SM's reach (2 x 3015e9 / 132 B/s): memory bound.
  CHECK(k.flops_per_tile == 8'388'608.0);
  CHECK(k.bytes_per_tile == 147'456.0);
  const gpu::TileCost c = gpu::tile_cost(h100, k, 32);
  CHECK(within_ps(c.compute, 1'399'515, 1));
  CHECK(within_ps(c.memory, 3'227'893, 1));
  // Setup: 32 CTAs x 10 ns + the reduction kernel (2 us launch + 557,056 B
  // at 3015 GB/s = 0.184762 us) = 2.504762 us.
  CHECK(within_ps(k.setup, 2'504'762, 1));
  // The wave overlaps the two as the p-norm (p = 4): 3.227893 x (1 +
  // (1.399515 / 3.227893)^4)^(1/4) = 3.256039 us. 2 us launch + 2.504762 +
  // 3.256039 + 1 us overhead = 8.760801 us, where the same 4 tiles unsplit
  // stream their 1 MiB each on 4 SMs beside 11.196120 us of arithmetic:
  // 2 + 0.04 + 23.133230 x (1 + (11.196120 / 23.133230)^4)^(1/4) + 1 =
  // 2 + 0.04 + 23.444225 + 1 = 26.484225 us.
  CHECK(within_ps(gpu::isolated_time(h100, k, 132), 8'760'801, 3));
  const gpu::KernelDesc whole = gpu::gemm_kernel_with_tile(h100, shape, {64, 64});
  CHECK(whole.split_k == 1);
  CHECK(within_ps(gpu::isolated_time(h100, whole, 132), 26'484'225, 3));
}

TEST_CASE("split-K: a GEMM whose tiles fill the SMs, or a short K, is not split", "[gpu]") {
  gpu::GpuSpec h100 = h100_datasheet();
  h100.efficiency.gemm_split_k_min_slice = 1024;
  // 512 x 512 x 8192 on 64x64 tiles: 64 tiles, two slices fit (132 / 64 = 2).
  CHECK(gpu::gemm_split_k_slices(h100, {512, 512, 8192, 1, gpu::Dtype::bf16}, {64, 64}) == 2);
  // 1024 x 1024: 256 tiles of 64x64 already fill two waves.
  CHECK(gpu::gemm_split_k_slices(h100, {1024, 1024, 8192, 1, gpu::Dtype::bf16}, {64, 64}) == 1);
  // K = 1024 is one slice.
  CHECK(gpu::gemm_split_k_slices(h100, {128, 128, 1024, 1, gpu::Dtype::bf16}, {64, 64}) == 1);
  // 1024 x 1024 x 8192: larger tiles could split (128x128 in 2 slices: 2 us
  // launch + the reduction's 2 us launch and 10,485,760 B at 3015 GB/s
  // (3.48 us) + one wave of 128 CTAs, 22.392240 us arithmetic beside
  // 13.911456 us of loads, overlapped (p = 4) 23.183273 us, + 1 = 31.66 us),
  // but 128 CTAs of 128x64 fill a wave whole: 22.392240 us beside 11.824738
  // us of loads, 22.815417 overlapped: 2 + 22.82 + 1 = 25.82 us; the choice
  // keeps the faster.
  const gpu::GemmShape mid{1024, 1024, 8192, 1, gpu::Dtype::bf16};
  const gpu::KernelDesc k = gpu::gemm_kernel(h100, mid);
  CHECK(k.split_k == 1);
  CHECK(k.tiles == 128);
  CHECK(within_ps(gpu::isolated_time(h100, k, 132), 25'815'417, 3));
  CHECK(within_ps(gpu::isolated_time(h100, gpu::gemm_kernel_with_tile(h100, mid, {128, 128}, 2), 132),
                  31'661'137, 3));
  // 4096 x 4096 x 8192: no tile shape leaves room for a second slice; the six
  // candidates are the unsplit tiles.
  CHECK(gpu::gemm_candidates(h100, {4096, 4096, 8192, 1, gpu::Dtype::bf16}).size() == 6);
}

TEST_CASE("a GEMM's setup grows with the CTAs of its first wave", "[gpu]") {
  gpu::GpuSpec h100 = h100_datasheet();
  h100.efficiency.gemm_setup = sim::ns(int64_t{650});
  h100.efficiency.gemm_setup_per_cta = sim::ns(int64_t{11});
  // 256^3 on 128x256 tiles: 2 tiles: 650 + 2 x 11 = 672 ns.
  CHECK(gpu::gemm_kernel_with_tile(h100, {256, 256, 256, 1, gpu::Dtype::bf16}, {128, 256}).setup ==
        sim::ns(int64_t{672}));
  // 8192^3: 2048 tiles, a first wave of 132: 650 + 1452 = 2102 ns.
  CHECK(gpu::gemm_kernel_with_tile(h100, {8192, 8192, 8192, 1, gpu::Dtype::bf16}, {128, 256}).setup ==
        sim::ns(int64_t{2102}));
}

TEST_CASE("eager softmax: PyTorch's kernel by row length, and its SM cycles", "[gpu]") {
  using gpu::EagerSoftmaxKernel;
  using gpu::Dtype;
  // As torch.profiler named them on two H100s (kernel_grid 2026-11-26 and
  // -27): a warp per row up to 2048 columns and 8 KiB; a CTA per row in
  // registers up to 16 KiB; in shared memory up to 48 KiB; beyond, three passes.
  CHECK(gpu::eager_softmax_kernel(2048, Dtype::bf16) == EagerSoftmaxKernel::warp_per_row);
  CHECK(gpu::eager_softmax_kernel(1024, Dtype::fp32) == EagerSoftmaxKernel::warp_per_row);
  CHECK(gpu::eager_softmax_kernel(2048, Dtype::fp32) == EagerSoftmaxKernel::warp_per_row);
  CHECK(gpu::eager_softmax_kernel(3072, Dtype::bf16) == EagerSoftmaxKernel::block_per_row);
  CHECK(gpu::eager_softmax_kernel(4096, Dtype::fp32) == EagerSoftmaxKernel::block_per_row);
  CHECK(gpu::eager_softmax_kernel(8192, Dtype::bf16) == EagerSoftmaxKernel::block_per_row);
  CHECK(gpu::eager_softmax_kernel(16384, Dtype::bf16) == EagerSoftmaxKernel::smem_per_row);
  CHECK(gpu::eager_softmax_kernel(32000, Dtype::bf16) == EagerSoftmaxKernel::multipass);
  CHECK(gpu::eager_softmax_kernel(50304, Dtype::fp32) == EagerSoftmaxKernel::multipass);

  gpu::GpuSpec h100 = h100_datasheet();
  h100.sm_clock_ghz = 1.98;
  h100.efficiency.softmax = {0.5, 0.88, 2.0};
  gpu::MemoryOpShape s;
  s.kind = gpu::MemoryOpKind::softmax;
  s.rows = 8192;
  s.cols = 4096;
  s.flops_per_element = 0;
  // 8192 x 4096 = 33,554,432 elements at 0.88 cycles: 29,527,900.16 cycles
  // over 132 tiles (2 x 64 MiB of bytes is 2048 tiles of 64 KiB, capped at
  // the SMs) = 223,696.2 cycles a tile, 112.977886 us at 1.98 GHz, above
  // the bytes' 1,016,800 B per tile at 0.7 x 22.84 GB/s (row_reduction) = 63.6 us.
  const gpu::KernelDesc k = gpu::memory_kernel(h100, s);
  CHECK(k.tiles == 132);
  CHECK(k.total_bytes() == Approx(134'217'728.0));
  const gpu::TileCost c = gpu::tile_cost(h100, k, 132);
  CHECK(within_ps(c.compute, 112'977'886, 2));
  CHECK(!c.memory_bound());
  // 4096 x 32000: the three-pass kernel reads each row twice from HBM and
  // writes it once: 3 x 131,072,000 x 2 B, no SM term.
  s.rows = 4096;
  s.cols = 32000;
  const gpu::KernelDesc m = gpu::memory_kernel(h100, s);
  CHECK(m.total_bytes() == Approx(3.0 * 131'072'000 * 2));
  CHECK(m.latency_cycles_per_tile == 0.0);

  // log_softmax: the same kernels less the epilogue's counted issue slots
  // per element (kernel_cost_model.cpp: a division, 8 slots, and in the CTA
  // kernels a recomputed exponential, 1 + 8, for two adds; 128 lanes a
  // cycle). 8192 x 4096 (CTA per row): (0.88 - 15/128) x 33,554,432 /
  // 132 = 193,907.1 cycles a tile, 97.933 us at 1.98 GHz.
  s.rows = 8192;
  s.cols = 4096;
  s.log_softmax = true;
  const gpu::KernelDesc lb = gpu::memory_kernel(h100, s);
  CHECK(lb.latency_cycles_per_tile == Approx((0.88 - 15.0 / 128) * 33'554'432 / 132));
  CHECK(gpu::tile_cost(h100, lb, 132).compute.microseconds() == Approx(97.933).epsilon(1e-4));
  // 32768 x 1024 (a warp per row): (0.5 - 6/128) x 33,554,432 / 132 cycles a tile.
  s.rows = 32768;
  s.cols = 1024;
  CHECK(gpu::memory_kernel(h100, s).latency_cycles_per_tile == Approx((0.5 - 6.0 / 128) * 33'554'432 / 132));
  // 4096 x 16384 (the row cached in shared memory): its bytes alone, read
  // once and written once, 2 x 67,108,864 x 2 B, no SM term.
  s.rows = 4096;
  s.cols = 16384;
  const gpu::KernelDesc sm = gpu::memory_kernel(h100, s);
  CHECK(sm.total_bytes() == Approx(2.0 * 67'108'864 * 2));
  CHECK(sm.latency_cycles_per_tile == 0.0);
  // The three-pass kernel is charged its bytes either way.
  s.rows = 4096;
  s.cols = 32000;
  CHECK(gpu::memory_kernel(h100, s).total_bytes() == Approx(m.total_bytes()));
  // A profile with no softmax cycles: none below zero.
  h100.efficiency.softmax = {};
  s.rows = 32768;
  s.cols = 1024;
  CHECK(gpu::memory_kernel(h100, s).latency_cycles_per_tile == 0.0);
}

TEST_CASE("a GEMM tile's arithmetic and loads overlap as a p-norm", "[gpu][gemm]") {
  // p = 4: (3^4 + 4^4)^(1/4) = 337^(1/4) = 4.284572 us; far from balance the
  // longer bound (0.1 beside 4: 4 x (1 + 0.025^4)^(1/4) = 4.0000004 us); at
  // balance 2^(1/4) = 1.189x.
  CHECK(gpu::overlapped_time(sim::us(int64_t{3}), sim::us(int64_t{4}), 4.0).ps() == 4'284'572);
  CHECK(gpu::overlapped_time(sim::ns(int64_t{100}), sim::us(int64_t{4}), 4.0).ps() == 4'000'000);
  CHECK(gpu::overlapped_time(sim::us(int64_t{4}), sim::us(int64_t{4}), 4.0).ps() == 4'756'828);
  // Knee 0: the plain max (every kernel but a GEMM); under 1 is not physical.
  CHECK(gpu::overlapped_time(sim::us(int64_t{3}), sim::us(int64_t{4}), 0.0) == sim::us(int64_t{4}));
  CHECK_THROWS_AS(gpu::overlapped_time(sim::us(int64_t{3}), sim::us(int64_t{4}), 0.5),
                  std::invalid_argument);
  // A memory kernel keeps the max; a GEMM carries the knee.
  const gpu::GpuSpec h100 = h100_datasheet();
  gpu::MemoryOpShape copy;
  copy.kind = gpu::MemoryOpKind::memcpy;
  copy.elements = int64_t{1} << 20;
  CHECK(gpu::memory_kernel(h100, copy).overlap_knee == 0.0);
  CHECK(gpu::gemm_kernel(h100, {256, 8192, 8192, 1, gpu::Dtype::bf16}).overlap_knee == 4.0);
}

TEST_CASE("a decode GEMM's MMAs run its rows rounded up to 8, not the tile's", "[gpu][gemm]") {
  const gpu::GpuSpec h100 = h100_datasheet();
  // 1 x 8192 x 8192: 8 rows of MMA per tile whatever its M; bytes as ever
  // (the 128 MiB weight + x + y).
  const gpu::KernelDesc one =
      gpu::gemm_kernel_with_tile(h100, {1, 8192, 8192, 1, gpu::Dtype::bf16}, {128, 128});
  CHECK(one.tiles == 64);
  CHECK(one.flops_per_tile == 2.0 * 8 * 128 * 8192);
  CHECK(one.total_bytes() == Approx((8192.0 + 8192.0 * 8192 + 8192.0) * 2));
  for (gpu::GemmTile t : gpu::kGemmTileCandidates) {
    const gpu::KernelDesc k = gpu::gemm_kernel_with_tile(h100, {20, 4096, 1024, 1, gpu::Dtype::bf16}, t);
    CHECK(k.flops_per_tile == 2.0 * 24 * t.n * 1024);  // 20 rows -> 24
    CHECK(k.total_bytes() == Approx((20.0 * 1024 + 1024.0 * 4096 + 20.0 * 4096) * 2));
    // At or above the tile's M the tile is whole, as before.
    const gpu::KernelDesc big = gpu::gemm_kernel_with_tile(h100, {512, 4096, 1024, 1, gpu::Dtype::bf16}, t);
    CHECK(big.flops_per_tile == 2.0 * t.m * t.n * 1024);
  }
}
