// The attention-family fit (calibration/fit/attention_family_fit.h): it
// recovers known parameters from times the model itself produced, and the
// parameters shipped in the h100-sxm / h200-sxm profiles predict the
// measured PyTorch SDPA kernels (calibration/measurements/, see kMeasured)
// within the errors stated in calibration/fit/attention_families_2026-11-26.md.
// Refit and rewrite that report with
//   GCSIM_FIT_REPORT=out.md build/tests/gcsim_tests "[.fit][attention]"
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "calibration/fit/attention_family_fit.h"
#include "catch.h"
#include "models/gpu/attention_kernel_model.h"
#include "models/gpu/kernel_cost_model.h"
#include "preset_fixtures.h"
#include "scenario/run_gcsim.h"

using namespace gcsim;
namespace gpu = models::gpu;
using calibration::AttentionPoint;

namespace {

// The grid the bench measures (attention_families_bench.py), as cudnn points.
std::vector<AttentionPoint> grid(const gpu::GpuSpec& spec) {
  std::vector<AttentionPoint> v;
  for (int64_t d : {64, 128, 192}) {
    for (int64_t s : {512, 1024, 2048, 4096, 8192, 16384, 32768}) {
      for (bool causal : {true, false}) {
        for (bool bwd : {false, true}) {
          AttentionPoint p;
          p.backend = "CUDNN_ATTENTION";
          p.shape.batch = s == 32768 ? 1 : 16384 / s;
          p.shape.heads = s == 32768 ? 16 : 32;
          p.shape.q_len = s;
          p.shape.kv_len = s;
          p.shape.head_dim = d;
          p.shape.causal = causal;
          p.shape.backward = bwd;
          p.shape.family = gpu::AttentionFamily::cudnn;
          p.heldout = calibration::attention_heldout(p.shape);
          p.label = std::to_string(d) + "/" + std::to_string(s);
          p.time_us = calibration::attention_predicted_us(spec, p);
          v.push_back(p);
        }
      }
    }
  }
  for (int64_t b : {1, 8, 32}) {
    for (int64_t kv : {1024, 4096, 16384}) {
      AttentionPoint p;
      p.backend = "CUDNN_ATTENTION";
      p.shape = {.batch = b, .heads = 32, .kv_heads = 8, .q_len = 1, .kv_len = kv,
                 .family = gpu::AttentionFamily::cudnn};
      p.heldout = calibration::attention_heldout(p.shape);
      p.time_us = calibration::attention_predicted_us(spec, p);
      v.push_back(p);
    }
  }
  return v;
}

}  // namespace

