#include "calibration/fit/measurements.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <stdexcept>

#include "models/gpu/kernel_cost_model.h"
#include "sim/config/input_file.h"

namespace gcsim::calibration {

using models::gpu::AttentionShape;
using models::gpu::Dtype;
using models::gpu::GemmShape;
using models::gpu::MemoryOpKind;
using models::gpu::MemoryOpShape;
using nlohmann::json;

namespace {

// A clock below this fraction of the GPU's maximum after a case marks it as
// measured on a power-capped GPU; profiles describe a rested GPU.
constexpr double kThrottledClock = 0.9;

template <typename T>
T need(const json& r, const char* key, const std::string& where) {
  if (!r.contains(key)) throw std::runtime_error(where + ": record has no '" + key + "'");
  return r.at(key).get<T>();
}

bool already_in(const MeasurementSet& set, const std::string& label) {
  for (const auto& other : set.items) {
    if (other.label == label) return true;
  }
  return false;
}

// Memory ops of the microbenchmark as the model's memory-bound ops: reads
// and writes of `inputs` + 1 tensors; the read-only stream is an
// elementwise op that moves one tensor (the model counts bytes only).
struct MemoryMapping {
  MemoryOpKind kind;
  int inputs;
  double flops_per_element;
  const char* family;  // reported class
};
const std::map<std::string, MemoryMapping>& memory_ops() {
  static const std::map<std::string, MemoryMapping> ops{
      {"memcpy", {MemoryOpKind::memcpy, 1, 0, "memory copy"}},
      {"copy", {MemoryOpKind::memcpy, 1, 0, "memory copy"}},
      {"read", {MemoryOpKind::elementwise, 0, 0, "memory stream"}},
      {"write", {MemoryOpKind::elementwise, 0, 0, "memory stream"}},
      {"add", {MemoryOpKind::elementwise, 2, 1, "memory elementwise"}},
      {"gelu", {MemoryOpKind::elementwise, 1, 8, "memory elementwise"}},
      {"layer_norm", {MemoryOpKind::layer_norm, 1, 8, "memory norm/softmax"}},
      {"rms_norm", {MemoryOpKind::rms_norm, 1, 5, "memory norm/softmax"}},
      // gcsim_microbench's own softmax kernel (a row per CTA, read once,
      // like its norms), not PyTorch's eager one that MemoryOpKind::softmax
      // stands for: charged as its norms are, bytes at the row fraction.
      {"softmax", {MemoryOpKind::layer_norm, 1, 5, "memory norm/softmax"}}};
  return ops;
}

std::optional<Dtype> gemm_dtype(const std::string& d) {
  return models::gpu::parse_dtype(d == "fp8_e4m3" ? "fp8" : d);
}

void add_record(MeasurementSet& set, const json& r, const json& meta, const std::string& where) {
  const std::string kind = r.value("kind", "");
  if (kind == "launch") {
    if (r.value("mode", "") == "empty_kernel") set.launch_us = need<double>(r, "time_us", where);
    if (r.value("mode", "") == "cuda_graph_node") set.graph_node_us = need<double>(r, "time_us", where);
    return;
  }
  if (kind != "gemm" && kind != "memory" && kind != "attention") return;
  if (r.contains("error")) return;  // a case the library could not run
  Measurement m;
  m.kind = kind;
  m.record = r;
  m.time_us = need<double>(r, "time_us", where);
  if (!(m.time_us > 0)) throw std::runtime_error(where + ": time_us must be > 0");
  const double max_mhz = meta.value("max_sm_mhz", 0.0);
  if (r.contains("sm_mhz_after") && max_mhz > 0 &&
      r["sm_mhz_after"].get<double>() < kThrottledClock * max_mhz) {
    m.excluded = "throttled (SM clock " + std::to_string(r["sm_mhz_after"].get<int>()) + " MHz)";
  }
  if (!r.value("backlog_ok", true)) m.excluded = "stream not back-logged";
  if (kind == "gemm") {
    const std::string dt = need<std::string>(r, "dtype", where);
    auto dtype = gemm_dtype(dt);
    if (!dtype) throw std::runtime_error(where + ": unknown GEMM dtype '" + dt + "'");
    GemmShape s{need<int64_t>(r, "m", where), need<int64_t>(r, "n", where),
                need<int64_t>(r, "k", where), 1, *dtype};
    m.gemm = s;
    const std::string layout = r.value("layout", "TN");
    const std::string cls = r.value("class", "gemm");
    m.shape_class = "gemm " + std::string(cls == "train_bwd" ? "train" : cls);
    m.label = "gemm " + std::string(models::gpu::dtype_name(*dtype)) + " " + layout + " " +
              std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
  } else if (kind == "memory") {
    const std::string op = need<std::string>(r, "op", where);
    auto it = memory_ops().find(op);
    if (it == memory_ops().end()) throw std::runtime_error(where + ": unknown memory op '" + op + "'");
    MemoryOpShape s;
    s.kind = it->second.kind;
    s.inputs = it->second.inputs;
    s.flops_per_element = it->second.flops_per_element;
    s.dtype = Dtype::bf16;
    const int64_t elements = need<int64_t>(r, "elements", where);
    if (s.kind == MemoryOpKind::memcpy) {
      s.elements = need<int64_t>(r, "bytes_per_tensor", where);  // memcpy counts bytes
      s.dtype = Dtype::int8;
    } else if (r.contains("rows")) {
      s.rows = need<int64_t>(r, "rows", where);
      s.cols = need<int64_t>(r, "cols", where);
      s.elements = s.rows * s.cols;
    } else {
      s.elements = elements;
    }
    m.memory = s;
    m.shape_class = it->second.family;
    m.label = "memory " + op + " " + std::to_string(elements) +
              (r.contains("cols") ? " x" + std::to_string(s.cols) : std::string());
  } else {
    AttentionShape s;
    s.batch = need<int64_t>(r, "batch", where);
    s.heads = need<int64_t>(r, "heads", where);
    s.kv_heads = need<int64_t>(r, "kv_heads", where);
    s.q_len = need<int64_t>(r, "q_len", where);
    s.kv_len = need<int64_t>(r, "kv_len", where);
    s.head_dim = need<int64_t>(r, "head_dim", where);
    s.causal = need<bool>(r, "causal", where);
    const std::string pass = need<std::string>(r, "pass", where);
    s.backward = pass == "bwd";
    m.attention = s;
    m.shape_class = s.q_len <= models::gpu::kDecodeMaxQueryLen ? "attention decode"
                    : s.backward                              ? "attention bwd"
                                                              : "attention fwd";
    // Decode kernels have their own parameters, fitted apart
    // (attention_family_fit.h: flash2's decode, the fused families'):
    // none of the profile's unknowns but the launch sets their time.
    if (s.q_len <= models::gpu::kDecodeMaxQueryLen && m.excluded.empty()) {
      m.excluded = "decode: fitted apart (attention_family_fit)";
    }
    // flash2's prefill parameters (efficiency.attention*, flash2_prefill)
    // are fitted on head dims 64-192 by attention_family_fit; this run (head
    // dim 128) validates them, another day and host.
    m.validation_only = true;
    m.label = "attention " + pass + " b" + std::to_string(s.batch) + " h" +
              std::to_string(s.heads) + "/" + std::to_string(s.kv_heads) + " q" +
              std::to_string(s.q_len) + " kv" + std::to_string(s.kv_len) + " d" +
              std::to_string(s.head_dim) + (s.causal ? " causal" : "");
  }
  if (already_in(set, m.label)) return;  // a repeated case: the first one counts
  set.items.push_back(std::move(m));
}

// kernel_grid.py's GEMM classes: Llama layer and wave-quantization shapes by
// their group, the others by size (decode: a side of 64 or less; small: up
// to 2 x 1024^3 flops, where the fixed cost dominates; mid: up to 2 x 4096^3).
std::string grid_gemm_class(const std::string& group, const GemmShape& s) {
  if (group.rfind("llama", 0) == 0) return "gemm llama";
  if (group == "wave") return "gemm wave";
  if (std::min(s.m, s.n) <= 64) return "gemm decode";
  const double flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
  if (flops <= 2.0 * 1024.0 * 1024.0 * 1024.0) return "gemm small";
  if (flops <= 2.0 * 4096.0 * 4096.0 * 4096.0) return "gemm mid";
  return "gemm large";
}

// The record as kept in a profile: the kernel's name, not every kernel's.
json trimmed(const json& r) {
  json t = json::object();
  for (const auto& [key, value] : r.items()) {
    if (key.rfind("kernels", 0) == 0) continue;
    t[key] = value;
  }
  for (const char* key : {"kernels", "kernels_fwd", "kernels_bwd"}) {
    if (r.contains(key) && r[key].is_array() && !r[key].empty()) {
      t[std::string(key) + "_top"] = r[key][0].value("name", "");
    }
  }
  return t;
}

double median_clock(const json& r, const char* key) {
  if (!r.contains(key) || !r[key].is_object()) return 0;
  const json& c = r[key];
  return c.contains("sm_mhz_median") && c["sm_mhz_median"].is_number() ? c["sm_mhz_median"].get<double>() : 0;
}

constexpr double kGapKernelMaxUs = 10.0;

void add_grid_gemm(MeasurementSet& set, const json& r, const std::string& where) {
  const std::string dt = need<std::string>(r, "dtype", where);
  auto dtype = gemm_dtype(dt);
  if (!dtype) throw std::runtime_error(where + ": unknown GEMM dtype '" + dt + "'");
  Measurement m;
  m.kind = "gemm";
  m.record = trimmed(r);
  m.time_us = need<double>(r, "time_us", where);
  if (!(m.time_us > 0)) throw std::runtime_error(where + ": time_us must be > 0");
  m.sm_mhz = median_clock(r, "clock");
  if (!r.value("backlog_ok", true)) m.excluded = "stream not back-logged";
  GemmShape s{need<int64_t>(r, "m", where), need<int64_t>(r, "n", where),
              need<int64_t>(r, "k", where), 1, *dtype};
  m.gemm = s;
  const std::string layout = r.value("layout", "tn");
  const std::string tag = layout == "tn" ? "TN" : layout == "nn" ? "NN" : "NT";
  m.shape_class = grid_gemm_class(r.value("group", ""), s);
  // The stream's gap, from the small single-kernel GEMMs: under 10 us the
  // kernel is short enough that the spacing less its duration is the gap.
  std::optional<double> gap_us;
  if (m.excluded.empty() && m.time_us < kGapKernelMaxUs && r.contains("kernels") && r["kernels"].is_array() &&
      r["kernels"].size() == 1) {
    const json& k = r["kernels"][0];
    if (k.value("per_rep_count", 0.0) == 1.0 && k.contains("per_rep_us") && k["per_rep_us"].is_number()) {
      gap_us = m.time_us - k["per_rep_us"].get<double>();
    }
  }
  m.label = "gemm " + std::string(models::gpu::dtype_name(*dtype)) + " " + tag + " " +
            std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
  if (already_in(set, m.label)) return;
  if (gap_us) set.stream_gaps_us.push_back(*gap_us);
  set.items.push_back(std::move(m));
}

// An eager softmax or log_softmax point: the forward as the model's softmax
// (one read, one write of rows x cols), the backward (softmax_backward_data:
// reads the output and its gradient, writes the input's) as an elementwise
// pass over two inputs.
void add_grid_softmax(MeasurementSet& set, const json& r, const std::string& where) {
  const std::string op = need<std::string>(r, "op", where);
  const std::string dt = need<std::string>(r, "dtype", where);
  auto dtype = models::gpu::parse_dtype(dt);
  if (!dtype) throw std::runtime_error(where + ": unknown softmax dtype '" + dt + "'");
  const int64_t rows = need<int64_t>(r, "rows", where), cols = need<int64_t>(r, "cols", where);
  for (const char* pass : {"fwd", "bwd"}) {
    if (!r.contains(pass)) continue;
    Measurement m;
    m.kind = "memory";
    m.record = trimmed(r);
    m.time_us = need<double>(r[pass], "time_us", where + "." + pass);
    if (!(m.time_us > 0)) throw std::runtime_error(where + ": " + pass + ".time_us must be > 0");
    m.sm_mhz = median_clock(r, "clock");
    if (!r[pass].value("backlog_ok", true)) m.excluded = "stream not back-logged";
    // PyTorch's eager softmax forward is bound by the SMs (0.3-2.4 TB/s):
    // its own parameters (GpuEfficiency::softmax) are fitted apart
    // (kernel_grid_fit.h), so the profile's fit only checks it (fitting it
    // there would drag the norms' fraction down). The backward's timed
    // pass holds the softmax backward kernel and a mul kernel of the
    // script's loss (torch.profiler: ~half each), which the model's one
    // kernel does not stand for: reported, not used.
    const bool forward = std::string(pass) == "fwd";
    if (forward) {
      m.validation_only = true;
    } else if (m.excluded.empty()) {
      m.excluded = "eager softmax backward: the timed pass includes a mul kernel";
    }
    MemoryOpShape s;
    s.dtype = *dtype;
    if (std::string(pass) == "fwd") {
      s.kind = MemoryOpKind::softmax;
      s.rows = rows;
      s.cols = cols;
      s.elements = rows * cols;
      s.flops_per_element = 5;
      s.log_softmax = op == "log_softmax";
      m.shape_class = "memory " + op;
    } else {
      s.kind = MemoryOpKind::elementwise;
      s.elements = rows * cols;
      s.inputs = 2;
      s.flops_per_element = 3;
      m.shape_class = "memory softmax bwd";
    }
    m.memory = s;
    m.label = "memory " + op + " " + pass + " " + std::to_string(rows) + " x" + std::to_string(cols) +
              " " + dt;
    if (!already_in(set, m.label)) set.items.push_back(std::move(m));
  }
}

void add_kernel_grid(MeasurementSet& set, const json& doc, const std::string& name) {
  size_t i = 0;
  for (const json& r : doc.at("results")) {
    const std::string where = name + ": results[" + std::to_string(i++) + "]";
    const std::string kind = r.value("kind", "");
    if (kind == "gemm") add_grid_gemm(set, r, where);
    if (kind == "softmax") add_grid_softmax(set, r, where);
  }
}

}  // namespace

void add_measurements(MeasurementSet& set, const json& doc, const std::string& name) {
  if (doc.value("schema", "") == "gcsim.calibration.kernel_grid.v1") {
    json prov = doc.value("meta", json::object());
    prov["file"] = std::filesystem::path(name).filename().string();
    set.provenance.push_back(prov);
    add_kernel_grid(set, doc, name);
    return;
  }
  if (doc.value("schema", "") == "gcsim.serving_kernels.v1") {
    json prov = doc.value("meta", json::object());
    prov.erase("env");
    prov["file"] = std::filesystem::path(name).filename().string();
    set.provenance.push_back(prov);
    const json tiny = doc.value("tiny", json::object());
    if (tiny.contains("stream_profile")) {
      set.empty_kernel_duration_us = need<double>(tiny["stream_profile"], "median_dur_us", name + ": tiny.stream_profile");
    }
    size_t i = 0;
    for (const json& r : doc.value("decode", json::array())) {
      const std::string where = name + ": decode[" + std::to_string(i++) + "]";
      if (r.contains("graph_profile")) {
        set.graph_gaps_us.push_back(need<double>(r["graph_profile"], "median_end_to_start_us", where + ".graph_profile"));
      }
      if (r.contains("stream_gap_per_kernel_us")) {
        set.decode_stream_gaps_us.push_back(need<double>(r, "stream_gap_per_kernel_us", where));
      }
      if (!r.contains("eager") || !r.contains("graph") || !r.contains("eager_profile")) continue;  // a failed point
      const double kernels = need<double>(r.at("eager_profile"), "n", where);
      if (kernels < 1) continue;
      set.graph_savings_us.push_back(
          (need<double>(r.at("eager"), "time_us", where) - need<double>(r.at("graph"), "time_us", where)) / kernels);
    }
    return;
  }
  if (doc.value("schema", "") != "gcsim.microbench.v1") {
    throw std::runtime_error(name + ": not a gcsim.microbench.v1 file (schema '" +
                             doc.value("schema", "") + "')");
  }
  const json meta = doc.value("meta", json::object());
  if (meta.contains("checks_ok") && !meta["checks_ok"].get<bool>()) {
    throw std::runtime_error(name + ": its correctness checks failed; its times are not used");
  }
  json prov = meta;
  prov.erase("clock_samples_raw");
  // The file's name only: a profile must not depend on where it was fitted.
  prov["file"] = std::filesystem::path(name).filename().string();
  set.provenance.push_back(prov);
  size_t i = 0;
  for (const json& r : doc.at("results")) {
    add_record(set, r, meta, name + ": results[" + std::to_string(i++) + "]");
  }
}

namespace {
std::optional<double> median_of(std::vector<double> g) {
  if (g.empty()) return std::nullopt;
  std::sort(g.begin(), g.end());
  const size_t n = g.size();
  return n % 2 ? g[n / 2] : 0.5 * (g[n / 2 - 1] + g[n / 2]);
}
}  // namespace

std::optional<double> measured_stream_gap_us(const MeasurementSet& set) { return median_of(set.stream_gaps_us); }

std::optional<double> measured_graph_gap_us(const MeasurementSet& set) { return median_of(set.graph_gaps_us); }

MeasurementSet load_measurements(const std::vector<std::string>& paths) {
  MeasurementSet set;
  for (const std::string& p : paths) {
    std::string text, error;
    if (!sim::config::read_input_file(p, sim::config::kMaxDataBytes, "measurements", text, error)) {
      throw std::runtime_error(p + ": " + error);
    }
    json doc;
    try {
      doc = json::parse(text);
    } catch (const json::exception& e) {
      throw std::runtime_error(p + ": not JSON (" + e.what() + ")");
    }
    // A record of the wrong shape (a string where a number belongs) is the
    // file's fault, not gcsim's.
    try {
      add_measurements(set, doc, p);
    } catch (const json::exception& e) {
      throw std::runtime_error(p + ": not a gcsim_microbench file (" + e.what() + ")");
    }
  }
  return set;
}

double compute_stretch(const models::gpu::GpuSpec& spec, const Measurement& m) {
  return m.sm_mhz > 0 && spec.sm_clock_ghz > 0 ? spec.sm_clock_ghz * 1000.0 / m.sm_mhz : 1.0;
}

double isolated_us_at(const models::gpu::GpuSpec& spec, const models::gpu::KernelDesc& k,
                      double compute_stretch) {
  if (compute_stretch == 1.0) return models::gpu::isolated_time(spec, k, spec.sm_count).microseconds();
  const int width = models::gpu::wave_width(spec, k, spec.sm_count);
  const int64_t full = k.tiles / width;
  const int last = static_cast<int>(k.tiles % width);
  sim::Duration t = spec.kernel_launch_latency + k.setup;
  if (full > 0) t += models::gpu::wave_time(spec, k, width, compute_stretch) * full;
  if (last > 0) t += models::gpu::wave_time(spec, k, last, compute_stretch);
  return t.microseconds();
}

models::gpu::KernelDesc kernel_for(const models::gpu::GpuSpec& spec, const Measurement& m) {
  if (m.gemm) return models::gpu::gemm_kernel(spec, *m.gemm);
  if (m.memory) return models::gpu::memory_kernel(spec, *m.memory);
  return models::gpu::attention_kernel(spec, *m.attention);
}

}  // namespace gcsim::calibration
