#include "calibration/fit/profile_writer.h"

#include <cmath>
#include <cstdio>
#include <iterator>
#include <sstream>
#include <stdexcept>

#include "models/gpu/kernel_cost_model.h"
#include "sim/config/unit_parse.h"

namespace gcsim::calibration {

using models::gpu::Dtype;
using nlohmann::json;

namespace {

double round4(double v) { return std::round(v * 1e4) / 1e4; }
sim::Duration round_ns(sim::Duration d) {
  return sim::Duration::from_seconds(std::round(d.microseconds() * 1e3) * 1e-9);
}
std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// YAML scalars back to JSON: integers, then numbers, booleans, strings.
json to_json(const YAML::Node& n) {
  if (n.IsMap()) {
    json j = json::object();
    for (const auto& kv : n) j[kv.first.as<std::string>()] = to_json(kv.second);
    return j;
  }
  if (n.IsSequence()) {
    json j = json::array();
    for (const auto& e : n) j.push_back(to_json(e));
    return j;
  }
  if (!n.IsScalar()) return nullptr;
  const std::string s = n.Scalar();
  if (n.Tag() == "!") return s;  // quoted in the file: a string
  if (s == "true" || s == "false") return s == "true";
  if (s == "null") return nullptr;
  try {
    size_t used = 0;
    const long long i = std::stoll(s, &used);
    if (used == s.size()) return i;
    const double d = std::stod(s, &used);
    if (used == s.size()) return d;
  } catch (const std::exception&) {
  }
  return s;
}

}  // namespace

void round_for_profile(models::gpu::GpuSpec& s) {
  auto& e = s.efficiency;
  for (double& t : e.tensor) t = round4(t);
  for (double& t : e.gemm_tile) t = round4(t);
  e.vector = round4(e.vector);
  e.hbm = round4(e.hbm);
  e.attention = round4(e.attention);
  e.attention_backward = round4(e.attention_backward);
  e.row_reduction = round4(e.row_reduction);
  e.tile_overhead = round_ns(e.tile_overhead);
  e.gemm_setup = round_ns(e.gemm_setup);
  e.gemm_setup_per_cta = round_ns(e.gemm_setup_per_cta);
  e.attention_tile_overhead = round_ns(e.attention_tile_overhead);
  e.attention_backward_tile_overhead = round_ns(e.attention_backward_tile_overhead);
  s.kernel_launch_latency = round_ns(s.kernel_launch_latency);
  s.sm_bandwidth_headroom = round4(s.sm_bandwidth_headroom);
}

std::string profile_yaml(const ProfileContent& c) {
  const models::gpu::GpuSpec& s = c.fit->spec;
  const auto& e = s.efficiency;
  std::ostringstream o;
  std::string device = "unknown GPU", driver, date;
  if (!c.set->provenance.empty()) {
    const json& p = c.set->provenance[0];
    device = p.value("device_name", device);
    driver = p.value("driver_version", std::string());
    date = p.value("date_utc", std::string());
  }
  o << "# gcsim calibration profile for " << s.name << " (format: calibration/profiles/README.md).\n"
    << "# Made by: " << c.command << "\n"
    << "# cluster.calibration reads gpu, kernel_launch_latency, graph_kernel_launch_latency,\n"
    << "# launch_inside_kernel, sm_bandwidth_headroom and efficiency; the rest records how they\n"
    << "# were obtained.\n";
  o << "gpu: " << s.name << "\n";
  o << "measured_on: \"" << device << (driver.empty() ? "" : ", driver " + driver)
    << (date.empty() ? "" : ", " + date.substr(0, 10)) << "\"\n";
  o << "kernel_launch_latency: " << sim::format_duration(s.kernel_launch_latency) << "\n";
  if (s.graph_kernel_launch_latency) {
    o << "graph_kernel_launch_latency: " << sim::format_duration(*s.graph_kernel_launch_latency) << "\n";
  }
  if (s.launch_inside_kernel) {
    o << "launch_inside_kernel: " << sim::format_duration(*s.launch_inside_kernel) << "\n";
  }
  o << "sm_bandwidth_headroom: " << num(s.sm_bandwidth_headroom) << "\n";
  o << "efficiency:\n  tensor: {";
  bool first = true;
  for (Dtype d : models::gpu::kAllDtypes) {
    if (d == Dtype::fp32) continue;
    o << (first ? "" : ", ") << models::gpu::dtype_name(d) << ": " << num(e.tensor_for(d));
    first = false;
  }
  o << "}\n  vector: " << num(e.vector) << "\n  hbm: " << num(e.hbm)
    << "\n  attention: " << num(e.attention) << "\n  attention_backward: " << num(e.attention_backward)
    << "\n  row_reduction: " << num(e.row_reduction)
    << "\n  tile_overhead: " << sim::format_duration(e.tile_overhead)
    << "\n  gemm_setup: " << sim::format_duration(e.gemm_setup)
    << "\n  gemm_setup_per_cta: " << sim::format_duration(e.gemm_setup_per_cta)
    << "\n  gemm_split_k_min_slice: " << e.gemm_split_k_min_slice
    << "\n  attention_tile_overhead: " << sim::format_duration(e.attention_tile_overhead)
    << "\n  attention_backward_tile_overhead: "
    << sim::format_duration(e.attention_backward_tile_overhead) << "\n  gemm_tile: {";
  for (size_t i = 0; i < std::size(models::gpu::kGemmTileCandidates); ++i) {
    const auto& t = models::gpu::kGemmTileCandidates[i];
    o << (i ? ", " : "") << t.m << "x" << t.n << ": " << num(e.gemm_tile[i]);
  }
  o << "}\n  softmax: {warp_cycles_per_element: " << num(e.softmax.warp_cycles_per_element)
    << ", block_cycles_per_element: " << num(e.softmax.block_cycles_per_element)
    << ", multipass_reads: " << num(e.softmax.multipass_reads) << "}\n";
  int n_fit = 0, n_held = 0, n_excl = 0;
  for (Split sp : *c.splits) (sp == Split::fit ? n_fit : sp == Split::heldout ? n_held : n_excl)++;
  o << "fit:\n  method: weighted linear least squares on relative error (Eigen), alternating with "
       "tile choice and tile-shape multipliers; sm_bandwidth_headroom from {1.5, 2, 3, 4, 6}\n"
    << "  cases: {fit: " << n_fit << ", heldout: " << n_held << ", excluded: " << n_excl << "}\n"
    << "  rms_relative_error_fit: " << num(c.fit->rms_relative_error) << "\n"
    << "  empty_kernel_spacing_us: " << num(c.set->launch_us) << "\n";
  if (c.set->graph_node_us > 0) o << "  empty_graph_node_spacing_us: " << num(c.set->graph_node_us) << "\n";
  if (!c.set->graph_savings_us.empty()) {
    o << "  graph_saving_per_kernel_us: [";
    for (size_t i = 0; i < c.set->graph_savings_us.size(); ++i) {
      o << (i ? ", " : "") << num(c.set->graph_savings_us[i]);
    }
    o << "]  # real decode steps, stream - graph per kernel; their mean is the saving\n";
  }
  o << "  notes:\n";
  for (const auto& n : c.fit->notes) o << "    - \"" << n << "\"\n";
  auto table = [&](const char* key, const std::vector<ClassError>& rows) {
    o << key << ":   # |predicted - measured| / measured\n";
    for (const ClassError& r : rows) {
      o << "  - {class: \"" << r.shape_class << "\", n: " << r.n << ", median: " << num(r.median_abs)
        << ", p90: " << num(r.p90_abs) << ", max: " << num(r.max_abs) << "}\n";
    }
  };
  table("validation", c.heldout);
  table("fit_errors", c.fitted);
  o << "provenance:\n";
  for (const json& p : c.set->provenance) o << "  - " << p.dump() << "\n";
  o << "measurements:   # every case: its set, why it was excluded, the model's time, the record\n";
  for (size_t i = 0; i < c.set->items.size(); ++i) {
    const Measurement& m = c.set->items[i];
    json entry = {{"set", split_name((*c.splits)[i])},
                  {"class", m.shape_class},
                  {"label", m.label},
                  {"predicted_us", std::round(predicted_us(s, m) * 1000) / 1000}};
    if (!m.excluded.empty()) entry["excluded"] = m.excluded;
    entry["record"] = m.record;
    o << "  - " << entry.dump() << "\n";
  }
  return o.str();
}

MeasurementSet measurements_in_profile(const YAML::Node& profile, std::vector<Split>& splits) {
  const YAML::Node list = profile["measurements"];
  if (!list || !list.IsSequence() || list.size() == 0) {
    throw std::runtime_error("the profile keeps no measurements (write it with gcsim calibrate)");
  }
  json results = json::array();
  std::vector<json> entries;
  for (const auto& n : list) {
    entries.push_back(to_json(n));
    results.push_back(entries.back().at("record"));
  }
  MeasurementSet set;
  add_measurements(set, json{{"schema", "gcsim.microbench.v1"}, {"meta", json::object()},
                             {"results", results}},
                   "profile measurements");
  splits.assign(set.items.size(), Split::fit);
  for (size_t i = 0; i < set.items.size(); ++i) {
    for (const json& e : entries) {
      if (e.value("label", "") != set.items[i].label) continue;
      const std::string sp = e.value("set", "fit");
      splits[i] = sp == "heldout" ? Split::heldout : sp == "excluded" ? Split::excluded : Split::fit;
      if (e.contains("excluded")) set.items[i].excluded = e["excluded"];
    }
  }
  return set;
}

}  // namespace gcsim::calibration