TEST_CASE("attention fit: recovers the parameters that made the times", "[attention][fit]") {
  gpu::GpuSpec truth = test::gpu_preset("h100-sxm");
  auto& c = truth.efficiency.cudnn_attention;
  // Forward CTAs two a SM, a lone one at 0.55 of the SM's rate with 1.25
  // blocks of fixed latency, 2 us a kernel: on the search's coarse grid.
  c.forward = {0.72, 0.85, 0.4, sim::us(3.0), 2, 0.55, 1.25, sim::us(2.0)};
  // Backward CTAs two a SM as well, a lone one at 0.6 with 2 blocks of
  // latency, 6 us a call, side kernels at 0.6 of the HBM peak.
  c.backward = {0.55, 0.9, 0.2, sim::us(8.0), 2, 0.6, 2.0, sim::us(6.0), 0.6};
  c.decode_bandwidth = 0.8;
  c.decode_wave_overhead = sim::us(4.0);
  c.decode_split_overhead = sim::us(5.0);
  // fit_decode's linear model alone: the kernel-level decode terms (a CTA's
  // latency floor, a kernel's fixed cost, the reduction's growth with the
  // pieces, cuDNN's split threshold) are fitted apart, on profiled kernels
  // (decode_kernel_fit.h), and held at zero here.
  c.decode_min_split_keys = 0;
  c.decode_kernel_overhead = c.decode_block_latency = c.decode_split_per_doubling = sim::Duration::zero();
  auto points = grid(truth);
  // The serving grids (batch 1, 16 and 64 heads, 512-8192 tokens), timed as
  // a profiler's kernel durations: what tells the sharing apart.
  for (int64_t h : {16, 64}) {
    for (int64_t s : {512, 1024, 2048, 4096, 8192}) {
      AttentionPoint p;
      p.backend = "CUDNN_ATTENTION";
      p.shape = {.batch = 1, .heads = h, .kv_heads = h / 8, .q_len = s, .kv_len = s, .causal = true,
                 .family = gpu::AttentionFamily::cudnn};
      p.kernel_only = true;
      p.source = "serving";
      p.time_us = calibration::attention_predicted_us(truth, p);
      points.push_back(p);
      // The backward, timed by its spacing, its side kernels by their
      // durations: 1.5 us a kernel + their bytes at 0.6 of the HBM peak.
      AttentionPoint b = p;
      b.backend = "DEFAULT";
      b.shape.backward = true;
      b.kernel_only = false;
      b.time_us = calibration::attention_predicted_us(truth, b);
      const auto side = gpu::attention_side_kernels(b.shape);
      b.side_us = 1.5 * side.kernels + side.bytes / (truth.hbm_bandwidth.bytes_per_s() * 0.6) * 1e6;
      points.push_back(b);
    }
  }
  gpu::GpuSpec start = truth;
  start.efficiency.cudnn_attention = gpu::FusedAttentionParams{};  // the struct's priors
  std::vector<std::string> notes;
  const auto fit = calibration::fit_attention_family(start, gpu::AttentionFamily::cudnn, points, notes);
  for (const auto& n : notes) CHECK(n.find("no measurement") == std::string::npos);
  // The wide-head and decode terms are exact; the forward/backward ones
  // carry the 1 ps rounding of each tile's time: 1e-3 relative.
  CHECK(fit.forward.efficiency == Approx(0.72).epsilon(1e-3));
  CHECK(fit.forward.wide_head == Approx(0.85).epsilon(1e-3));
  CHECK(fit.forward.softmax_exposed == Approx(0.4).epsilon(1e-2));
  CHECK(fit.forward.wave_overhead.microseconds() == Approx(3.0).epsilon(1e-2));
  CHECK(fit.forward.ctas_per_sm == 2);
  CHECK(fit.forward.lone_cta_fraction == Approx(0.55).epsilon(1e-9));
  CHECK(fit.forward.cta_latency_blocks == Approx(1.25).epsilon(1e-9));
  CHECK(fit.forward.kernel_overhead.microseconds() == Approx(2.0).epsilon(1e-2));
  CHECK(fit.backward.efficiency == Approx(0.55).epsilon(1e-3));
  CHECK(fit.backward.wide_head == Approx(0.9).epsilon(1e-3));
  CHECK(fit.backward.softmax_exposed == Approx(0.2).epsilon(1e-2));
  CHECK(fit.backward.wave_overhead.microseconds() == Approx(8.0).epsilon(1e-2));
  CHECK(fit.backward.ctas_per_sm == 2);
  CHECK(fit.backward.lone_cta_fraction == Approx(0.6).epsilon(1e-9));
  CHECK(fit.backward.cta_latency_blocks == Approx(2.0).epsilon(1e-9));
  CHECK(fit.backward.kernel_overhead.microseconds() == Approx(6.0).epsilon(1e-2));
  CHECK(fit.backward.side_bandwidth == Approx(0.6).epsilon(1e-6));
  CHECK(fit.decode_bandwidth == Approx(0.8).epsilon(1e-3));
  CHECK(fit.decode_wave_overhead.microseconds() == Approx(4.0).epsilon(1e-2));
  CHECK(fit.decode_split_overhead.microseconds() == Approx(5.0).epsilon(1e-2));
  CHECK(calibration::attention_params_out_of_range(fit).empty());
}

