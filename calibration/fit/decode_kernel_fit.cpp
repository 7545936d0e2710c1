#include "calibration/fit/decode_kernel_fit.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "calibration/fit/schema_document.h"
#include "models/gpu/kernel_cost_model.h"

namespace gcsim::calibration {

using models::gpu::AttentionFamily;
using models::gpu::FusedAttentionParams;
using models::gpu::GpuSpec;

std::vector<DecodeKernelPoint> load_decode_kernel_points(const std::string& path, AttentionFamily family) {
  const nlohmann::json doc = read_schema_document(path, "gcsim.decode_attention_split.v1");
  std::vector<DecodeKernelPoint> out;
  for (const auto& r : doc.value("decode", nlohmann::json::array())) {
    if (!r.contains("timing") || !r.contains("main_us")) continue;  // a failed case
    DecodeKernelPoint p;
    p.shape.batch = r.at("batch").get<int64_t>();
    p.shape.heads = r.at("q_heads").get<int64_t>();
    p.shape.kv_heads = r.at("kv_heads").get<int64_t>();
    p.shape.q_len = 1;
    p.shape.kv_len = r.at("keys").get<int64_t>();
    p.shape.head_dim = r.at("head_dim").get<int64_t>();
    p.shape.family = family;
    p.duration_us = r.at("main_us").get<double>() + r.at("reduction_us").get<double>();
    p.spacing_us = r.at("timing").at("time_us").get<double>();
    p.split = r.at("reduction_us").get<double>() > 0.0;
    out.push_back(p);
  }
  return out;
}

double decode_spacing_us(const GpuSpec& spec, const DecodeKernelPoint& p) {
  const auto k = models::gpu::attention_kernel(spec, p.shape);
  return models::gpu::isolated_time(spec, k, spec.sm_count).seconds() * 1e6;
}

double decode_duration_us(const GpuSpec& spec, const DecodeKernelPoint& p) {
  return decode_spacing_us(spec, p) -
         models::gpu::launch_gap(spec.kernel_launch_latency, spec.launch_inside()).seconds() * 1e6;
}

double decode_mean_abs_error(const GpuSpec& spec, const std::vector<DecodeKernelPoint>& points,
                             std::vector<double>* errors) {
  double sum = 0.0;
  for (const auto& p : points) {
    const double e = decode_duration_us(spec, p) / p.duration_us - 1.0;
    sum += std::abs(e);
    if (errors != nullptr) errors->push_back(e);
  }
  return points.empty() ? 0.0 : sum / static_cast<double>(points.size());
}

namespace {

// Coordinate descent from `spec`'s family terms: each term stepped while the
// mean relative error falls, the steps shrinking each round.
FusedAttentionParams descend(const GpuSpec& spec, AttentionFamily family,
                             const std::vector<DecodeKernelPoint>& points) {
  GpuSpec s = spec;
  FusedAttentionParams& p = s.efficiency.fused_attention(family);
  // Each term, its step (us; the bandwidth a fraction) and its range.
  struct Term {
    double* value;
    double step, lo, hi;
  };
  double bw = p.decode_bandwidth;
  double us[5] = {p.decode_wave_overhead.microseconds(), p.decode_split_overhead.microseconds(),
                  p.decode_kernel_overhead.microseconds(), p.decode_block_latency.microseconds(),
                  p.decode_split_per_doubling.microseconds()};
  const double kernel_hi = FusedAttentionParams::kMaxDecodeKernelOverhead.microseconds();
  const double step_hi = FusedAttentionParams::kMaxDecodeStepLatency.microseconds();
  std::vector<Term> terms{{&bw, 0.02, 0.5, 1.0},         {&us[0], 0.25, 0.0, 1000.0},  {&us[1], 0.25, 0.0, 50.0},
                          {&us[2], 0.25, 0.0, kernel_hi}, {&us[3], 0.25, 0.0, step_hi}, {&us[4], 0.25, 0.0, step_hi}};
  const auto apply = [&] {
    p.decode_bandwidth = bw;
    p.decode_wave_overhead = sim::Duration::from_seconds(us[0] * 1e-6);
    p.decode_split_overhead = sim::Duration::from_seconds(us[1] * 1e-6);
    p.decode_kernel_overhead = sim::Duration::from_seconds(us[2] * 1e-6);
    p.decode_block_latency = sim::Duration::from_seconds(us[3] * 1e-6);
    p.decode_split_per_doubling = sim::Duration::from_seconds(us[4] * 1e-6);
  };
  apply();
  double best = decode_mean_abs_error(s, points);
  for (int round = 0; round < 30; ++round) {
    for (Term& t : terms) {
      for (double sign : {1.0, -1.0}) {
        for (;;) {
          const double was = *t.value;
          *t.value = std::clamp(was + sign * t.step, t.lo, t.hi);
          apply();
          const double e = decode_mean_abs_error(s, points);
          if (e < best - 1e-12) {
            best = e;
          } else {
            *t.value = was;
            apply();
            break;
          }
        }
      }
      t.step *= 0.7;
    }
  }
  // Whole nanoseconds and four digits of the bandwidth, as a preset writes them.
  bw = std::round(bw * 1e4) / 1e4;
  for (double& u : us) u = std::round(u * 1e3) / 1e3;
  apply();
  return p;
}

}  // namespace

FusedAttentionParams fit_decode_kernels(const GpuSpec& spec, AttentionFamily family,
                                        const std::vector<DecodeKernelPoint>& points) {
  // The floor and the per-wave and per-kernel costs trade against each other
  // at the few-CTA end, where one descent can stop with no floor at all: it
  // starts from several block latencies (0-1.2 us, the unsplit floor's
  // range on the measured GPUs) and keeps the best.
  FusedAttentionParams best;
  double best_error = 0.0;
  bool first = true;
  for (double start_us : {0.0, 0.3, 0.6, 0.9, 1.2}) {
    GpuSpec s = spec;
    FusedAttentionParams& p = s.efficiency.fused_attention(family);
    p.decode_block_latency = sim::Duration::from_seconds(start_us * 1e-6);
    const FusedAttentionParams fit = descend(s, family, points);
    p = fit;
    const double e = decode_mean_abs_error(s, points);
    if (first || e < best_error - 1e-12) {
      best = fit;
      best_error = e;
      first = false;
    }
  }
  return best;
}

}  // namespace gcsim::calibration
