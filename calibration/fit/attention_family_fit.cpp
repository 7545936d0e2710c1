#include "calibration/fit/attention_family_fit.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "models/gpu/attention_flash2_decode.h"
#include "models/gpu/attention_kernel_model.h"
#include "models/gpu/kernel_cost_model.h"

namespace gcsim::calibration {

using models::gpu::AttentionFamily;
using models::gpu::AttentionShape;
using models::gpu::FusedAttentionParams;
using models::gpu::FusedAttentionPass;
using models::gpu::GpuSpec;

namespace {

// The split-KV combine is a second, small kernel: a launch (~2-5 us on
// Hopper) and one read of the partial results. 50 us is far above any such
// kernel; a fit that wants more is absorbing something else.
const sim::Duration kMaxDecodeSplitOverhead = sim::us(int64_t{50});
// The combine kernel reads each split's partial row in turn: one L2 round
// trip (~0.3-0.6 us on Hopper) per split at most.
const sim::Duration kMaxCombinePerSplit = sim::us(int64_t{1});

bool is_decode(const AttentionShape& s) { return s.q_len <= models::gpu::kDecodeMaxQueryLen; }

std::string pass_name(const AttentionShape& s) {
  return is_decode(s) ? "decode" : s.backward ? "bwd" : "fwd";
}

std::string group_of(const AttentionPoint& p) {
  const std::string fam(models::gpu::attention_family_name(p.shape.family));
  const std::string who = p.backend == "DEFAULT" ? "default backend vs " + fam + " model" : fam;
  return (p.source.empty() ? std::string() : p.source + " grids: ") + who + " " + pass_name(p.shape);
}

// A kernel's ramp and drain: a few microseconds of SM and memory latency;
// 10 us is far past any measured (the fit gives 1-3).
const sim::Duration kMaxKernelOverhead = sim::us(int64_t{10});

// One bound-constrained least-squares problem: minimise |A x - b| with
// lo <= x <= hi, by trying every combination of free and pinned unknowns.
Eigen::VectorXd bounded_lsq(const Eigen::MatrixXd& a, const Eigen::VectorXd& b,
                            const std::vector<double>& lo, const std::vector<double>& hi) {
  const int n = static_cast<int>(lo.size());
  Eigen::VectorXd best = Eigen::VectorXd::Zero(n);
  double best_r = std::numeric_limits<double>::infinity();
  int states = 1;
  for (int j = 0; j < n; ++j) states *= 3;
  for (int code = 0; code < states; ++code) {
    std::vector<int> state(n);
    int c = code;
    bool ok = true;
    for (int j = 0; j < n; ++j) {
      state[j] = c % 3;  // 0 free, 1 at lo, 2 at hi
      c /= 3;
      if (state[j] == 2 && !std::isfinite(hi[j])) ok = false;
    }
    if (!ok) continue;
    Eigen::VectorXd x = Eigen::VectorXd::Zero(n);
    Eigen::VectorXd rhs = b;
    std::vector<int> free;
    for (int j = 0; j < n; ++j) {
      if (state[j] == 0) {
        free.push_back(j);
      } else {
        x[j] = state[j] == 1 ? lo[j] : hi[j];
        rhs -= a.col(j) * x[j];
      }
    }
    if (!free.empty()) {
      Eigen::MatrixXd af(a.rows(), static_cast<Eigen::Index>(free.size()));
      for (size_t j = 0; j < free.size(); ++j) af.col(static_cast<Eigen::Index>(j)) = a.col(free[j]);
      Eigen::VectorXd scale = af.colwise().norm().transpose();
      for (Eigen::Index j = 0; j < scale.size(); ++j) {
        if (scale[j] > 0) af.col(j) /= scale[j];
      }
      const Eigen::VectorXd y = af.colPivHouseholderQr().solve(rhs);
      for (size_t j = 0; j < free.size(); ++j) {
        const auto jj = static_cast<Eigen::Index>(j);
        const double v = scale[jj] > 0 ? y[jj] / scale[jj] : lo[free[j]];
        if (v < lo[free[j]] - 1e-12 || v > hi[free[j]] + 1e-12) ok = false;
        x[free[j]] = v;
      }
    }
    if (!ok) continue;
    const double r = (a * x - b).squaredNorm();
    if (r < best_r) {
      best_r = r;
      best = x;
    }
  }
  return best;
}

double launch_and_waves_s(const GpuSpec& spec, int64_t waves) {
  return spec.kernel_launch_latency.seconds() +
         static_cast<double>(waves) * spec.efficiency.tile_overhead.seconds();
}

// What the model adds besides the pass's unknowns: the launch (not in a
// profiler's kernel duration) and the GPU's per-wave overhead.
double fixed_s(const GpuSpec& spec, const AttentionPoint& p, int64_t waves) {
  return launch_and_waves_s(spec, waves) -
         (p.kernel_only ? spec.kernel_launch_latency.seconds() : 0.0);
}

// Whether the model, with the parameters in `spec`, bounds the point's
// full waves by HBM rather than by the tensor cores (then the compute
// unknowns do not set its time).
bool memory_bound(const GpuSpec& spec, const AttentionPoint& p) {
  const auto k = models::gpu::attention_kernel(spec, p.shape);
  const int width = models::gpu::wave_width(spec, k, spec.sm_count);
  return models::gpu::tile_cost(spec, k, static_cast<int>(std::min<int64_t>(width, k.tiles)))
      .memory_bound();
}

// The call's side kernels' streaming time under `pass`'s side_bandwidth
// (fused_attention_kernel's setup besides kernel_overhead).
double side_s(const GpuSpec& spec, const FusedAttentionPass& pass, const AttentionShape& s) {
  const auto side = models::gpu::attention_side_kernels(s);
  if (!(pass.side_bandwidth > 0.0) || !(side.bytes > 0.0)) return 0.0;
  return static_cast<double>(side.kernels) * spec.kernel_launch_latency.seconds() +
         side.bytes / (spec.hbm_bandwidth.bytes_per_s() * pass.side_bandwidth);
}

// Solves the pass's linear unknowns on `pts` with its sharing as `spec`
// holds it; returns the sum of squared relative errors. `with_kernel`: the
// once-per-kernel overhead is an unknown too (else the pass's is kept).
double solve_pass(const GpuSpec& spec, const std::vector<const AttentionPoint*>& pts,
                  FusedAttentionPass& pass, bool& any_wide, bool with_kernel = false) {
  any_wide = false;
  const int cols = with_kernel ? 5 : 4;
  Eigen::MatrixXd a(static_cast<Eigen::Index>(pts.size()), cols);
  Eigen::VectorXd b(static_cast<Eigen::Index>(pts.size()));
  for (size_t i = 0; i < pts.size(); ++i) {
    const auto t = models::gpu::fused_attention_terms(spec, pts[i]->shape);
    const double w = static_cast<double>(t.waves);
    const double meas = pts[i]->time_us * 1e-6;
    const auto r = static_cast<Eigen::Index>(i);
    // Unknowns: 1/e, 1/(e wide) - 1/e, softmax_exposed, wave_overhead (s)
    // [, kernel_overhead (s)].
    a(r, 0) = w * t.mma_s / meas;
    a(r, 1) = t.wide * w * t.mma_s / meas;
    a(r, 2) = w * t.exp_s / meas;
    a(r, 3) = w / meas;
    double fixed = fixed_s(spec, *pts[i], t.waves) + side_s(spec, pass, pts[i]->shape);
    if (with_kernel) {
      a(r, 4) = 1.0 / meas;
    } else if (!t.decode) {
      fixed += pass.kernel_overhead.seconds();
    }
    b[r] = (meas - fixed) / meas;
    any_wide = any_wide || t.wide > 0.0;
  }
  std::vector<double> lo{1.0, 0.0, 0.0, 0.0}, hi{1e3, any_wide ? 1e3 : 0.0, 1.0, 1e-3};
  if (with_kernel) {
    lo.push_back(0.0);
    hi.push_back(kMaxKernelOverhead.seconds());
  }
  const Eigen::VectorXd x = bounded_lsq(a, b, lo, hi);
  pass.efficiency = 1.0 / x[0];
  pass.wide_head = x[0] / (x[0] + x[1]);
  pass.softmax_exposed = x[2];
  pass.wave_overhead = sim::Duration::from_seconds(x[3]);
  if (with_kernel) pass.kernel_overhead = sim::Duration::from_seconds(x[4]);
  return (a * x - b).squaredNorm();
}

// Puts a pass's parameters where the family's kernel reads them
// (fused_attention_pass()).
void set_pass(GpuSpec& spec, AttentionFamily family, bool backward, const FusedAttentionPass& pass) {
  if (family == AttentionFamily::flash2) {
    auto& e = spec.efficiency;
    (backward ? e.attention_backward : e.attention) = pass.efficiency;
    (backward ? e.attention_backward_tile_overhead : e.attention_tile_overhead) = pass.wave_overhead;
    auto& f = backward ? e.flash2_prefill.backward : e.flash2_prefill.forward;
    f.wide_head = pass.wide_head;
    f.softmax_exposed = pass.softmax_exposed;
    return;
  }
  auto& fam = spec.efficiency.fused_attention(family);
  (backward ? fam.backward : fam.forward) = pass;
}

// The sharing of the pass's CTAs (ctas_per_sm, lone_cta_fraction,
// cta_latency_blocks) that, with the linear unknowns solved at each, leaves
// the least squared relative error on `pts`: a grid over ctas_per_sm 1..3
// (Hopper's 228 KiB of shared memory and 64K registers hold at most a few
// warp-specialised attention CTAs), lone_cta_fraction 0.30..1 in 0.05 and
// cta_latency_blocks 0..6 in 0.25 (a lone CTA's fixed latency worth more
// than 6 key blocks would be several microseconds: a Q load and an O
// store are one TMA round trip each), then 0.01 and 0.05 steps around the
// best.
// The backward starts at two CTAs a SM: cuDNN's bprop (knob_26_64x64x128,
// one warpgroup a CTA) runs 256 CTAs of at most 8 blocks (32 heads, 512
// tokens) in 25.4 us against 128 CTAs' 23.9 us (16 heads; kernel durations,
// calibration/measurements/h100-sxm/serving_attention_2026-11-27): on 132
// SMs the 256 run at once, two a SM. A fit that may pick one (the large
// grids' weight wins it: efficiency 0.99 with every CTA latency-bound)
// is 21-22% slow on those 256-CTA grids.
void search_sharing(const GpuSpec& spec, AttentionFamily family, bool backward,
                    const std::vector<const AttentionPoint*>& pts, FusedAttentionPass& pass) {
  double best = std::numeric_limits<double>::infinity();
  FusedAttentionPass best_pass = pass;
  auto try_one = [&](int64_t k, double lone, double latency) {
    GpuSpec trial = spec;
    FusedAttentionPass p = pass;
    p.ctas_per_sm = k;
    p.lone_cta_fraction = lone;
    p.cta_latency_blocks = latency;
    set_pass(trial, family, backward, p);
    bool any_wide = false;
    const double r = solve_pass(trial, pts, p, any_wide, true);
    if (r < best) {
      best = r;
      best_pass = p;
    }
  };
  for (int64_t k = backward ? 2 : 1; k <= 3; ++k) {
    for (int i = 0; i <= 14; ++i) {
      for (int j = 0; j <= 24; ++j) try_one(k, 0.30 + 0.05 * i, 0.25 * j);
    }
  }
  const FusedAttentionPass coarse = best_pass;
  for (int i = -5; i <= 5; ++i) {
    for (int j = -5; j <= 5; ++j) {
      const double lone = coarse.lone_cta_fraction + 0.01 * i;
      const double latency = coarse.cta_latency_blocks + 0.05 * j;
      if (lone < 0.3 - 1e-9 || lone > 1.0 + 1e-9 || latency < -1e-9 || latency > 6.0 + 1e-9) continue;
      try_one(coarse.ctas_per_sm, std::clamp(lone, 0.3, 1.0), std::max(0.0, latency));
    }
  }
  pass = best_pass;
}

// Solves, then drops the points the fitted model calls memory-bound and
// solves again, until the set stops changing (at most 5 rounds). With
// `sharing`, the CTAs' sharing of an SM is searched first (search_sharing)
// and the once-per-kernel overhead solved with the rest.
void fit_pass(const GpuSpec& spec, AttentionFamily family,
              const std::vector<const AttentionPoint*>& pts, bool backward,
              FusedAttentionPass& pass, const std::string& what, std::vector<std::string>& notes,
              bool sharing = false) {
  if (pts.empty()) {
    notes.push_back(what + ": no measurement; prior kept");
    return;
  }
  std::vector<const AttentionPoint*> used = pts;
  bool any_wide = false;
  if (sharing) search_sharing(spec, family, backward, used, pass);
  for (int round = 0; round < 5; ++round) {
    GpuSpec at = spec;
    set_pass(at, family, backward, pass);
    solve_pass(at, used, pass, any_wide, sharing);
    GpuSpec trial = spec;
    set_pass(trial, family, backward, pass);
    std::vector<const AttentionPoint*> next;
    for (const AttentionPoint* p : pts) {
      if (!memory_bound(trial, *p)) next.push_back(p);
    }
    if (next == used || next.empty()) break;
    used = std::move(next);
  }
  if (used.size() < pts.size()) {
    notes.push_back(what + ": " + std::to_string(pts.size() - used.size()) +
                    " memory-bound point(s) left out of the compute fit");
  }
  if (!any_wide) notes.push_back(what + ": no V head dim above 128 measured; wide_head = 1");
}

void fit_decode(const GpuSpec& spec, AttentionFamily family,
                const std::vector<const AttentionPoint*>& pts, FusedAttentionParams& p,
                const std::string& what, std::vector<std::string>& notes) {
  if (pts.empty()) {
    notes.push_back(what + " decode: no measurement; prior kept");
    return;
  }
  // A family with the library's own kernel-level terms (a CTA's latency
  // floor, a kernel's fixed cost, the reduction's growth, a split threshold)
  // has all its decode terms fitted together on profiled kernels
  // (decode_kernel_fit.h); this linear model knows none of them.
  if (p.decode_min_split_keys > 0 || p.decode_kernel_overhead > sim::Duration::zero() ||
      p.decode_block_latency > sim::Duration::zero() ||
      p.decode_split_per_doubling > sim::Duration::zero()) {
    notes.push_back(what + " decode: fitted apart on profiled kernels (decode_kernel_fit.h); kept");
    return;
  }
  // Unknowns: 1 / decode_bandwidth (the memory time at the HBM peak scales
  // by it), the per-wave overhead and the split-combine cost.
  GpuSpec unit = spec;
  auto& unit_params = unit.efficiency.fused_attention(family);
  unit_params.decode_bandwidth = 1.0;
  unit_params.decode_wave_overhead = sim::Duration::zero();
  unit_params.decode_split_overhead = sim::Duration::zero();
  Eigen::MatrixXd a(static_cast<Eigen::Index>(pts.size()), 3);
  Eigen::VectorXd b(static_cast<Eigen::Index>(pts.size()));
  for (size_t i = 0; i < pts.size(); ++i) {
    const auto k = models::gpu::fused_attention_kernel(unit, pts[i]->shape);
    const int width = models::gpu::wave_width(unit, k, unit.sm_count);
    const int64_t full = k.tiles / width;
    const int last = static_cast<int>(k.tiles % width);
    double mem_s = 0.0;
    if (full > 0) mem_s += static_cast<double>(full) * models::gpu::tile_cost(unit, k, width).memory.seconds();
    if (last > 0) mem_s += models::gpu::tile_cost(unit, k, last).memory.seconds();
    const int64_t waves = full + (last > 0 ? 1 : 0);
    const auto& sh = pts[i]->shape;
    const bool split = k.tiles > sh.batch * (sh.kv_heads > 0 ? sh.kv_heads : sh.heads);
    const double meas = pts[i]->time_us * 1e-6;
    const auto r = static_cast<Eigen::Index>(i);
    a(r, 0) = mem_s / meas;
    a(r, 1) = static_cast<double>(waves) / meas;
    a(r, 2) = (split ? 1.0 : 0.0) / meas;
    b[r] = (meas - launch_and_waves_s(spec, waves)) / meas;
  }
  const Eigen::VectorXd x =
      bounded_lsq(a, b, {1.0, 0.0, 0.0}, {1e3, 1e-3, kMaxDecodeSplitOverhead.seconds()});
  p.decode_bandwidth = 1.0 / x[0];
  p.decode_wave_overhead = sim::Duration::from_seconds(x[1]);
  p.decode_split_overhead = sim::Duration::from_seconds(x[2]);
}

// One flash2 decode point at unit parameters: per group of equal waves,
// their count and one wave's MMA and memory time.
struct Flash2DecodeWaves {
  double count[2] = {0, 0};
  double mma_s[2] = {0, 0};
  double mem_s[2] = {0, 0};
  int64_t waves = 0;
  int64_t splits = 1;
  double meas_s = 0;
};

Flash2DecodeWaves flash2_decode_waves(const GpuSpec& spec, const AttentionPoint& p) {
  models::gpu::Flash2DecodeParams unit;
  unit.efficiency = 1.0;
  unit.bandwidth = 1.0;
  unit.wave_overhead = unit.combine_overhead = unit.combine_per_split = sim::Duration::zero();
  const auto k = models::gpu::flash2_decode_kernel(spec, p.shape, unit);
  const int width = models::gpu::wave_width(spec, k, spec.sm_count);
  const int64_t full = k.tiles / width;
  const int last = static_cast<int>(k.tiles % width);
  Flash2DecodeWaves w;
  const int active[2] = {width, last};
  w.count[0] = static_cast<double>(full);
  w.count[1] = last > 0 ? 1.0 : 0.0;
  for (int i = 0; i < 2; ++i) {
    if (w.count[i] == 0) continue;
    const auto c = models::gpu::tile_cost(spec, k, active[i]);
    w.mma_s[i] = c.compute.seconds();
    w.mem_s[i] = c.memory.seconds();
  }
  w.waves = full + (last > 0 ? 1 : 0);
  w.splits = models::gpu::flash2_decode_grid(spec, p.shape).splits;
  w.meas_s = p.time_us * 1e-6;
  return w;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

bool attention_heldout(const AttentionShape& s) {
  const int64_t kv_heads = s.kv_heads > 0 ? s.kv_heads : s.heads;
  if (is_decode(s)) return s.kv_len == 4096 || s.batch == 128 || kv_heads == s.heads;
  if (kv_heads != s.heads) return true;                           // GQA
  if (s.head_dim_v > 0 && s.head_dim_v != s.head_dim) return true;  // MLA
  return s.q_len == 1024 || s.q_len == 4096 || s.q_len == 16384;
}

// The JSON document at `path`, which must hold an array under `list`.
static nlohmann::json read_measurement(const std::string& path, const char* list) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot read");
  nlohmann::json doc;
  try {
    in >> doc;
  } catch (const std::exception& e) {
    throw std::runtime_error(path + ": not JSON: " + e.what());
  }
  if (!doc.contains(list) || !doc[list].is_array()) {
    throw std::runtime_error(path + ": no " + list + " list");
  }
  return doc;
}

std::vector<AttentionPoint> load_attention_points(const std::string& path, const GpuSpec& spec) {
  const nlohmann::json doc = read_measurement(path, "results");
  std::vector<AttentionPoint> out;
  for (const auto& r : doc["results"]) {
    if (r.value("kind", "") != "attention" || !r.value("backlog_ok", true)) continue;
    AttentionPoint p;
    p.backend = r.value("backend", "");
    AttentionShape& s = p.shape;
    try {
      s.batch = r.at("batch").get<int64_t>();
      s.heads = r.at("heads").get<int64_t>();
      s.kv_heads = r.value("gqa_mode", "") == "expanded" ? s.heads : r.at("kv_heads").get<int64_t>();
      s.q_len = r.at("q_len").get<int64_t>();
      s.kv_len = r.at("kv_len").get<int64_t>();
      s.head_dim = r.at("head_dim").get<int64_t>();
      s.head_dim_v = r.value("head_dim_v", int64_t{0});
      s.causal = r.at("causal").get<bool>();
      s.backward = r.at("pass").get<std::string>() == "bwd";
      p.time_us = r.at("time_us").get<double>();
    } catch (const std::exception& e) {
      throw std::runtime_error(path + ": an attention record lacks a key: " + e.what());
    }
    if (s.head_dim_v == s.head_dim) s.head_dim_v = 0;
    if (p.backend == "CUDNN_ATTENTION") {
      s.family = AttentionFamily::cudnn;
    } else if (p.backend == "FLASH_ATTENTION") {
      s.family = AttentionFamily::flash2;
    } else if (p.backend == "DEFAULT") {
      s.family = models::gpu::resolve_attention_family(std::nullopt, spec, is_decode(s));
    } else {
      continue;  // EFFICIENT_ATTENTION, MATH: no model family
    }
    p.heldout = attention_heldout(s);
    p.label = p.backend + " " + pass_name(s) + " b" + std::to_string(s.batch) + " h" +
              std::to_string(s.heads) + "/" + std::to_string(r.at("kv_heads").get<int64_t>()) +
              " q" + std::to_string(s.q_len) + " kv" + std::to_string(s.kv_len) + " d" +
              std::to_string(s.head_dim) +
              (s.head_dim_v > 0 ? "/" + std::to_string(s.head_dim_v) : std::string()) +
              (s.causal ? " causal" : "") +
              (r.value("gqa_mode", "") == "expanded" ? " (K/V expanded)" : "");
    out.push_back(std::move(p));
  }
  return out;
}

bool serving_attention_heldout(const AttentionShape& s) {
  return s.q_len == 1024 || s.q_len == 4096 || s.heads == 32;
}

// The shape of one record of serving_attention_sweep.py / serving_kernels_bench.py
// (batch 1, self-attention over `tokens`); throws on a missing key.
static AttentionShape serving_record_shape(const nlohmann::json& r, bool backward) {
  AttentionShape s;
  s.batch = 1;
  s.heads = r.at("q_heads").get<int64_t>();
  s.kv_heads = r.at("kv_heads").get<int64_t>();
  s.q_len = s.kv_len = r.at("tokens").get<int64_t>();
  s.head_dim = r.at("head_dim").get<int64_t>();
  s.causal = r.at("causal").get<bool>();
  s.backward = backward;
  return s;
}

std::vector<AttentionPoint> load_serving_attention_points(const std::string& path,
                                                          const GpuSpec& spec) {
  // serving_attention_noncausal.py's file has the same grids without the
  // causal mask (noncausal_fwd, noncausal_bwd lists) and no `attention`.
  const bool noncausal_file = [&] {
    std::ifstream in(path);
    std::string head((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return head.find("\"noncausal_fwd\"") != std::string::npos &&
           head.find("\"attention\":") == std::string::npos;
  }();
  const nlohmann::json doc = read_measurement(path, noncausal_file ? "noncausal_fwd" : "attention");
  std::vector<AttentionPoint> out;
  // The backward sweep (serving_attention_sweep.py; default backend,
  // contiguous): timed by its spacing, as the families grid's backward (the
  // call's preprocessing, dQ conversion and GQA reduction kernels in it).
  for (const char* list : {"attention_backward", "noncausal_bwd"}) {
    if (!doc.contains(list) || !doc[list].is_array()) continue;
    for (const auto& r : doc[list]) {
      if (!r.contains("timing")) continue;
      AttentionPoint p;
      p.backend = "DEFAULT";
      AttentionShape& s = p.shape;
      try {
        s = serving_record_shape(r, true);
        p.time_us = r.at("timing").at("time_us").get<double>();
      } catch (const std::exception& e) {
        throw std::runtime_error(path + ": an attention_backward record lacks a key: " + e.what());
      }
      s.family = models::gpu::resolve_attention_family(std::nullopt, spec, false);
      p.source = "serving";
      p.heldout = serving_attention_heldout(s);
      if (r.contains("kernels") && r["kernels"].is_array()) {
        for (const auto& k : r["kernels"]) {
          const std::string name = k.value("name", "");
          if (name.find("dot_do_o") != std::string::npos ||
              name.find("convert_dq") != std::string::npos ||
              name.find("reduce_head") != std::string::npos) {
            p.side_us += k.value("dur_us", 0.0);
          }
        }
      }
      p.label = "serving DEFAULT bwd b1 h" + std::to_string(s.heads) + "/" +
                std::to_string(s.kv_heads) + " q" + std::to_string(s.q_len) + " d" +
                std::to_string(s.head_dim) + (s.causal ? " causal" : "");
      out.push_back(std::move(p));
    }
  }
  for (const char* list : {"attention", "noncausal_fwd"}) {
    if (!doc.contains(list) || !doc[list].is_array()) continue;
    for (const auto& r : doc[list]) {
      if (r.value("layout", "") != "contiguous" || !r.contains("attention_kernel_us")) continue;
      AttentionPoint p;
      const std::string backend = r.value("backend", "");
      if (backend == "default") {
        p.backend = "DEFAULT";
      } else if (backend == "CUDNN_ATTENTION") {
        p.backend = backend;
      } else {
        continue;  // FLASH_ATTENTION: the large grids fit flash2
      }
      AttentionShape& s = p.shape;
      try {
        s = serving_record_shape(r, r.value("pass", std::string("fwd")) == "bwd");
        p.time_us = r.at("attention_kernel_us").get<double>();
      } catch (const std::exception& e) {
        throw std::runtime_error(path + ": an attention record lacks a key: " + e.what());
      }
      s.family = p.backend == "DEFAULT"
                     ? models::gpu::resolve_attention_family(std::nullopt, spec, false)
                     : AttentionFamily::cudnn;
      p.kernel_only = true;
      p.source = "serving";
      p.heldout = serving_attention_heldout(s);
      p.label = "serving " + p.backend + " " + pass_name(s) + " b1 h" + std::to_string(s.heads) + "/" +
                std::to_string(s.kv_heads) + " q" + std::to_string(s.q_len) + " d" +
                std::to_string(s.head_dim) + (s.causal ? " causal" : "");
      out.push_back(std::move(p));
    }
  }
  return out;
}

FusedAttentionParams fit_attention_family(const GpuSpec& spec, AttentionFamily family,
                                          const std::vector<AttentionPoint>& points,
                                          std::vector<std::string>& notes, bool search_sharing) {
  FusedAttentionParams p = spec.efficiency.fused_attention(family);
  std::vector<const AttentionPoint*> fwd, bwd, dec;
  std::vector<AttentionPoint> side_points;
  for (const auto& pt : points) {
    if (pt.heldout || pt.shape.family != family) continue;
    // Only the family's own forced-backend records: the default's are
    // checks, except the serving grids' backward, measured with the default
    // backend only, whose trace runs cuDNN's bprop and side kernels.
    const bool serving_bwd = pt.source.rfind("serving", 0) == 0 && pt.shape.backward;
    if (pt.backend == "DEFAULT" && !serving_bwd) continue;
    (is_decode(pt.shape) ? dec : pt.shape.backward ? bwd : fwd).push_back(&pt);
    if (pt.side_us > 0.0) side_points.push_back(pt);
  }
  const std::string name(models::gpu::attention_family_name(family));
  const bool sharing = search_sharing && family != AttentionFamily::flash2;
  fit_pass(spec, family, fwd, false, p.forward, name + " forward", notes, sharing);
  if (sharing && !side_points.empty()) {
    double fixed_us = 0.0;
    p.backward.side_bandwidth =
        fit_side_bandwidth(spec, side_points, p.backward.side_bandwidth, notes, &fixed_us);
    std::ostringstream o;
    o << name << " backward: side kernels at " << std::setprecision(3) << p.backward.side_bandwidth
      << " of the HBM peak, " << fixed_us << " us fixed a kernel (" << side_points.size() << " calls)";
    notes.push_back(o.str());
  }
  fit_pass(spec, family, bwd, true, p.backward, name + " backward", notes, sharing);
  fit_decode(spec, family, dec, p, name, notes);
  return p;
}

double fit_side_bandwidth(const GpuSpec& spec, const std::vector<AttentionPoint>& points,
                          double fallback, std::vector<std::string>& notes, double* fixed_us) {
  std::vector<const AttentionPoint*> pts;
  for (const auto& p : points) {
    if (!p.heldout && p.side_us > 0.0 && models::gpu::attention_side_kernels(p.shape).kernels > 0) {
      pts.push_back(&p);
    }
  }
  if (pts.empty()) {
    notes.push_back("side kernels: no measurement; side_bandwidth kept");
    return fallback;
  }
  // Unknowns: the fixed cost a kernel (s), 1 / side_bandwidth.
  Eigen::MatrixXd a(static_cast<Eigen::Index>(pts.size()), 2);
  Eigen::VectorXd b = Eigen::VectorXd::Ones(static_cast<Eigen::Index>(pts.size()));
  for (size_t i = 0; i < pts.size(); ++i) {
    const auto side = models::gpu::attention_side_kernels(pts[i]->shape);
    const double meas = pts[i]->side_us * 1e-6;
    a(static_cast<Eigen::Index>(i), 0) = static_cast<double>(side.kernels) / meas;
    a(static_cast<Eigen::Index>(i), 1) = side.bytes / spec.hbm_bandwidth.bytes_per_s() / meas;
  }
  // A small kernel's launch-to-end floor on Hopper is 1.5-2.5 us: 5 us
  // bounds it; side_bandwidth in (0, 1] (1/it in [1, 1e3]).
  const Eigen::VectorXd x = bounded_lsq(a, b, {0.0, 1.0}, {5e-6, 1e3});
  if (fixed_us) *fixed_us = x[0] * 1e6;
  return 1.0 / x[1];
}

Flash2PrefillFit fit_flash2_prefill(const GpuSpec& spec, const std::vector<AttentionPoint>& points,
                                    std::vector<std::string>& notes) {
  Flash2PrefillFit fit{models::gpu::fused_attention_pass(spec, AttentionFamily::flash2, false),
                       models::gpu::fused_attention_pass(spec, AttentionFamily::flash2, true)};
  std::vector<const AttentionPoint*> fwd, bwd;
  for (const auto& pt : points) {
    if (pt.heldout || pt.backend != "FLASH_ATTENTION" || is_decode(pt.shape)) continue;
    (pt.shape.backward ? bwd : fwd).push_back(&pt);
  }
  fit_pass(spec, AttentionFamily::flash2, fwd, false, fit.forward, "flash2 forward", notes);
  fit_pass(spec, AttentionFamily::flash2, bwd, true, fit.backward, "flash2 backward", notes);
  return fit;
}

void apply_flash2_prefill(GpuSpec& spec, const Flash2PrefillFit& fit) {
  set_pass(spec, AttentionFamily::flash2, false, fit.forward);
  set_pass(spec, AttentionFamily::flash2, true, fit.backward);
}

std::string flash2_prefill_yaml(const Flash2PrefillFit& fit) {
  std::ostringstream o;
  auto ns = [](sim::Duration d) { return std::to_string(std::llround(d.seconds() * 1e9)) + "ns"; };
  o << std::setprecision(4) << "  attention: " << fit.forward.efficiency
    << "\n  attention_backward: " << fit.backward.efficiency
    << "\n  attention_tile_overhead: " << ns(fit.forward.wave_overhead)
    << "\n  attention_backward_tile_overhead: " << ns(fit.backward.wave_overhead)
    << "\n    flash2:\n      forward: {wide_head: " << fit.forward.wide_head
    << ", softmax_exposed: " << fit.forward.softmax_exposed
    << "}\n      backward: {wide_head: " << fit.backward.wide_head
    << ", softmax_exposed: " << fit.backward.softmax_exposed << "}\n";
  return o.str();
}

models::gpu::Flash2DecodeParams fit_flash2_decode(const GpuSpec& spec,
                                                  const std::vector<AttentionPoint>& points,
                                                  std::vector<std::string>& notes) {
  models::gpu::Flash2DecodeParams p = spec.efficiency.flash2_decode;
  std::vector<Flash2DecodeWaves> pts;
  for (const auto& pt : points) {
    if (pt.heldout || pt.backend != "FLASH_ATTENTION" || !is_decode(pt.shape)) continue;
    pts.push_back(flash2_decode_waves(spec, pt));
  }
  if (pts.empty()) {
    notes.push_back("flash2 decode: no measurement; prior kept");
    return p;
  }
  // Which bound each wave group sits on, under the current parameters.
  auto bounds = [&](const models::gpu::Flash2DecodeParams& q) {
    std::vector<bool> mma;
    for (const auto& w : pts) {
      for (int i = 0; i < 2; ++i) mma.push_back(w.mma_s[i] / q.efficiency > w.mem_s[i] / q.bandwidth);
    }
    return mma;
  };
  std::vector<bool> mma = bounds(p);
  for (int round = 0; round < 20; ++round) {
    // Unknowns: 1/efficiency, 1/bandwidth, wave_overhead, combine_overhead,
    // combine_per_split (s).
    Eigen::MatrixXd a(static_cast<Eigen::Index>(pts.size()), 5);
    Eigen::VectorXd b(static_cast<Eigen::Index>(pts.size()));
    for (size_t i = 0; i < pts.size(); ++i) {
      const auto& w = pts[i];
      const auto r = static_cast<Eigen::Index>(i);
      a.row(r).setZero();
      for (int g = 0; g < 2; ++g) {
        if (mma[2 * i + static_cast<size_t>(g)]) {
          a(r, 0) += w.count[g] * w.mma_s[g];
        } else {
          a(r, 1) += w.count[g] * w.mem_s[g];
        }
      }
      a(r, 2) = static_cast<double>(w.waves);
      a(r, 3) = w.splits > 1 ? 1.0 : 0.0;
      a(r, 4) = w.splits > 1 ? static_cast<double>(w.splits) : 0.0;
      a.row(r) /= w.meas_s;
      b[r] = (w.meas_s - launch_and_waves_s(spec, w.waves)) / w.meas_s;
    }
    const Eigen::VectorXd x =
        bounded_lsq(a, b, {1.0, 1.0, 0.0, 0.0, 0.0},
                    {1e3, 1e3, 1e-3, kMaxDecodeSplitOverhead.seconds(), kMaxCombinePerSplit.seconds()});
    p.efficiency = 1.0 / x[0];
    p.bandwidth = 1.0 / x[1];
    p.wave_overhead = sim::Duration::from_seconds(x[2]);
    p.combine_overhead = sim::Duration::from_seconds(x[3]);
    p.combine_per_split = sim::Duration::from_seconds(x[4]);
    std::vector<bool> next = bounds(p);
    if (next == mma) break;
    mma = std::move(next);
  }
  return p;
}

std::string flash2_decode_yaml(const models::gpu::Flash2DecodeParams& p) {
  std::ostringstream o;
  auto ns = [](sim::Duration d) { return std::to_string(std::llround(d.seconds() * 1e9)) + "ns"; };
  o << "    flash2:\n      decode: {efficiency: " << std::setprecision(4) << p.efficiency
    << ", bandwidth: " << p.bandwidth << ", wave_overhead: " << ns(p.wave_overhead)
    << ", combine_overhead: " << ns(p.combine_overhead)
    << ", combine_per_split: " << ns(p.combine_per_split) << "}\n";
  return o.str();
}

std::vector<std::string> flash2_decode_out_of_range(const models::gpu::Flash2DecodeParams& p) {
  std::vector<std::string> bad;
  if (!(p.efficiency > 0.0 && p.efficiency <= 1.0)) bad.push_back("decode.efficiency");
  if (!(p.bandwidth > 0.0 && p.bandwidth <= 1.0)) bad.push_back("decode.bandwidth");
  if (p.wave_overhead < sim::Duration::zero() || p.wave_overhead > sim::ms(int64_t{1})) {
    bad.push_back("decode.wave_overhead");
  }
  if (p.combine_overhead < sim::Duration::zero() || p.combine_overhead > kMaxDecodeSplitOverhead) {
    bad.push_back("decode.combine_overhead");
  }
  if (p.combine_per_split < sim::Duration::zero() || p.combine_per_split > kMaxCombinePerSplit) {
    bad.push_back("decode.combine_per_split");
  }
  return bad;
}

double attention_predicted_us(const GpuSpec& spec, const AttentionPoint& p) {
  const auto k = models::gpu::attention_kernel(spec, p.shape);
  const double t = models::gpu::isolated_time(spec, k, spec.sm_count).microseconds();
  return p.kernel_only ? t - spec.kernel_launch_latency.microseconds() : t;
}

std::vector<AttentionErrorRow> attention_errors(const GpuSpec& spec,
                                                const std::vector<AttentionPoint>& points) {
  std::map<std::pair<std::string, bool>, std::vector<std::pair<double, std::string>>> groups;
  for (const auto& p : points) {
    const double e = std::abs(attention_predicted_us(spec, p) - p.time_us) / p.time_us;
    groups[{group_of(p), p.heldout}].push_back({e, p.label});
  }
  std::vector<AttentionErrorRow> rows;
  for (const auto& [key, v] : groups) {
    AttentionErrorRow row;
    row.group = key.first;
    row.heldout = key.second;
    row.n = static_cast<int>(v.size());
    std::vector<double> errs;
    for (const auto& [e, label] : v) {
      errs.push_back(e);
      if (e >= row.worst) {
        row.worst = e;
        row.worst_label = label;
      }
    }
    row.median = median_of(errs);
    rows.push_back(row);
  }
  return rows;
}

std::string attention_errors_markdown(const std::vector<AttentionErrorRow>& rows) {
  std::ostringstream o;
  o << "| kernel and pass | set | n | median error | worst error | worst case |\n"
       "|---|---|---:|---:|---:|---|\n";
  for (bool held : {false, true}) {
    for (const auto& r : rows) {
      if (r.heldout != held) continue;
      o << "| " << r.group << " | " << (held ? "held out" : "fitted") << " | " << r.n << " | "
        << std::fixed << std::setprecision(1) << 100.0 * r.median << "% | " << 100.0 * r.worst
        << "% | " << r.worst_label << " |\n";
    }
  }
  return o.str();
}

std::string attention_params_yaml(AttentionFamily family, const FusedAttentionParams& p) {
  std::ostringstream o;
  auto pass = [&](const FusedAttentionPass& s) {
    o << "{efficiency: " << std::setprecision(4) << s.efficiency << ", wide_head: " << s.wide_head
      << ", softmax_exposed: " << s.softmax_exposed
      << ", wave_overhead: " << std::llround(s.wave_overhead.seconds() * 1e9) << "ns";
    if (s.ctas_per_sm != 1 || s.lone_cta_fraction != 1.0 || s.cta_latency_blocks != 0.0 ||
        s.kernel_overhead != sim::Duration::zero()) {
      o << ",\n                ctas_per_sm: " << s.ctas_per_sm
        << ", lone_cta_fraction: " << s.lone_cta_fraction
        << ", cta_latency_blocks: " << s.cta_latency_blocks
        << ", kernel_overhead: " << std::llround(s.kernel_overhead.seconds() * 1e9) << "ns";
    }
    if (s.side_bandwidth != 0.0) o << ", side_bandwidth: " << s.side_bandwidth;
    o << "}";
  };
  o << "    " << models::gpu::attention_family_name(family) << ":\n      forward: ";
  pass(p.forward);
  o << "\n      backward: ";
  pass(p.backward);
  o << "\n      decode_bandwidth: " << std::setprecision(4) << p.decode_bandwidth
    << "\n      decode_wave_overhead: " << std::llround(p.decode_wave_overhead.seconds() * 1e9)
    << "ns\n      decode_split_overhead: " << std::llround(p.decode_split_overhead.seconds() * 1e9)
    << "ns\n";
  if (p.decode_min_split_keys > 0) o << "      decode_min_split_keys: " << p.decode_min_split_keys << "\n";
  const auto ns = [&](const char* key, sim::Duration d) {
    if (d > sim::Duration::zero()) o << "      " << key << ": " << std::llround(d.seconds() * 1e9) << "ns\n";
  };
  ns("decode_kernel_overhead", p.decode_kernel_overhead);
  ns("decode_block_latency", p.decode_block_latency);
  ns("decode_split_per_doubling", p.decode_split_per_doubling);
  return o.str();
}

std::vector<std::string> attention_params_out_of_range(const FusedAttentionParams& p) {
  std::vector<std::string> bad;
  auto check = [&](const FusedAttentionPass& s, const std::string& w) {
    if (!(s.efficiency > 0.0 && s.efficiency <= 1.0)) bad.push_back(w + ".efficiency");
    if (!(s.wide_head > 0.0 && s.wide_head <= 1.0)) bad.push_back(w + ".wide_head");
    if (!(s.softmax_exposed >= 0.0 && s.softmax_exposed <= 1.0)) bad.push_back(w + ".softmax_exposed");
    // A wave of CTAs that costs more than 1 ms on its own is not overhead.
    if (s.wave_overhead < sim::Duration::zero() || s.wave_overhead > sim::ms(int64_t{1})) {
      bad.push_back(w + ".wave_overhead");
    }
    if (s.ctas_per_sm < 1 || s.ctas_per_sm > 4) bad.push_back(w + ".ctas_per_sm");
    if (!(s.lone_cta_fraction > 0.0 && s.lone_cta_fraction <= 1.0)) bad.push_back(w + ".lone_cta_fraction");
    if (!(s.cta_latency_blocks >= 0.0 && s.cta_latency_blocks <= 16.0)) bad.push_back(w + ".cta_latency_blocks");
    if (s.kernel_overhead < sim::Duration::zero() || s.kernel_overhead > kMaxKernelOverhead) {
      bad.push_back(w + ".kernel_overhead");
    }
    if (!(s.side_bandwidth >= 0.0 && s.side_bandwidth <= 1.0)) bad.push_back(w + ".side_bandwidth");
  };
  check(p.forward, "forward");
  check(p.backward, "backward");
  if (!(p.decode_bandwidth > 0.0 && p.decode_bandwidth <= 1.0)) bad.push_back("decode_bandwidth");
  if (p.decode_wave_overhead < sim::Duration::zero() || p.decode_wave_overhead > sim::ms(int64_t{1})) {
    bad.push_back("decode_wave_overhead");
  }
  if (p.decode_split_overhead < sim::Duration::zero() || p.decode_split_overhead > kMaxDecodeSplitOverhead) {
    bad.push_back("decode_split_overhead");
  }
  // The loader's ranges (attention_params_loader.cpp).
  if (p.decode_min_split_keys < 0) bad.push_back("decode_min_split_keys");
  const auto within = [&](sim::Duration d, sim::Duration hi, const char* key) {
    if (d < sim::Duration::zero() || d > hi) bad.push_back(key);
  };
  within(p.decode_kernel_overhead, FusedAttentionParams::kMaxDecodeKernelOverhead, "decode_kernel_overhead");
  within(p.decode_block_latency, FusedAttentionParams::kMaxDecodeStepLatency, "decode_block_latency");
  within(p.decode_split_per_doubling, FusedAttentionParams::kMaxDecodeStepLatency, "decode_split_per_doubling");
  return bad;
}

}  // namespace gcsim::calibration