TEST_CASE("attention fit: flash2's prefill parameters come back from its own times",
          "[attention][fit]") {
  gpu::GpuSpec truth = test::gpu_preset("h100-sxm");
  auto& e = truth.efficiency;
  e.attention = 0.42;
  e.attention_backward = 0.3;
  e.attention_tile_overhead = sim::us(4.0);
  e.attention_backward_tile_overhead = sim::us(15.0);
  e.flash2_prefill.forward = {0.9, 0.5};
  e.flash2_prefill.backward = {0.85, 0.2};
  std::vector<AttentionPoint> points;
  for (auto p : grid(truth)) {
    if (p.shape.q_len <= gpu::kDecodeMaxQueryLen) continue;
    p.backend = "FLASH_ATTENTION";
    p.shape.family = gpu::AttentionFamily::flash2;
    p.time_us = calibration::attention_predicted_us(truth, p);
    points.push_back(p);
  }
  gpu::GpuSpec start = truth;
  start.efficiency.attention = start.efficiency.attention_backward = 0.3;
  start.efficiency.flash2_prefill = {};
  std::vector<std::string> notes;
  const auto fit = calibration::fit_flash2_prefill(start, points, notes);
  // As the cudnn case: 1 ps rounding of each tile's time, 1e-3 relative.
  CHECK(fit.forward.efficiency == Approx(0.42).epsilon(1e-3));
  CHECK(fit.forward.wide_head == Approx(0.9).epsilon(1e-3));
  CHECK(fit.forward.softmax_exposed == Approx(0.5).epsilon(1e-2));
  CHECK(fit.forward.wave_overhead.microseconds() == Approx(4.0).epsilon(1e-2));
  CHECK(fit.backward.efficiency == Approx(0.3).epsilon(1e-3));
  CHECK(fit.backward.wide_head == Approx(0.85).epsilon(1e-3));
  CHECK(fit.backward.softmax_exposed == Approx(0.2).epsilon(1e-2));
  CHECK(fit.backward.wave_overhead.microseconds() == Approx(15.0).epsilon(1e-2));
  gpu::GpuSpec applied = start;
  calibration::apply_flash2_prefill(applied, fit);
  CHECK(applied.efficiency.attention == fit.forward.efficiency);
  CHECK(applied.efficiency.flash2_prefill.backward.softmax_exposed == fit.backward.softmax_exposed);
}

TEST_CASE("attention fit: bounds hold when the data asks for more than physics allows",
          "[attention][fit]") {
  // Times 40% below what efficiency 1 with no exposed softmax allows: the
  // fit pins efficiency at 1 rather than going above.
  gpu::GpuSpec ideal = test::gpu_preset("h100-sxm");
  ideal.efficiency.cudnn_attention.forward = {1.0, 1.0, 0.0, sim::Duration::zero()};
  ideal.efficiency.cudnn_attention.backward = {1.0, 1.0, 0.0, sim::Duration::zero()};
  auto points = grid(ideal);
  for (auto& p : points) p.time_us *= 0.6;
  std::vector<std::string> notes;
  const auto fit = calibration::fit_attention_family(ideal, gpu::AttentionFamily::cudnn, points, notes);
  CHECK(calibration::attention_params_out_of_range(fit).empty());
  CHECK(fit.forward.efficiency == 1.0);
  CHECK(fit.backward.efficiency == 1.0);
}

