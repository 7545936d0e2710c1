#include "calibration/fit/kernel_validation.h"

#include <cmath>
#include <cstdio>
#include <map>

#include "calibration/fit/measurements.h"
#include "models/gpu/kernel_cost_model.h"

namespace gcsim::calibration {

using models::gpu::AttentionShape;
using models::gpu::Dtype;
using models::gpu::GemmShape;
using models::gpu::KernelDesc;
using models::gpu::MemoryOpKind;
using models::gpu::MemoryOpShape;
using nlohmann::json;

namespace {

// The kernel a measurement record corresponds to, or false to skip it.
bool kernel_for_record(const models::gpu::GpuSpec& spec, const json& r, std::string& label,
                       KernelDesc& kernel) {
  const std::string kind = r.value("kind", "");
  if (kind == "gemm") {
    const std::string dt = r.value("dtype", "");
    auto dtype = models::gpu::parse_dtype(dt == "fp8_e4m3" ? "fp8" : dt);
    if (!dtype || r.contains("fast_accum")) return false;
    GemmShape s{r["m"], r["n"], r["k"], 1, *dtype};
    // kernel_grid.py's other operand layouts keep labels of their own
    const std::string layout = r.value("layout", "");
    label = "gemm " + dt + " " + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
            std::to_string(s.k) + (layout == "nn" || layout == "wgrad" ? " " + layout : std::string());
    kernel = models::gpu::gemm_kernel(spec, s);
    return true;
  }
  if (kind == "softmax") {  // kernel_grid.py's eager softmax: its forward only
    if (r.value("op", "") != "softmax" || r.value("dtype", "") != "bf16") return false;
    MemoryOpShape s;
    s.kind = MemoryOpKind::softmax;
    s.rows = r["rows"];
    s.cols = r["cols"];
    s.elements = s.rows * s.cols;
    s.dtype = Dtype::bf16;
    label = "memory softmax " + std::to_string(s.elements) + " elements";
    kernel = models::gpu::memory_kernel(spec, s);
    return true;
  }
  if (kind == "memory") {
    static const std::map<std::string, std::pair<MemoryOpKind, int>> ops{
        {"copy", {MemoryOpKind::memcpy, 1}},         {"add", {MemoryOpKind::elementwise, 2}},
        {"gelu", {MemoryOpKind::elementwise, 1}},    {"layer_norm", {MemoryOpKind::layer_norm, 1}},
        {"rms_norm", {MemoryOpKind::rms_norm, 1}},   {"softmax", {MemoryOpKind::softmax, 1}}};
    const std::string op = r.value("op", "");
    auto it = ops.find(op);
    if (it == ops.end()) return false;
    MemoryOpShape s;
    s.kind = it->second.first;
    s.inputs = it->second.second;
    s.dtype = Dtype::bf16;
    const int64_t elements = r["elements"];
    if (s.kind == MemoryOpKind::memcpy) {
      s.elements = elements * 2;  // bytes of bf16
      s.dtype = Dtype::int8;
      s.flops_per_element = 0;
    } else if (r.contains("shape")) {
      s.rows = r["shape"][0];
      s.cols = r["shape"][1];
      s.elements = s.rows * s.cols;
    } else {
      s.elements = elements;
    }
    label = "memory " + op + " " + std::to_string(elements) + " elements";
    kernel = models::gpu::memory_kernel(spec, s);
    return true;
  }
  if (kind == "attention") {
    if (r.value("primary", true) == false) return false;
    const std::string pass = r.value("pass", "");
    if (pass != "fwd" && pass != "bwd") return false;
    AttentionShape s;
    s.batch = r["batch"];
    s.heads = r["heads"];
    s.kv_heads = r["kv_heads"];
    s.q_len = r["q_len"];
    s.kv_len = r["kv_len"];
    s.head_dim = r["head_dim"];
    s.causal = r["causal"];
    s.backward = pass == "bwd";
    label = "attention " + pass + " b" + std::to_string(s.batch) + " h" +
            std::to_string(s.heads) + "/" + std::to_string(s.kv_heads) + " q" +
            std::to_string(s.q_len) + " kv" + std::to_string(s.kv_len) +
            (s.causal ? " causal" : "");
    kernel = models::gpu::attention_kernel(spec, s);
    return true;
  }
  return false;
}

// The record's time: its spacing in a stream where measured, else its
// event-pair median; 0 = none.
double record_us(const json& r) {
  const json& t = r.contains("fwd") && r["fwd"].is_object() ? r["fwd"] : r;
  if (t.contains("time_us") && t["time_us"].is_number()) return t["time_us"];
  if (t.contains("median_us") && t["median_us"].is_number()) return t["median_us"];
  return 0;
}

double record_mhz(const json& r) {
  if (!r.contains("clock") || !r["clock"].is_object()) return 0;
  const json& c = r["clock"];
  return c.contains("sm_mhz_median") && c["sm_mhz_median"].is_number() ? c["sm_mhz_median"].get<double>() : 0;
}

}  // namespace

std::vector<KernelComparison> compare_with_measurements(const models::gpu::GpuSpec& spec,
                                                        const std::vector<json>& runs) {
  std::vector<KernelComparison> rows;
  std::map<std::string, size_t> index;
  for (const json& run : runs) {
    for (const json& r : run.at("results")) {
      std::string label;
      KernelDesc kernel;
      const double measured = record_us(r);
      if (!(measured > 0) || !kernel_for_record(spec, r, label, kernel)) continue;
      auto it = index.find(label);
      if (it != index.end() && rows[it->second].measured_us <= measured) continue;
      KernelComparison c;
      c.kind = r["kind"] == "softmax" ? "memory" : r["kind"].get<std::string>();
      c.label = label;
      c.measured_us = measured;
      c.sm_mhz = record_mhz(r);
      const double stretch = c.sm_mhz > 0 ? spec.sm_clock_ghz * 1000.0 / c.sm_mhz : 1.0;
      c.predicted_us = isolated_us_at(spec, kernel, stretch);
      if (it != index.end()) {
        rows[it->second] = c;
      } else {
        index[label] = rows.size();
        rows.push_back(c);
      }
    }
  }
  return rows;
}

std::string comparison_table(const std::vector<KernelComparison>& rows) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-48s %12s %12s %8s\n", "kernel", "measured us",
                "predicted us", "error");
  out += line;
  double sum = 0;
  for (const auto& r : rows) {
    std::snprintf(line, sizeof line, "%-48s %12.1f %12.1f %+7.1f%%\n", r.label.c_str(),
                  r.measured_us, r.predicted_us, 100 * r.error());
    out += line;
    sum += std::fabs(r.error());
  }
  if (!rows.empty()) {
    std::snprintf(line, sizeof line, "mean |error| over %zu kernels: %.1f%%\n", rows.size(),
                  100 * sum / static_cast<double>(rows.size()));
    out += line;
  }
  return out;
}

}  // namespace gcsim::calibration
