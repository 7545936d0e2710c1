#include "calibration/fit/kernel_grid_fit.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

#include "calibration/fit/profile_fit.h"
#include "models/gpu/kernel_cost_model.h"

namespace gcsim::calibration {

using models::gpu::EagerSoftmaxKernel;
using models::gpu::GpuSpec;
using models::gpu::KernelDesc;

namespace {

constexpr int64_t kGridSizes[] = {128, 256, 512, 1024, 2048, 4096, 8192};

int grid_index(int64_t v) {
  const auto* it = std::find(std::begin(kGridSizes), std::end(kGridSizes), v);
  return it == std::end(kGridSizes) ? -1 : static_cast<int>(it - std::begin(kGridSizes));
}

// One candidate kernel of a case with the fixed cost taken out: the time
// it is chosen by (at the spec's clock) and the time predicted at the
// measured clock, both without gemm_setup and gemm_setup_per_cta.
struct Candidate {
  sim::Duration choose;
  double predict_us = 0;
  int64_t first_wave = 0;
  double flops = 0;
};

double mean_abs_error(const GpuSpec& spec, const std::vector<const Measurement*>& cases) {
  double sum = 0;
  for (const Measurement* m : cases) sum += std::fabs(predicted_us(spec, *m) - m->time_us) / m->time_us;
  return cases.empty() ? 0 : sum / static_cast<double>(cases.size());
}

}  // namespace

bool in_gemm_fit_half(const Measurement& m) {
  if (!m.gemm || m.record.value("group", "") != "grid") return false;
  const int i = grid_index(m.gemm->m), j = grid_index(m.gemm->n), k = grid_index(m.gemm->k);
  return i >= 0 && j >= 0 && k >= 0 && (i + j + k) % 2 == 0;
}

GemmFixedCostFit fit_gemm_fixed_cost(const GpuSpec& base, const std::vector<const Measurement*>& cases) {
  GemmFixedCostFit best;
  double best_error = std::numeric_limits<double>::infinity();
  const int setups = static_cast<int>(std::lround(kGemmSetupMaxUs * 1000.0 / 50.0));
  const int per_ctas = static_cast<int>(kGemmSetupPerCtaMaxNs);
  for (int64_t slice : kSplitKSlices) {
    GpuSpec spec = base;
    spec.efficiency.gemm_setup = sim::Duration::zero();
    spec.efficiency.gemm_setup_per_cta = sim::Duration::zero();
    spec.efficiency.gemm_split_k_min_slice = slice;
    std::vector<std::vector<Candidate>> table;
    for (const Measurement* m : cases) {
      std::vector<Candidate> row;
      for (const KernelDesc& k : models::gpu::gemm_candidates(spec, *m->gemm)) {
        row.push_back({models::gpu::isolated_time(spec, k, spec.sm_count),
                       isolated_us_at(spec, k, compute_stretch(spec, *m)),
                       std::min<int64_t>(k.tiles, spec.sm_count), k.total_flops()});
      }
      table.push_back(std::move(row));
    }
    for (int c = 0; c <= per_ctas; ++c) {
      const sim::Duration per_cta = sim::ns(int64_t{c});
      // The choice does not depend on the common setup, only on the per-CTA part.
      std::vector<double> chosen_us;
      for (const auto& row : table) {
        const Candidate* pick = nullptr;
        sim::Duration pick_time = sim::Duration::max();
        for (const Candidate& k : row) {
          const sim::Duration t = k.choose + per_cta * k.first_wave;
          if (t < pick_time || (t == pick_time && k.flops < pick->flops)) {
            pick = &k;
            pick_time = t;
          }
        }
        chosen_us.push_back(pick->predict_us + (per_cta * pick->first_wave).microseconds());
      }
      for (int s = 0; s <= setups; ++s) {
        const double setup_us = 0.05 * s;
        double sum = 0;
        for (size_t i = 0; i < cases.size(); ++i) {
          sum += std::fabs(chosen_us[i] + setup_us - cases[i]->time_us) / cases[i]->time_us;
        }
        if (sum < best_error) {
          best_error = sum;
          best.setup = sim::ns(int64_t{50} * s);
          best.setup_per_cta = per_cta;
          best.split_k_min_slice = slice;
        }
      }
    }
  }
  GpuSpec fitted = base;
  fitted.efficiency.gemm_setup = best.setup;
  fitted.efficiency.gemm_setup_per_cta = best.setup_per_cta;
  fitted.efficiency.gemm_split_k_min_slice = best.split_k_min_slice;
  best.mean_abs_error = mean_abs_error(fitted, cases);
  best.cases = static_cast<int>(cases.size());
  return best;
}

bool is_softmax_forward(const Measurement& m) {
  return m.memory && m.memory->kind == models::gpu::MemoryOpKind::softmax &&
         m.record.value("kind", "") == "softmax";
}

bool in_softmax_fit_half(const Measurement& m) {
  return is_softmax_forward(m) && m.record.value("op", "") == "softmax";
}

SoftmaxFit fit_eager_softmax(const GpuSpec& base, const std::vector<const Measurement*>& cases) {
  SoftmaxFit fit;
  GpuSpec spec = base;
  auto family_cases = [&](EagerSoftmaxKernel family) {
    std::vector<const Measurement*> out;
    for (const Measurement* m : cases) {
      if (models::gpu::eager_softmax_kernel(m->memory->cols, m->memory->dtype) == family) out.push_back(m);
    }
    return out;
  };
  // One parameter per kernel, each on its own cases (the kernels share none).
  auto search = [&](EagerSoftmaxKernel family, double& param, double lo, double hi, double step) {
    const auto mine = family_cases(family);
    if (mine.empty()) return;
    double best = std::numeric_limits<double>::infinity(), best_value = param;
    const int steps = static_cast<int>(std::lround((hi - lo) / step));
    for (int i = 0; i <= steps; ++i) {
      param = lo + step * i;
      const double e = mean_abs_error(spec, mine);
      if (e < best) {
        best = e;
        best_value = param;
      }
    }
    param = best_value;
  };
  auto& p = spec.efficiency.softmax;
  search(EagerSoftmaxKernel::warp_per_row, p.warp_cycles_per_element, 0.0, 4.0, 0.01);
  search(EagerSoftmaxKernel::block_per_row, p.block_cycles_per_element, 0.0, 4.0, 0.01);
  search(EagerSoftmaxKernel::multipass, p.multipass_reads, 1.0, 3.0, 0.25);
  fit.params = p;
  fit.mean_abs_error = mean_abs_error(spec, cases);
  fit.cases = static_cast<int>(cases.size());
  return fit;
}

std::map<std::string, GridClassError> kernel_grid_class_errors(const GpuSpec& spec, const MeasurementSet& set) {
  std::map<std::string, std::vector<double>> errors;
  for (const Measurement& m : set.items) {
    const double e = (predicted_us(spec, m) - m.time_us) / m.time_us;
    if (!m.excluded.empty()) {
      errors[m.shape_class + " (excluded)"].push_back(e);
      continue;
    }
    errors[m.shape_class].push_back(e);
    if (m.record.value("kernels_top", "").find("splitK") != std::string::npos) errors["split-K shapes"].push_back(e);
    if (m.shape_class == "gemm small" || m.shape_class == "gemm mid") {
      errors[m.shape_class + (in_gemm_fit_half(m) ? " (fit half)" : " (held out)")].push_back(e);
    }
  }
  std::map<std::string, GridClassError> out;
  for (const auto& [cls, es] : errors) {
    GridClassError c;
    c.n = static_cast<int>(es.size());
    for (double e : es) {
      c.mean += std::fabs(e);
      c.bias += e;
      c.max = std::max(c.max, std::fabs(e));
    }
    c.mean /= c.n;
    c.bias /= c.n;
    out[cls] = c;
  }
  return out;
}

}  // namespace gcsim::calibration