namespace {

struct Measured {
  const char* gpu;      // preset (its default profile applied)
  const char* file;     // attention_families_bench.py output
  const char* earlier;  // attention_bench.py output of 2026-11-22 (FA2 decode: another day)
  // serving_kernels_bench.py's attention sweep (the serving model's small
  // grids; nullptr: none on this GPU) and whether the fit may use its
  // shapes that are not held out (else every one is held out).
  const char* serving;
  bool serving_fitted;
  // attention_grid_size.py's run (b1 h8/16/32 and 64-pair grids at 4096
  // tokens, default backend; all held out), or nullptr.
  const char* grid_size;
  // serving_attention_sweep.py's run on another machine (the serving grids
  // forward and backward), or nullptr.
  const char* serving_other;
  // The same sweep and serving_attention_noncausal.py's (the grids without
  // the causal mask) on a third machine, all held out, or nullptr.
  const char* serving_third;
  const char* serving_third_full;
  // How serving_other's points are named ("serving (NAME) grids: ..."), and
  // the held-out groups the shipped-presets test checks.
  const char* serving_other_name;
  int heldout_groups;
};
// PyTorch 2.11 SDPA on one H100 SXM and one H200 (GPU 0 of 2), 2026-11-26;
// the H100's small grids on 2026-11-27. The H200 has no small grid of its
// own fitted: it keeps the H100's CTA sharing and kernel overhead (the same
// SM and clocks) and refits the rest on its large grids; its small grids,
// measured on another H200 on 2026-11-28 (serving_kernels_bench.py's and
// the sweep's, calibration_set_2026-11-28), are all held out.
const Measured kMeasured[] = {
    {"h100-sxm", "calibration/measurements/h100-sxm/attention_families_2026-11-26/attention_families.json",
     "calibration/measurements/h100-sxm/attention_2026-11-22.json",
     "calibration/measurements/h100-sxm/serving_kernels_2026-11-27/serving_kernels.json", true,
     "calibration/measurements/h100-sxm/attention_grid_size_2026-11-27/attention_grid_size.json",
     "calibration/measurements/h100-sxm/serving_attention_2026-11-27/attention_sweep.json",
     "calibration/measurements/h100-sxm/serving_attention_machine3_2026-11-27/attention_sweep.json",
     "calibration/measurements/h100-sxm/serving_attention_machine3_2026-11-27/noncausal_sweep.json",
     "2nd H100", 21},
    {"h200-sxm", "calibration/measurements/h200-x2/attention_families_2026-11-26/attention_families.json",
     "calibration/measurements/h200-x4/attention_2026-11-22.json",
     "calibration/measurements/h200-x1/calibration_set_2026-11-28/serving_kernels.json", false, nullptr,
     "calibration/measurements/h200-x1/calibration_set_2026-11-28/attention_sweep.json", nullptr, nullptr,
     "H200 sweep", 14},
};

// Every point of a GPU: the families grid, then its small serving grids
// and the grid-size run (source "serving", "grid size").
std::vector<AttentionPoint> all_points(const gpu::GpuSpec& spec, const Measured& m) {
  auto points = calibration::load_attention_points(test::source_path(m.file), spec);
  if (m.serving) {
    for (auto p : calibration::load_serving_attention_points(test::source_path(m.serving), spec)) {
      p.heldout = p.heldout || !m.serving_fitted;
      points.push_back(p);
    }
  }
  if (m.serving_other) {
    for (auto p : calibration::load_serving_attention_points(test::source_path(m.serving_other), spec)) {
      // Its forward is held out whole (the forward is fitted on
      // serving_kernels'); its backward, the only small-grid backward
      // measured, fits cuDNN's bprop schedule on 16 and 64 heads at
      // 512/2048/8192 tokens and holds out the rest (its loader's rule).
      p.heldout = p.heldout || !p.shape.backward || !m.serving_fitted;
      p.source = std::string("serving (") + m.serving_other_name + ")";
      p.label += std::string(" (") + m.serving_other_name + ")";
      points.push_back(p);
    }
  }
  for (const auto& [file, source] : {std::pair{m.serving_third, "serving (3rd H100)"},
                                     std::pair{m.serving_third_full, "serving full (3rd H100)"}}) {
    if (!file) continue;
    for (auto p : calibration::load_serving_attention_points(test::source_path(file), spec)) {
      p.heldout = true;
      p.source = source;
      p.label += std::string(" (3rd H100") + (p.shape.causal ? ")" : ", full)");
      points.push_back(p);
    }
  }
  if (m.grid_size) {
    for (auto p : calibration::load_attention_points(test::source_path(m.grid_size), spec)) {
      p.heldout = true;
      p.source = "grid size";
      p.label += " (grid size)";
      points.push_back(p);
    }
  }
  return points;
}

// The FLASH_ATTENTION decode points of the 2026-11-22 run, all held out.
std::vector<AttentionPoint> earlier_flash2_decode(const gpu::GpuSpec& spec, const Measured& m) {
  std::vector<AttentionPoint> out;
  for (auto p : calibration::load_attention_points(test::source_path(m.earlier), spec)) {
    if (p.backend != "FLASH_ATTENTION" || p.shape.q_len > gpu::kDecodeMaxQueryLen) continue;
    p.heldout = true;
    p.label += " (2026-11-22)";
    out.push_back(p);
  }
  return out;
}

// flash2 prefill (FLASH_ATTENTION fwd, bwd) errors by pass, head dim and
// set, as markdown rows "| pass | d | set | n | median | worst | case |".
std::string flash2_by_head_dim(const gpu::GpuSpec& spec, const std::vector<AttentionPoint>& points) {
  std::map<std::tuple<bool, int64_t, bool>, std::vector<std::pair<double, std::string>>> groups;
  for (const auto& p : points) {
    if (p.backend != "FLASH_ATTENTION" || p.shape.q_len <= gpu::kDecodeMaxQueryLen) continue;
    const double e = std::abs(calibration::attention_predicted_us(spec, p) - p.time_us) / p.time_us;
    groups[{p.shape.backward, p.shape.head_dim, p.heldout}].push_back({e, p.label});
  }
  std::ostringstream o;
  o << "| pass | head dim | set | n | median | worst | worst case |\n|---|---:|---|---:|---:|---:|---|\n";
  for (const auto& [key, v] : groups) {
    std::vector<double> e;
    double worst = 0;
    std::string label;
    for (const auto& [err, l] : v) {
      e.push_back(err);
      if (err >= worst) { worst = err; label = l; }
    }
    std::sort(e.begin(), e.end());
    const size_t n = e.size();
    const double median = n % 2 ? e[n / 2] : 0.5 * (e[n / 2 - 1] + e[n / 2]);
    o << "| " << (std::get<0>(key) ? "bwd" : "fwd") << " | " << std::get<1>(key) << " | "
      << (std::get<2>(key) ? "held out" : "fitted") << " | " << n << " | " << std::fixed
      << std::setprecision(1) << 100 * median << "% | " << 100 * worst << "% | " << label << " |\n";
  }
  return o.str();
}

gpu::GpuSpec calibrated(const std::string& name) { return test::calibrated_gpu_preset(name); }

}  // namespace

