// cuDNN's decode attention kernel by kernel (attention_kernel_model.h, the
// cudnn family's decode terms) against PyTorch's default SDPA for one decode
// token on one H200 and one H100, 2026-11-28 (calibration/measurements/
// {h200-x1,h100-sxm}/decode_attention_split_2026-11-28: 224 cases each,
// batch 1-128, 256-16384 keys, 1x8 ... 8x64 heads, d 128): each case's
// split-KV kernel and, when cuDNN splits the keys, its lean_reduction_kernel,
// as torch.profiler timed them, against gcsim's isolated time less the gap a
// profiler leaves before the next kernel (gpu_spec.h launch_gap, with the
// profile's launch_inside_kernel). The presets' decode terms are fitted
// (calibration/fit/decode_kernel_fit.h) on each GPU's even-index cases; the
// odd-index ones, the spacings, and the older attention_families decode
// runs (test_attention_family_fit.cpp) are held out.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "calibration/fit/decode_kernel_fit.h"
#include "catch.h"
#include "error_stats.h"
#include "models/gpu/kernel_cost_model.h"
#include "preset_fixtures.h"
#include "workloads/estimate/kernel_estimate.h"

using namespace gcsim;
using calibration::DecodeKernelPoint;

namespace {

std::vector<DecodeKernelPoint> points(const std::string& folder) {
  return calibration::load_decode_kernel_points(std::string(GCSIM_SOURCE_DIR) + "/calibration/measurements/" +
                                                    folder + "/decode_attention_split_2026-11-28/"
                                                             "decode_attention_split.json",
                                                models::gpu::AttentionFamily::cudnn);
}

std::vector<DecodeKernelPoint> every_other(const std::vector<DecodeKernelPoint>& all, size_t first) {
  std::vector<DecodeKernelPoint> out;
  for (size_t i = first; i < all.size(); i += 2) out.push_back(all[i]);
  return out;
}

struct Gpu {
  const char* folder;
  const char* preset;
  // The cudnn decode terms of 2026-11-26 (attention_families fit: bandwidth,
  // wave overhead, split overhead, us), where the fit starts.
  double bandwidth, wave_us, split_us;
};
const Gpu kGpus[] = {{"h200-x1", "h200-sxm", 0.9192, 1.418, 3.414}, {"h100-sxm", "h100-sxm", 0.908, 1.082, 3.324}};

}  // namespace

TEST_CASE("cuDNN decode terms: the presets' are the fit on each GPU's even-index kernels",
          "[attention][decode][measured]") {
  for (const Gpu& g : kGpus) {
    INFO(g.preset);
    const models::gpu::GpuSpec shipped = test::calibrated_gpu_preset(g.preset);
    models::gpu::GpuSpec start = shipped;
    auto& c = start.efficiency.cudnn_attention;
    c.decode_bandwidth = g.bandwidth;
    c.decode_wave_overhead = sim::Duration::from_seconds(g.wave_us * 1e-6);
    c.decode_split_overhead = sim::Duration::from_seconds(g.split_us * 1e-6);
    c.decode_kernel_overhead = c.decode_block_latency = c.decode_split_per_doubling = sim::Duration::zero();
    const auto fit = calibration::fit_decode_kernels(start, models::gpu::AttentionFamily::cudnn,
                                                     every_other(points(g.folder), 0));
    const auto& p = shipped.efficiency.cudnn_attention;
    std::printf("%s cudnn decode fit: bandwidth %.4f, wave %.0f ns, split %.0f ns, kernel %.0f ns, block %.0f ns, "
                "per doubling %.0f ns\n",
                g.preset, fit.decode_bandwidth, fit.decode_wave_overhead.seconds() * 1e9,
                fit.decode_split_overhead.seconds() * 1e9, fit.decode_kernel_overhead.seconds() * 1e9,
                fit.decode_block_latency.seconds() * 1e9,
                fit.decode_split_per_doubling.seconds() * 1e9);
    CHECK(fit.decode_bandwidth == Approx(p.decode_bandwidth).margin(1e-4));
    for (const auto& [a, b] : {std::pair{fit.decode_wave_overhead, p.decode_wave_overhead},
                               {fit.decode_split_overhead, p.decode_split_overhead},
                               {fit.decode_kernel_overhead, p.decode_kernel_overhead},
                               {fit.decode_block_latency, p.decode_block_latency},
                               {fit.decode_split_per_doubling, p.decode_split_per_doubling}}) {
      CHECK(std::abs((a - b).seconds()) <= 1e-9);  // whole nanoseconds, as the preset writes them
    }
  }
}

