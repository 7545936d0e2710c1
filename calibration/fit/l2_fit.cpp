#include "calibration/fit/l2_fit.h"

#include <cmath>
#include <stdexcept>

#include "calibration/fit/schema_document.h"
#include "models/gpu/kernel_cost_model.h"
#include "workloads/inference/serving_framework.h"
#include "workloads/training/framework_profile.h"

namespace gcsim::calibration {

using models::gpu::GpuSpec;
using workloads::inference::EagerServingPasses;
using workloads::training::FrameworkPass;

namespace {

// The serving step's pass that launches the kernel the op ran: the residual
// add (vectorized_elementwise_kernel<8>, CUDAFunctor_add), SwiGLU's SiLU as
// it runs on a contiguous row (vectorized<8>, silu_kernel), the norm's fp32
// cast (unrolled_elementwise_kernel, direct_copy with a cast).
FrameworkPass pass_of(const std::string& op, int64_t elements) {
  if (op == "add") return EagerServingPasses::residual_add(elements).at(0);
  if (op == "silu") return EagerServingPasses::swiglu(1, elements).at(0);
  // The norm's first pass, " cast fp32" (the SM count only sizes its mean pass).
  return EagerServingPasses::rms_norm(1, elements, /*sm_count=*/132).at(0);
}

}  // namespace

std::vector<L2PassPoint> load_l2_pass_points(const std::string& path) {
  const nlohmann::json doc = read_schema_document(path, "gcsim.l2_resident_passes.v1");
  const workloads::training::FrameworkProfile eager(workloads::training::Framework::pytorch_eager,
                                                    workloads::inference::eager_serving_traits());
  std::vector<L2PassPoint> out;
  for (const auto& r : doc.value("passes", nlohmann::json::array())) {
    const std::string op = r.value("op", "");
    if (op != "add" && op != "silu" && op != "cast") continue;  // copy: a memcpy, not timed
    for (const bool warm : {false, true}) {
      const char* state = warm ? "warm" : "cold";
      if (!r.contains(state)) continue;  // a failed case
      L2PassPoint p;
      p.op = op;
      p.warm = warm;
      p.shape = eager.shape(pass_of(op, r.at("elements").get<int64_t>()));
      p.shape.inputs_in_l2 = warm;
      p.footprint_bytes = r.at("footprint_bytes").get<double>();
      p.duration_us = r.at(state).at("op_us").get<double>();
      out.push_back(p);
    }
  }
  return out;
}

double l2_pass_duration_us(const GpuSpec& spec, const L2PassPoint& p) {
  const auto k = models::gpu::memory_kernel(spec, p.shape);
  return (models::gpu::isolated_time(spec, k, spec.sm_count) -
          models::gpu::launch_gap(spec.kernel_launch_latency, spec.launch_inside()))
             .seconds() *
         1e6;
}

double l2_pass_mean_abs_error(const GpuSpec& spec, const std::vector<L2PassPoint>& points,
                              std::vector<double>* errors) {
  double sum = 0.0;
  for (const auto& p : points) {
    const double e = l2_pass_duration_us(spec, p) / p.duration_us - 1.0;
    sum += std::abs(e);
    if (errors != nullptr) errors->push_back(e);
  }
  return points.empty() ? 0.0 : sum / static_cast<double>(points.size());
}

double l2_increment_mean_abs_error(const GpuSpec& spec, const std::vector<L2PassPoint>& points,
                                   std::vector<double>* errors) {
  double sum = 0.0;
  size_t n = 0;
  for (size_t i = 1; i < points.size(); ++i) {
    const L2PassPoint& a = points[i - 1];
    const L2PassPoint& b = points[i];
    if (a.op != b.op || a.warm != b.warm || !(b.footprint_bytes > a.footprint_bytes)) continue;
    const double measured = b.duration_us - a.duration_us;
    const double modelled = l2_pass_duration_us(spec, b) - l2_pass_duration_us(spec, a);
    const double e = modelled / measured - 1.0;
    sum += std::abs(e);
    ++n;
    if (errors != nullptr) errors->push_back(e);
  }
  return n == 0 ? 0.0 : sum / static_cast<double>(n);
}

sim::Bandwidth fit_l2_bandwidth(const GpuSpec& spec, const std::vector<L2PassPoint>& points) {
  GpuSpec s = spec;
  const auto error_at = [&](double gbps) {
    s.l2_bandwidth = sim::Bandwidth::bytes_per_s(gbps * 1e9);
    return l2_increment_mean_abs_error(s, points);
  };
  double lo = spec.hbm_bandwidth.bytes_per_s() * 1e-9;
  double hi = 8.0 * lo;
  const double phi = (std::sqrt(5.0) - 1.0) / 2.0;
  double a = hi - phi * (hi - lo), b = lo + phi * (hi - lo);
  double fa = error_at(a), fb = error_at(b);
  while (hi - lo > 0.5) {
    if (fa <= fb) {
      hi = b;
      b = a;
      fb = fa;
      a = hi - phi * (hi - lo);
      fa = error_at(a);
    } else {
      lo = a;
      a = b;
      fa = fb;
      b = lo + phi * (hi - lo);
      fb = error_at(b);
    }
  }
  return sim::Bandwidth::bytes_per_s(std::round(0.5 * (lo + hi)) * 1e9);
}

}  // namespace gcsim::calibration