TEST_CASE("attention fit: run it (hidden; prints the profile block, writes GCSIM_FIT_REPORT)",
          "[.fit][attention]") {
  std::string report;
  for (const auto& m : kMeasured) {
    gpu::GpuSpec spec = calibrated(m.gpu);
    const auto points = all_points(spec, m);
    std::vector<std::string> notes;
    const auto fit = calibration::fit_attention_family(spec, gpu::AttentionFamily::cudnn, points,
                                                       notes, m.serving_fitted);
    const auto flash2 = calibration::fit_flash2_decode(spec, points, notes);
    const auto prefill = calibration::fit_flash2_prefill(spec, points, notes);
    // Head dims held out: flash2's prefill fitted on head dims 64 and 128
    // only (the fitted sequence lengths), 192 predicted from FA2's tiles.
    std::vector<AttentionPoint> by_dim = points;
    for (auto& p : by_dim) p.heldout = p.heldout || p.shape.head_dim > 128;
    std::vector<std::string> dim_notes;
    const auto prefill_64_128 = calibration::fit_flash2_prefill(spec, by_dim, dim_notes);
    const gpu::GpuSpec before = spec;
    spec.efficiency.cudnn_attention = fit;
    spec.efficiency.flash2_decode = flash2;
    calibration::apply_flash2_prefill(spec, prefill);
    gpu::GpuSpec dim_spec = spec;
    calibration::apply_flash2_prefill(dim_spec, prefill_64_128);
    std::cout << "== " << m.gpu << " (" << points.size() << " points)\n"
              << calibration::attention_params_yaml(gpu::AttentionFamily::cudnn, fit)
              << calibration::flash2_decode_yaml(flash2) << calibration::flash2_prefill_yaml(prefill)
              << "  (fitted on head dims 64 and 128 only:)\n"
              << calibration::flash2_prefill_yaml(prefill_64_128);
    for (const auto& n : notes) std::cout << "  note: " << n << "\n";
    report += "## " + std::string(m.gpu) + " (" + m.file + ")\n\n";
    report += calibration::attention_errors_markdown(calibration::attention_errors(spec, points));
    report += "\nThe same with the shipped preset's parameters (the refit's starting point):\n\n" +
              calibration::attention_errors_markdown(calibration::attention_errors(before, points));
    report += "\nSmall grids, point by point (kernel durations; the grid-size run's spacing):\n\n"
              "| point | set | measured (us) | shipped preset | this refit |\n|---|---|---:|---:|---:|\n";
    for (const auto& p : points) {
      if (p.source.empty() || p.backend == "FLASH_ATTENTION") continue;
      std::ostringstream row;
      row << "| " << p.label << " | " << (p.heldout ? "held out" : "fitted") << " | " << std::fixed
          << std::setprecision(1) << p.time_us << " | " << std::showpos
          << 100.0 * (calibration::attention_predicted_us(before, p) / p.time_us - 1.0) << "% | "
          << 100.0 * (calibration::attention_predicted_us(spec, p) / p.time_us - 1.0) << "% |\n";
      report += row.str();
    }
    // Before this model gcsim ran every attention as flash2: the default
    // backend's times against that.
    std::vector<AttentionPoint> as_flash2;
    for (auto p : points) {
      if (p.backend != "DEFAULT" || !p.source.empty()) continue;
      p.shape.family = gpu::AttentionFamily::flash2;
      if (p.shape.head_dim_v > 0) continue;  // MLA: flash2 refuses unequal head dims
      as_flash2.push_back(p);
    }
    report += "\nflash2 prefill by head dim (fitted on 512/2K/8K/32K tokens, MHA, head dims "
              "64/128/192):\n\n" + flash2_by_head_dim(spec, points);
    report += "\nflash2 prefill fitted on head dims 64 and 128 only (512/2K/8K/32K tokens); every "
              "head dim 192 case held out:\n\n" + flash2_by_head_dim(dim_spec, by_dim) +
              "\n```yaml\n" + calibration::flash2_prefill_yaml(prefill_64_128) + "```\n";
    report += "\nflash2 decode on the 2026-11-22 run (another day, another host; nothing fitted "
              "to it):\n\n";
    report += calibration::attention_errors_markdown(
        calibration::attention_errors(spec, earlier_flash2_decode(spec, m)));
    report += "\nBefore: gcsim ran every attention as flash2 (FlashAttention-2's model); the default "
              "backend's times against that:\n\n";
    report += calibration::attention_errors_markdown(calibration::attention_errors(before, as_flash2));
    report += "\nFitted:\n\n```yaml\n" +
              calibration::attention_params_yaml(gpu::AttentionFamily::cudnn, fit) +
              calibration::flash2_decode_yaml(flash2) + calibration::flash2_prefill_yaml(prefill) +
              "```\n\n";
    CHECK(calibration::attention_params_out_of_range(fit).empty());
    CHECK(calibration::attention_params_out_of_range({true, prefill.forward, prefill.backward}).empty());
    CHECK(calibration::flash2_decode_out_of_range(flash2).empty());
  }
  if (const char* path = std::getenv("GCSIM_FIT_REPORT")) std::ofstream(path) << report;
}