TEST_CASE("cuDNN decode attention on one H200 and one H100: held-out kernels within issue 16's 10% median",
          "[attention][decode][measured]") {
  for (const Gpu& g : kGpus) {
    INFO(g.preset);
    const models::gpu::GpuSpec spec = test::calibrated_gpu_preset(g.preset);
    const auto all = points(g.folder);
    REQUIRE(all.size() == 224);
    std::vector<double> held, spacing, short_few, large, every;
    calibration::decode_mean_abs_error(spec, every_other(all, 1), &held);
    calibration::decode_mean_abs_error(spec, all, &every);
    for (size_t i = 0; i < all.size(); ++i) {
      const auto& c = all[i];
      spacing.push_back(calibration::decode_spacing_us(spec, c) / c.spacing_us - 1);
      const int64_t pairs = c.shape.batch * c.shape.kv_heads;
      if (c.shape.kv_len <= 512 && pairs <= 64) short_few.push_back(every[i]);
      // Bandwidth-bound: at least 64 MiB of KV (pairs x keys x 512 B).
      if (pairs * c.shape.kv_len * 512 >= (int64_t{64} << 20)) large.push_back(every[i]);
    }
    const double worst = std::abs(*std::max_element(held.begin(), held.end(), [](double a, double b) {
      return std::abs(a) < std::abs(b);
    }));
    std::printf("decode %s: held-out durations median %.1f%% (worst %.1f%%), spacing %.1f%%, "
                "<= 512 keys at <= 64 pairs %.1f%%, >= 64 MiB of KV %.1f%%\n",
                g.preset, 100 * test::median_abs(held), 100 * worst, 100 * test::median_abs(spacing), 100 * test::median_abs(short_few),
                100 * test::median_abs(large));
    // Issue 16's 10% median per family, on each slice: the held-out half,
    // the spacings (never fitted), the latency-bound short decodes (36% short
    // before the CTA's floor) and the bandwidth-bound long ones.
    CHECK(test::median_abs(held) <= 0.10);
    CHECK(test::median_abs(spacing) <= 0.10);
    CHECK(test::median_abs(short_few) <= 0.10);
    CHECK(test::median_abs(large) <= 0.10);
    // No held-out case past 25% (the prototype's worst, 16-23%: a few
    // 8-16 pair cases whose piece count cuDNN chooses otherwise than
    // FlashAttention-2's rule; calibration/fit/decode_attention_split_2026-11-28.md).
    CHECK(worst <= 0.25);
  }
}

TEST_CASE("cuDNN splits a decode's keys exactly where gcsim's cudnn decode does", "[attention][decode][measured]") {
  // Measured on both GPUs: a lean_reduction_kernel follows the split-KV
  // kernel exactly when batch x KV heads <= 64 and keys >= 1024. gcsim: the
  // flash-decoding rule (kernel_cost_model.h decode_kv_splits: split while the
  // pairs fill under 80% of the SMs, <= 105 on 132) and the family's
  // decode_min_split_keys, 1024 for cudnn (it split 512-key decodes too before).
  for (const Gpu& g : kGpus) {
    INFO(g.preset);
    const models::gpu::GpuSpec spec = test::calibrated_gpu_preset(g.preset);
    int agree = 0;
    for (const auto& c : points(g.folder)) {
      const int64_t pairs = c.shape.batch * c.shape.kv_heads;
      INFO(pairs << " pairs, " << c.shape.kv_len << " keys");
      CHECK(c.split == (pairs <= 64 && c.shape.kv_len >= 1024));
      const auto k = models::gpu::attention_kernel(spec, c.shape);
      const bool gcsim_split = k.tiles > pairs;
      CHECK(gcsim_split == c.split);
      agree += gcsim_split == c.split ? 1 : 0;
    }
    CHECK(agree == 224);
  }
}

TEST_CASE("a decode file of another schema is refused, naming it", "[attention][decode]") {
  const std::string path = std::string(GCSIM_SOURCE_DIR) +
                           "/calibration/measurements/h200-x1/calibration_set_2026-11-28/row_reduce.json";
  try {
    calibration::load_decode_kernel_points(path, models::gpu::AttentionFamily::cudnn);
    FAIL("no error");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find("row_reduce.json") != std::string::npos);
    CHECK(std::string(e.what()).find("decode_attention_split.v1") != std::string::npos);
  }
}

TEST_CASE("a latency-bound decode tile is labelled so, and the whiteboard estimate keeps its floor",
          "[attention][decode]") {
  // Batch 1, 8 KV heads (64 query heads), 512 keys, d 128 on the H200: 8
  // unsplit CTAs (below cuDNN's 1024 keys), each walking 4 key blocks, so its
  // floor is (4 + 1) x decode_block_latency = 5 x 830 ns = 4.15 us, where its
  // 2 x 512 x 128 x 2 B = 256 KiB of K and V streams in well under a
  // microsecond at one SM's reach: the profiled kernel took 5.9-6.6 us.
  const models::gpu::GpuSpec spec = test::calibrated_gpu_preset("h200-sxm");
  models::gpu::AttentionShape s;
  s.batch = 1;
  s.heads = 64;
  s.kv_heads = 8;
  s.q_len = 1;
  s.kv_len = 512;
  s.family = models::gpu::AttentionFamily::cudnn;
  const auto k = models::gpu::attention_kernel(spec, s);
  REQUIRE(k.tiles == 8);
  const auto tile = models::gpu::tile_cost(spec, k, 8);
  CHECK(tile.floor.microseconds() == Approx(5 * 0.830).epsilon(1e-6));
  CHECK(std::string(tile.bound()) == "latency");
  const auto e = workloads::estimate::estimate_kernel(spec, k);
  CHECK(e.latency_bound);
  CHECK(e.roofline.value == Approx(5 * 0.830e-6).epsilon(1e-6));  // one wave x the floor
  CHECK(e.roofline.formula.find("latency floor") != std::string::npos);
  // 64 sequences at 512 keys: 512 CTAs over 132 SMs (4 waves), each tile's
  // 256 KiB now shared by every SM's stream: the bytes, not the floor, bound it.
  s.batch = 64;
  const auto wide = models::gpu::attention_kernel(spec, s);
  CHECK(std::string(models::gpu::tile_cost(spec, wide, spec.sm_count).bound()) == "memory");
  CHECK_FALSE(workloads::estimate::estimate_kernel(spec, wide).latency_bound);
}
