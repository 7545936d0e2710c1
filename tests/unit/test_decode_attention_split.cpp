// gcsim's cuDNN decode attention (attention_kernel_model.h: split-KV CTAs
// reading the KV cache, per-wave and split overheads fitted on 2026-11-26's
// attention_families runs) against PyTorch's default SDPA for one decode
// token on one H200 and one H100, 2026-11-28 (calibration/measurements/
// {h200-x1,h100-sxm}/decode_attention_split_2026-11-28: 224 cases each,
// batch 1-128, 256-16384 keys, 1x8 ... 8x64 heads, d 128; nothing fitted to
// them). Each case's spacing (CUDA events, back to back) and its kernels'
// profiled durations (the split-KV kernel and, when cuDNN splits the keys,
// its lean_reduction_kernel) against gcsim's isolated time and that time
// less the gap a profiler leaves before the next kernel (gpu_spec.h
// launch_gap, with the profile's launch_inside_kernel).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "catch.h"
#include "models/gpu/kernel_cost_model.h"
#include "preset_fixtures.h"

using namespace gcsim;

namespace {

struct CaseError {
  int64_t pairs = 0, keys = 0;  // batch x KV heads, keys per sequence
  double spacing = 0, duration = 0;  // gcsim / measured - 1
  bool measured_split = false, gcsim_split = false;
};

std::vector<CaseError> errors(const std::string& folder, const std::string& gpu) {
  std::ifstream in(std::string(GCSIM_SOURCE_DIR) + "/calibration/measurements/" + folder +
                   "/decode_attention_split_2026-11-28/decode_attention_split.json");
  REQUIRE(in.good());
  const auto doc = nlohmann::json::parse(in);
  const models::gpu::GpuSpec spec = test::calibrated_gpu_preset(gpu);
  const sim::Duration gap = models::gpu::launch_gap(spec.kernel_launch_latency, spec.launch_inside());
  std::vector<CaseError> out;
  for (const auto& r : doc.at("decode")) {
    if (!r.contains("timing")) continue;
    models::gpu::AttentionShape s;
    s.batch = r.at("batch").get<int64_t>();
    s.heads = r.at("q_heads").get<int64_t>();
    s.kv_heads = r.at("kv_heads").get<int64_t>();
    s.q_len = 1;
    s.kv_len = r.at("keys").get<int64_t>();
    s.head_dim = 128;
    s.family = models::gpu::AttentionFamily::cudnn;
    const auto k = models::gpu::attention_kernel(spec, s);
    const sim::Duration spacing = models::gpu::isolated_time(spec, k, spec.sm_count);
    const double profiled = r.at("main_us").get<double>() + r.at("reduction_us").get<double>();
    CaseError e;
    e.pairs = s.batch * s.kv_heads;
    e.keys = s.kv_len;
    e.spacing = spacing.seconds() * 1e6 / r.at("timing").at("time_us").get<double>() - 1;
    e.duration = (spacing - gap).seconds() * 1e6 / profiled - 1;
    e.measured_split = r.at("reduction_us").get<double>() > 0;
    e.gcsim_split = models::gpu::decode_kv_splits(spec, e.pairs, e.keys) > 1;
    out.push_back(e);
  }
  return out;
}

double median_abs(std::vector<double> v) {
  for (double& x : v) x = std::abs(x);
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

TEST_CASE("cuDNN decode attention held out on one H200 and one H100: median within 10%",
          "[attention][decode][measured]") {
  for (const auto& [folder, gpu] : {std::pair{"h200-x1", "h200-sxm"}, {"h100-sxm", "h100-sxm"}}) {
    INFO(gpu);
    const auto e = errors(folder, gpu);
    REQUIRE(e.size() == 224);
    std::vector<double> spacing, duration, small_keys, large;
    for (const auto& c : e) {
      spacing.push_back(c.spacing);
      duration.push_back(c.duration);
      if (c.keys == 256) small_keys.push_back(c.duration);
      // Bandwidth-bound: at least 64 MiB of KV (pairs x keys x 512 B).
      if (c.pairs * c.keys * 512 >= (int64_t{64} << 20)) large.push_back(c.duration);
    }
    std::printf("decode %s: spacing median |error| %.1f%%, durations %.1f%%; 256 keys %.1f%%; >= 64 MiB of KV %.1f%%\n",
                gpu, 100 * median_abs(spacing), 100 * median_abs(duration), 100 * median_abs(small_keys),
                100 * median_abs(large));
    // Issue 16's bar: each attention family within 10% median on H100 and
    // H200 (H200 7.8% / 4.8%, H100 6.2% / 4.6% when first run).
    CHECK(median_abs(spacing) <= 0.10);
    CHECK(median_abs(duration) <= 0.10);
    // The bandwidth-bound cases: the KV read at the fitted decode bandwidth.
    CHECK(median_abs(large) <= 0.10);
    // Not met, and listed (README, calibration/fit/decode_attention_split_
    // 2026-11-28.md): at 256 keys one CTA per (sequence, KV head) walks its
    // two key blocks latency-bound, 5.9-6.6 us measured at any head count,
    // where gcsim streams the bytes after a wave's overhead (-36 .. -41%);
    // a listed miss is still one.
    CHECK(median_abs(small_keys) > 0.10);
  }
}

TEST_CASE("cuDNN splits a decode's keys where gcsim's flash-decoding rule does, but at 512 keys",
          "[attention][decode][measured]") {
  // Measured on both GPUs: a lean_reduction_kernel follows the split-KV
  // kernel exactly when batch x KV heads <= 64 and keys >= 1024.
  // decode_kv_splits (FlashAttention-2's heuristic, kernel_cost_model.h)
  // splits while the pairs fill under 80% of the SMs (<= 105 on 132 SMs)
  // and there are >= 2 pieces of 256 keys: the same cases, and also the 512
  // keys ones, which cuDNN runs whole (listed: the split overhead there
  // stands in for the unsplit CTA's latency, -11 .. -20% on the H200).
  for (const auto& [folder, gpu] : {std::pair{"h200-x1", "h200-sxm"}, {"h100-sxm", "h100-sxm"}}) {
    INFO(gpu);
    int agree = 0, at_512 = 0;
    for (const auto& c : errors(folder, gpu)) {
      INFO(c.pairs << " pairs, " << c.keys << " keys");
      CHECK(c.measured_split == (c.pairs <= 64 && c.keys >= 1024));
      if (c.keys == 512) {
        CHECK(c.gcsim_split == (c.pairs <= 64));
        CHECK_FALSE(c.measured_split);
        ++at_512;
      } else {
        CHECK(c.gcsim_split == c.measured_split);
        ++agree;
      }
    }
    CHECK(agree == 192);
    CHECK(at_512 == 32);
  }
}