TEST_CASE("attention fit: the shipped presets predict measured SDPA on shapes not fitted",
          "[attention][fit]") {
  // Held-out error (calibration/fit/attention_families_2026-11-26.md): the
  // default backend against auto (cudnn) measured 4.1-4.3% (fwd, bwd) and
  // 2.2-2.9% (decode, since split-KV fills one wave, reads at a fraction of
  // the HBM peak and pays the combine kernel; 7.5-11.1% before) median.
  // Tolerance: the 10% median for every pass; forced cuDNN within 5%
  // median (measured 2.2-3.4%, decode 2.7-2.9%).
  for (const auto& m : kMeasured) {
    const gpu::GpuSpec spec = calibrated(m.gpu);
    INFO(m.gpu);
    CHECK(calibration::attention_params_out_of_range(spec.efficiency.cudnn_attention).empty());
    CHECK(calibration::attention_params_out_of_range(spec.efficiency.flash3_attention).empty());
    CHECK(calibration::flash2_decode_out_of_range(spec.efficiency.flash2_decode).empty());
    CHECK(calibration::attention_params_out_of_range(
              {true, gpu::fused_attention_pass(spec, gpu::AttentionFamily::flash2, false),
               gpu::fused_attention_pass(spec, gpu::AttentionFamily::flash2, true)})
              .empty());
    const auto points = all_points(spec, m);
    REQUIRE(points.size() > 250);
    int checked = 0;
    for (const auto& row : calibration::attention_errors(spec, points)) {
      if (!row.heldout) continue;
      std::printf("  %s held out, %-60s median %5.1f%%  worst %5.1f%%\n", m.gpu, row.group.c_str(),
                  100 * row.median, 100 * row.worst);
      INFO(row.group << ": median " << row.median << ", worst " << row.worst << " ("
                     << row.worst_label << ")");
      if (row.group.rfind("serving (2nd H100) grids: ", 0) == 0 ||
          row.group.rfind("serving (3rd H100) grids: ", 0) == 0) {
        // serving_attention_2026-11-27 (its backward's 16/64-head shapes at
        // 512/2048/8192 tokens fitted, the rest held out) and the same sweep
        // on a third machine (serving_attention_machine3_2026-11-27, all
        // held out). Forward 2.1-2.6% median, worst 7.5%; backward (cuDNN's
        // bprop as its 64-key CTAs, two a SM, and the call's side kernels)
        // 3.7-4.3%, worst 9.0-9.2% (it was -35.5 .. +8.4%, 9.3% median, with
        // one CTA a SM and the side kernels in the efficiency): 5% median and
        // no case past issue 16's 10%.
        CHECK(row.median <= 0.05);
        CHECK(row.worst <= 0.10);
        ++checked;
        continue;
      }
      if (row.group.rfind("serving (H200 sweep) grids: ", 0) == 0) {
        // The H200's serving sweep (calibration_set_2026-11-28), every point
        // held out, on the H100's CTA sharing: forward 3.0-3.2% median, worst
        // 6.9-7.2%; backward 4.3%, worst 10.7% (TP2's 8192-token backward,
        // the H100s' worst shape too). 5% median (the H100 machines' bar),
        // the forward's worst within issue 16's 10%, the backward's 12%.
        const bool bwd = row.group.find(" bwd") != std::string::npos;
        CHECK(row.median <= 0.05);
        CHECK(row.worst <= (bwd ? 0.12 : 0.10));
        ++checked;
        continue;
      }
      if (row.group.rfind("serving full (3rd H100) grids: ", 0) == 0) {
        // The same grids without the causal mask (serving_attention_
        // machine3_2026-11-27/noncausal_sweep.json, all held out): forward
        // 5.0% median, worst 8.5%; backward 5.3-5.4%, worst 12.3%, gcsim
        // slow at 4096-8192 tokens (+11 .. +12%: causal and full share one
        // efficiency, and the fitted causal shapes' diagonal blocks cost
        // more per block than the full ones'; README: not done). 7% median,
        // 10% worst forward, 15% backward.
        const bool bwd = row.group.find(" bwd") != std::string::npos;
        CHECK(row.median <= 0.07);
        CHECK(row.worst <= (bwd ? 0.15 : 0.10));
        ++checked;
        continue;
      }
      if (row.group.rfind("serving grids: ", 0) == 0) {
        // The serving model's small grids (serving_kernels_2026-11-27,
        // kernel durations), 1024/4096 tokens and every 32-head shape held
        // out: 2.6-2.7% median, worst 7.7% (the wave model was 12-14%
        // median, worst 30%, and 58% fast on the fitted 512-token TP4
        // shape): 5% median, and no case past 10% (issue 16's bar). The
        // H200's (calibration_set_2026-11-28), all held out: 2.3-2.4%,
        // worst 5.5-6.6%.
        CHECK(row.median <= 0.05);
        CHECK(row.worst <= 0.10);
        ++checked;
        continue;
      }
      if (row.group.rfind("grid size grids: ", 0) == 0) {
        // attention_grid_size_2026-11-27 (b1 h8/16/32 and 64-pair grids at
        // 4096 tokens, default backend, nothing fitted): forward 3.4%
        // median, worst 6.1% (full attention +5-6%); backward 5.6% / 9.4%
        // (6.0% / 10.7% before its CTAs were scheduled two a SM). 5% / 8%
        // forward, 8% / 12% backward.
        const bool bwd = row.group.find(" bwd") != std::string::npos;
        CHECK(row.median <= (bwd ? 0.08 : 0.05));
        CHECK(row.worst <= (bwd ? 0.12 : 0.08));
        ++checked;
        continue;
      }
      if (row.group.rfind("default backend vs cudnn model", 0) == 0) {
        CHECK(row.median <= 0.10);
        ++checked;
      } else if (row.group == "cudnn fwd" || row.group == "cudnn decode") {
        CHECK(row.median <= 0.05);
        ++checked;
      } else if (row.group == "cudnn bwd") {
        // Forced cuDNN's backward, held out: 6.3% (H100) and 6.2% (H200)
        // median since its bprop runs as 64 x 64 CTAs two a SM with the side
        // kernels apart (3.6% / 2.7% before, when one efficiency and a 11 us
        // per-wave cost absorbed both): head dim 64 5-9% fast, 192 5-8% slow
        // at 1K-4K tokens. Was held to 5%; 7% now, under the 10%.
        CHECK(row.median <= 0.07);
        ++checked;
      } else if (row.group == "flash2 decode") {
        // FA2's split rule, padded query tiles and the combine kernel: held
        // out 1.6% (H100) and 1.9% (H200) median, worst 6.5-6.8%; the
        // issue's 10% median, and no case past 10%.
        CHECK(row.median <= 0.05);
        CHECK(row.worst <= 0.10);
        ++checked;
      } else if (row.group == "flash2 fwd" || row.group == "flash2 bwd") {
        // FA2's tiles and CTAs a SM by head dim: held out 1.0-1.7% (fwd)
        // and 3.1-3.3% (bwd) median, worst 5.3-9.6% (4.7-5.7% / 17.5-24.7%
        // before, one efficiency at head dim 128); the 10% median.
        CHECK(row.median <= 0.05);
        CHECK(row.worst <= 0.12);
        ++checked;
      }
    }
    // 9 groups of the families grid; the H100 adds 2 serving, 2 grid-size,
    // 3 second-machine and 5 third-machine serving groups, the H200 2
    // serving and 3 sweep groups.
    CHECK(checked == m.heldout_groups);
    // The 2026-11-22 run's FA2 decode (batch 8-128, 1K-16K keys), held out
    // by date as well: measured within 10% every case.
    const auto earlier = calibration::attention_errors(spec, earlier_flash2_decode(spec, m));
    REQUIRE(earlier.size() == 1);
    INFO("2026-11-22: median " << earlier[0].median << ", worst " << earlier[0].worst);
    CHECK(earlier[0].n == 9);
    CHECK(earlier[0].median <= 0.05);
    CHECK(earlier[0].worst <= 0.10);
  }
}
