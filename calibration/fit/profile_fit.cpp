#include "calibration/fit/profile_fit.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <utility>
#include <vector>

#include "models/gpu/hbm.h"
#include "models/gpu/kernel_cost_model.h"

namespace gcsim::calibration {

using models::gpu::Dtype;
using models::gpu::ExecUnit;
using models::gpu::GpuSpec;
using models::gpu::KernelDesc;

namespace {

// Columns of the linear system.
enum Param : int {
  kLaunch, kSetup, kOverhead, kAttOverhead, kAttBwdOverhead,  // us
  kTf32, kBf16, kFp16, kFp8, kInt8,        // 1 / tensor efficiency
  kVector,                                 // 1 / vector efficiency (fp32 GEMM)
  kAttention, kAttentionBwd,               // 1 / attention efficiencies
  kHbm,                                    // 1 / hbm efficiency
  kRow,                                    // 1 / (hbm * row_reduction)
  kParams
};

int tensor_param(Dtype d) {
  switch (d) {
    case Dtype::tf32: return kTf32;
    case Dtype::bf16: return kBf16;
    case Dtype::fp16: return kFp16;
    case Dtype::fp8: return kFp8;
    case Dtype::int8: return kInt8;
    case Dtype::fp32: return kVector;
  }
  return kBf16;
}

int tile_index(const KernelDesc& k, const Measurement& m) {
  if (!m.gemm) return -1;
  // The tile is named at the end of the kernel name: "... tile 128x256".
  const auto pos = k.name.rfind("tile ");
  if (pos == std::string::npos) return -1;
  const std::string t = k.name.substr(pos + 5);
  for (size_t i = 0; i < std::size(models::gpu::kGemmTileCandidates); ++i) {
    const auto& c = models::gpu::kGemmTileCandidates[i];
    if (t == std::to_string(c.m) + "x" + std::to_string(c.n)) return static_cast<int>(i);
  }
  return -1;
}

// One measurement's row: coefficients of each parameter, and of the tile
// multiplier's inverse (the compute term, which is c / e_unit).
struct Row {
  Eigen::Matrix<double, kParams, 1> a = Eigen::Matrix<double, kParams, 1>::Zero();
  int tile = -1;
  double tile_term = 0;  // compute time of the GEMM at f = 1 and the current e_unit, us
  // Time the model adds that no column fits here (a GEMM's setup per CTA of
  // its first wave, kept from the base spec), us.
  double offset_us = 0;
};

double inverse_of(const GpuSpec& s, int p) {
  const auto& e = s.efficiency;
  switch (p) {
    case kTf32: return 1 / e.tensor_for(Dtype::tf32);
    case kBf16: return 1 / e.tensor_for(Dtype::bf16);
    case kFp16: return 1 / e.tensor_for(Dtype::fp16);
    case kFp8: return 1 / e.tensor_for(Dtype::fp8);
    case kInt8: return 1 / e.tensor_for(Dtype::int8);
    case kVector: return 1 / e.vector;
    case kAttention: return 1 / e.attention;
    case kAttentionBwd: return 1 / e.attention_backward;
    case kHbm: return 1 / e.hbm;
    case kRow: return 1 / (e.hbm * e.row_reduction);
  }
  return 0;
}

// How a tile's time splits between its two bounds, as weights on each:
// time = w_c compute + w_m memory. With the plain max the longer bound
// carries it all (1, 0). A p-norm t = (c^p + m^p)^(1/p) is homogeneous of
// degree 1, so t = c (c/t)^(p-1) + m (m/t)^(p-1) exactly (Euler): the
// weights are taken at the current estimate and held while the linear
// solve runs, and the alternation brings them to the solution.
std::pair<double, double> bound_weights(const models::gpu::TileCost& cost) {
  const double c = cost.compute.seconds(), m = cost.memory.seconds();
  const double t = models::gpu::overlapped_time(cost.compute, cost.memory, cost.overlap_knee).seconds();
  if (!(cost.overlap_knee > 0.0) || !(c > 0.0 && m > 0.0) || !(t > 0.0)) {
    return cost.memory_bound() ? std::pair{0.0, 1.0} : std::pair{1.0, 0.0};
  }
  const double p = cost.overlap_knee;
  return {std::pow(c / t, p - 1.0), std::pow(m / t, p - 1.0)};
}

// Adds one wave (on `active` SMs, `count` times) of kernel k to the row.
// `tile_factor`: the GEMM tile multiplier inside k.efficiency (1 otherwise).
void add_wave(Row& row, const GpuSpec& s, const KernelDesc& k, const Measurement& m, int active,
              double count, double tile_factor) {
  row.a[kOverhead] += count;
  if (m.attention) row.a[m.attention->backward ? kAttBwdOverhead : kAttOverhead] += count;
  models::gpu::TileCost cost = models::gpu::tile_cost(s, k, active);
  // At the measured clock: the arithmetic stretches, the bytes do not.
  cost.compute = cost.compute.scaled(compute_stretch(s, m));
  const auto [compute_weight, memory_weight] = bound_weights(cost);
  if (memory_weight > 0.0) {
    // The memory time at e_hbm (and e_row) = 1.
    const double at_one = cost.memory.microseconds() * s.efficiency.hbm * k.bandwidth_efficiency;
    const bool row_op = k.bandwidth_efficiency < 1.0 || (m.memory && m.memory->rows > 0);
    row.a[row_op ? kRow : kHbm] += count * memory_weight * at_one;
  }
  if (!(compute_weight > 0.0)) return;
  int p = k.unit == ExecUnit::vector ? kVector : tensor_param(k.dtype);
  if (m.attention) p = m.attention->backward ? kAttentionBwd : kAttention;
  if (k.unit == ExecUnit::memory) p = kVector;
  // At unit efficiency e = 1 but with the tile multiplier: c / f.
  const double at_one = cost.compute.microseconds() * k.efficiency / tile_factor;
  row.a[p] += count * compute_weight * at_one;
  // The tile multipliers are fitted on compute-bound waves only: where the
  // bytes are the longer bound the arithmetic's weight is small and a
  // multiplier fitted there would follow the noise of the memory time (and
  // then move the larger GEMMs' tile choice).
  if (m.gemm && !cost.memory_bound()) row.tile_term += count * compute_weight * cost.compute.microseconds();
}

Row row_for(const GpuSpec& s, const Measurement& m) {
  Row row;
  const KernelDesc k = kernel_for(s, m);
  row.a[kLaunch] = 1;
  row.a[kSetup] = m.gemm ? 1 : 0;
  if (m.gemm) {
    const int64_t first_wave = std::min<int64_t>(k.tiles, s.sm_count);
    row.offset_us = (s.efficiency.gemm_setup_per_cta * first_wave).microseconds();
    if (k.split_k > 1) {
      // The split-K reduction kernel in the setup: a launch, and its bytes
      // (partials read, C written) at the HBM efficiency.
      row.a[kLaunch] += 1;
      row.a[kHbm] += models::gpu::gemm_split_k_reduce_bytes(*m.gemm, k.split_k) /
                     s.hbm_bandwidth.bytes_per_s() * 1e6;
    }
  }
  row.tile = tile_index(k, m);
  const double f = row.tile >= 0 ? s.efficiency.gemm_tile[static_cast<size_t>(row.tile)] : 1.0;
  const int width = models::gpu::wave_width(s, k, s.sm_count);
  const int64_t full = k.tiles / width;
  const int last = static_cast<int>(k.tiles % width);
  if (full > 0) add_wave(row, s, k, m, width, static_cast<double>(full), f);
  if (last > 0) add_wave(row, s, k, m, last, 1, f);
  return row;
}

void set_param(GpuSpec& s, int p, double v) {
  auto& e = s.efficiency;
  auto inv = [&](double x) { return std::clamp(1.0 / x, 1e-3, 1.0); };
  switch (p) {
    case kLaunch: s.kernel_launch_latency = sim::Duration::from_seconds(std::max(0.0, v) * 1e-6); break;
    case kSetup: e.gemm_setup = sim::Duration::from_seconds(std::max(0.0, v) * 1e-6); break;
    case kOverhead: e.tile_overhead = sim::Duration::from_seconds(std::max(0.0, v) * 1e-6); break;
    case kAttOverhead:
      e.attention_tile_overhead = sim::Duration::from_seconds(std::max(0.0, v) * 1e-6);
      break;
    case kAttBwdOverhead:
      e.attention_backward_tile_overhead = sim::Duration::from_seconds(std::max(0.0, v) * 1e-6);
      break;
    case kTf32: e.tensor[static_cast<size_t>(Dtype::tf32)] = inv(v); break;
    case kBf16: e.tensor[static_cast<size_t>(Dtype::bf16)] = inv(v); break;
    case kFp16: e.tensor[static_cast<size_t>(Dtype::fp16)] = inv(v); break;
    case kFp8: e.tensor[static_cast<size_t>(Dtype::fp8)] = inv(v); break;
    case kInt8: e.tensor[static_cast<size_t>(Dtype::int8)] = inv(v); break;
    case kVector: e.vector = inv(v); break;
    case kAttention: e.attention = inv(v); break;
    case kAttentionBwd: e.attention_backward = inv(v); break;
    case kHbm: e.hbm = inv(v); break;
    case kRow: e.row_reduction = std::clamp(1.0 / (v * e.hbm), 1e-3, 1.0); break;
  }
}

// Lower bounds: times >= 0, inverse efficiencies >= 1 (efficiency <= 1).
double lower_bound(int p) { return p <= kAttBwdOverhead ? 0.0 : 1.0; }

// Weighted least squares with simple bounds: solve, pin the most violated
// parameter to its bound, solve again.
Eigen::VectorXd bounded_solve(const Eigen::MatrixXd& a, const Eigen::VectorXd& b,
                              const std::vector<int>& params) {
  const int n = static_cast<int>(params.size());
  std::vector<bool> pinned(n, false);
  Eigen::VectorXd x = Eigen::VectorXd::Zero(n);
  for (int round = 0; round <= n; ++round) {
    std::vector<int> free;
    Eigen::VectorXd rhs = b;
    for (int j = 0; j < n; ++j) {
      if (pinned[j]) {
        x[j] = lower_bound(params[j]);
        rhs -= a.col(j) * x[j];
      } else {
        free.push_back(j);
      }
    }
    if (free.empty()) break;
    Eigen::MatrixXd af(a.rows(), static_cast<Eigen::Index>(free.size()));
    for (size_t j = 0; j < free.size(); ++j) af.col(static_cast<Eigen::Index>(j)) = a.col(free[j]);
    // Columns scaled to unit norm for conditioning.
    Eigen::VectorXd scale = af.colwise().norm().transpose();
    for (Eigen::Index j = 0; j < scale.size(); ++j) {
      if (scale[j] > 0) af.col(j) /= scale[j];
    }
    const Eigen::VectorXd y = af.colPivHouseholderQr().solve(rhs);
    int worst = -1;
    double worst_gap = 0;
    for (size_t j = 0; j < free.size(); ++j) {
      const double v = scale[static_cast<Eigen::Index>(j)] > 0 ? y[static_cast<Eigen::Index>(j)] / scale[static_cast<Eigen::Index>(j)] : 0;
      x[free[j]] = v;
      const double gap = lower_bound(params[free[j]]) - v;
      if (gap > worst_gap) {
        worst_gap = gap;
        worst = free[j];
      }
    }
    if (worst < 0) break;
    pinned[worst] = true;
  }
  return x;
}

// No tile runs its mainloop more efficiently than the largest ones: a
// smaller tile reuses each operand byte it loads over fewer MMAs (its
// arithmetic intensity tm tn / (tm + tn) is lower), so its multiplier is
// held at or under the best of the largest tiles'. Without it a small
// tile's multiplier, fitted on the few small GEMMs that chose it, passed
// the large tiles' and took the largest GEMMs. At the cap a small tile can
// still win a large GEMM on wave quantization alone (the H200 profile's
// 8192^3 GEMM: 125 waves of 64x64, where cuBLAS runs 128x256); holding
// every tile under each tile that contains it orders them as cuBLAS does
// but moves the fixed costs (launch +434 ns on the H100), not taken yet.
template <typename Multipliers>
void cap_at_largest_tiles(Multipliers& f) {
  const auto& tiles = models::gpu::kGemmTileCandidates;
  int64_t largest = 0;
  for (const auto& t : tiles) largest = std::max(largest, t.m * t.n);
  double cap = 0.0;
  for (size_t i = 0; i < std::size(tiles); ++i) {
    if (tiles[i].m * tiles[i].n == largest) cap = std::max(cap, f[i]);
  }
  for (size_t i = 0; i < std::size(tiles); ++i) f[i] = std::min(f[i], cap);
}

double weighted_rms(const GpuSpec& s, const std::vector<const Measurement*>& cases) {
  double sum = 0;
  for (const Measurement* m : cases) {
    const double e = (predicted_us(s, *m) - m->time_us) / m->time_us;
    sum += e * e;
  }
  return cases.empty() ? 0 : std::sqrt(sum / static_cast<double>(cases.size()));
}

GpuSpec fit_with_headroom(GpuSpec s, const std::vector<const Measurement*>& cases,
                          std::vector<std::string>& notes, const MeasuredFixedCosts& fixed) {
  // A measured parameter is set once; its column's term moves to the
  // right-hand side.
  std::map<int, double> kept;
  if (fixed.launch_us) kept[kLaunch] = *fixed.launch_us;
  if (fixed.overhead_us) kept[kOverhead] = *fixed.overhead_us;
  for (const auto& [p, v] : kept) set_param(s, p, v);
  // The alternation is not monotone: a tile's multiplier fitted on the few
  // cases that chose it can move the larger GEMMs to another tile. Each
  // round ends in a complete profile; the one that fits the cases best is
  // kept (on exact synthetic times the last round is that one).
  constexpr int kRounds = 16;
  GpuSpec best = s;
  double best_rms = std::numeric_limits<double>::infinity();
  for (int round = 0; round < kRounds; ++round) {
    std::vector<Row> rows;
    rows.reserve(cases.size());
    for (const Measurement* m : cases) rows.push_back(row_for(s, *m));
    // Parameters some case depends on; the others keep their base value.
    std::vector<int> params;
    for (int p = 0; p < kParams; ++p) {
      if (kept.count(p)) continue;
      bool used = false;
      for (const Row& r : rows) used = used || r.a[p] != 0;
      if (used) params.push_back(p);
    }
    const auto n = static_cast<Eigen::Index>(cases.size());
    Eigen::MatrixXd a(n, static_cast<Eigen::Index>(params.size()));
    Eigen::VectorXd b(n);
    for (Eigen::Index i = 0; i < n; ++i) {
      const double w = 1.0 / cases[static_cast<size_t>(i)]->time_us;  // relative error
      for (size_t j = 0; j < params.size(); ++j) {
        a(i, static_cast<Eigen::Index>(j)) = w * rows[static_cast<size_t>(i)].a[params[j]];
      }
      b[i] = 1.0 - w * rows[static_cast<size_t>(i)].offset_us;
      for (const auto& [p, v] : kept) b[i] -= w * rows[static_cast<size_t>(i)].a[p] * v;
    }
    // Rows carry the tile multipliers inside their compute coefficients
    // (c / f): the efficiencies solved here are those of the largest tile.
    const Eigen::VectorXd x = bounded_solve(a, b, params);
    const double hbm_inverse = [&] {
      for (size_t j = 0; j < params.size(); ++j) {
        if (params[j] == kHbm) return x[static_cast<Eigen::Index>(j)];
      }
      return inverse_of(s, kHbm);
    }();
    set_param(s, kHbm, hbm_inverse);  // first: the row-op efficiency is relative to it
    for (size_t j = 0; j < params.size(); ++j) {
      if (params[j] != kHbm) set_param(s, params[j], x[static_cast<Eigen::Index>(j)]);
    }

    // Tile multipliers: for the cases on each tile shape, the compute term
    // that best closes the gap left by the other terms.
    std::vector<Row> again;
    for (const Measurement* m : cases) again.push_back(row_for(s, *m));
    for (size_t t = 0; t < std::size(models::gpu::kGemmTileCandidates); ++t) {
      double num = 0, den = 0;
      for (size_t i = 0; i < cases.size(); ++i) {
        const Row& r = again[i];
        if (r.tile != static_cast<int>(t) || r.tile_term <= 0) continue;
        const double w = 1.0 / (cases[i]->time_us * cases[i]->time_us);
        const double f = s.efficiency.gemm_tile[t];
        const double other = predicted_us(s, *cases[i]) - r.tile_term;
        const double c = r.tile_term * f;  // compute time at f = 1
        num += w * c * (cases[i]->time_us - other);
        den += w * c * c;
      }
      if (den > 0 && num > 0) s.efficiency.gemm_tile[t] = std::clamp(den / num, 0.05, 1.0);
    }
    cap_at_largest_tiles(s.efficiency.gemm_tile);
    const double rms = weighted_rms(s, cases);
    if (rms < best_rms) {
      best_rms = rms;
      best = s;
    }
  }
  (void)notes;
  return best;
}

}  // namespace

double predicted_us(const GpuSpec& spec, const Measurement& m) {
  return isolated_us_at(spec, kernel_for(spec, m), compute_stretch(spec, m));
}

namespace {

// `us` in whole nanoseconds, as a profile writes durations.
sim::Duration whole_ns(double us) { return sim::Duration::from_ps(std::llround(us * 1e3) * 1000); }

double mean_of(const std::vector<double>& v) {
  double sum = 0.0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

}  // namespace

std::optional<sim::Duration> fit_graph_launch_latency(const GpuSpec& fitted, const MeasurementSet& set) {
  double saved_us = 0.0;
  if (!set.graph_savings_us.empty()) {
    saved_us = std::max(0.0, mean_of(set.graph_savings_us));
  } else if (set.launch_us > 0.0 && set.graph_node_us > 0.0) {
    saved_us = std::max(0.0, set.launch_us - set.graph_node_us);
  } else {
    return std::nullopt;
  }
  return graph_launch_latency_of(fitted, fitted.kernel_launch_latency.microseconds() - saved_us);
}

std::optional<sim::Duration> fit_launch_inside_kernel(const GpuSpec& fitted, const MeasurementSet& set) {
  if (set.decode_stream_gaps_us.empty()) return std::nullopt;
  return whole_ns(std::clamp(fitted.kernel_launch_latency.microseconds() - mean_of(set.decode_stream_gaps_us), 0.0,
                             fitted.graph_launch_latency().microseconds()));
}

sim::Duration graph_launch_latency_of(const GpuSpec& fitted, double us) {
  return whole_ns(std::clamp(us, models::gpu::kMinGraphLaunchLatency.microseconds(),
                             fitted.kernel_launch_latency.microseconds()));
}

FitResult fit_profile(const GpuSpec& base, const std::vector<const Measurement*>& cases,
                      const MeasuredFixedCosts& fixed) {
  FitResult best;
  best.rms_relative_error = std::numeric_limits<double>::infinity();
  // A preset that measured one SM's reach (sm_hbm_reach) leaves the headroom
  // nothing to set on a GPU with a clock (hbm.h, memory_spread.h): it keeps
  // the base's value rather than the first of several equal candidates.
  const bool reach_measured = base.sm_hbm_reach && base.sm_clock_ghz > 0.0;
  const std::vector<double> headrooms =
      reach_measured ? std::vector<double>{base.sm_bandwidth_headroom} : std::vector<double>{1.5, 2.0, 3.0, 4.0, 6.0};
  for (double headroom : headrooms) {
    GpuSpec s = base;
    s.sm_bandwidth_headroom = headroom;
    std::vector<std::string> notes;
    s = fit_with_headroom(s, cases, notes, fixed);
    const double rms = weighted_rms(s, cases);
    if (rms < best.rms_relative_error) {
      best.spec = s;
      best.rms_relative_error = rms;
      best.notes = notes;
    }
  }
  best.cases = static_cast<int>(cases.size());
  if (reach_measured) {
    best.notes.push_back("sm_bandwidth_headroom: not fitted, the preset's value (its measured sm_hbm_reach "
                         "sets one SM's reach)");
  }
  // Parameters no fitting case exercised keep the base (preset) value.
  bool tf32 = false, fp8 = false, att = false, att_bwd = false, row = false, fp32 = false;
  for (const Measurement* m : cases) {
    if (m->gemm) {
      tf32 = tf32 || m->gemm->dtype == Dtype::tf32;
      fp8 = fp8 || m->gemm->dtype == Dtype::fp8;
      fp32 = fp32 || m->gemm->dtype == Dtype::fp32;
    }
    if (m->attention) (m->attention->backward ? att_bwd : att) = true;
    if (m->memory && m->memory->rows > 0) row = true;
  }
  auto note = [&](bool seen, const char* what) {
    if (!seen) best.notes.push_back(std::string(what) + ": no measurement; preset value kept");
  };
  note(tf32, "tensor.tf32");
  note(fp8, "tensor.fp8");
  note(fp32, "vector");
  // flash2's prefill (attention, attention_backward, their tile overheads)
  // is fitted apart on head dims 64-192 (attention_family_fit.h); the
  // profile validates it on its own attention run.
  if (!att && !att_bwd) {
    best.notes.push_back(
        "attention, attention_backward, attention(_backward)_tile_overhead: flash2 prefill, "
        "fitted apart (attention_family_fit); preset values");
  } else {
    note(att, "attention");
    note(att_bwd, "attention_backward");
  }
  note(row, "row_reduction");
  best.notes.push_back("tensor.int8: not measured; preset value kept");
  return best;
}

}  // namespace gcsim::calibration
