#include "sim/scenario/gpu_spec_loader.h"

#include <array>
#include <filesystem>
#include <iterator>
#include <map>
#include <memory>

#include "models/gpu/kernel_cost_model.h"
#include "sim/scenario/presets.h"
#include "sim/config/input_file.h"
#include "sim/scenario/attention_params_loader.h"
#include "sim/scenario/power_params_loader.h"
#include "sim/config/did_you_mean.h"
#include "sim/config/unit_parse.h"

namespace gcsim::cli {

using models::gpu::Dtype;
using models::gpu::GpuEfficiency;
using models::gpu::GpuSpec;
using sim::config::ConfigError;
using sim::config::ConfigReader;
using sim::config::ConfigSource;
using sim::config::Json;

namespace {

// L2's measured rate (l2_cache.h): at least HBM's (else L2 would not be a
// cache worth hitting) and at most 8x it (the H200's fitted 7290 GB/s is
// 1.5x its HBM's datasheet rate), with a size to hold the lines.
void read_l2_bandwidth(ConfigReader& r, GpuSpec& s) {
  if (!r.has("l2_bandwidth")) return;
  s.l2_bandwidth = r.get_bandwidth("l2_bandwidth", std::nullopt,
                                   "rate all SMs read and write lines resident in L2 (measured)");
  const sim::Bandwidth most = s.hbm_bandwidth.scaled(8.0);
  if (!(*s.l2_bandwidth >= s.hbm_bandwidth && *s.l2_bandwidth <= most)) {
    r.fail("l2_bandwidth", "l2_bandwidth " + sim::format_bandwidth(*s.l2_bandwidth) + " must be in [" +
                               sim::format_bandwidth(s.hbm_bandwidth) + ", " + sim::format_bandwidth(most) +
                               "]: the HBM bandwidth to 8x it (the H200's is 7290GB/s)");
  }
  if (s.l2_size.count() <= 0) r.fail("l2_bandwidth", "l2_bandwidth needs the L2's size (`l2`)");
}

template <typename T>
std::optional<T> from(const GpuSpec* base, T GpuSpec::*field) {
  if (!base) return std::nullopt;
  return base->*field;
}

GpuSpec read_spec_document(const YAML::Node& root, const std::string& origin) {
  auto source = std::make_shared<ConfigSource>();
  source->file = origin;
  Json ignored;
  ConfigReader r(root, "", source, &ignored);
  GpuSpec spec = read_gpu_fields(r, nullptr);
  r.get_string("description", std::string(), "one-line description");
  r.finish();
  return spec;
}

// graph_kernel_launch_latency, when `r` has it, checked against the spec's
// kernel_launch_latency. One inherited from the preset (a custom GPU or a
// profile that moves kernel_launch_latency alone) is capped at the new
// stream latency: a graph node launches no slower than a stream kernel.
void read_graph_launch_latency(ConfigReader& r, GpuSpec& s) {
  const std::string key = "graph_kernel_launch_latency";
  if (!r.has(key)) {
    r.allow(key);
    if (s.graph_kernel_launch_latency) {
      s.graph_kernel_launch_latency = std::min(*s.graph_kernel_launch_latency, s.kernel_launch_latency);
    }
    return;
  }
  const sim::Duration g = r.get_duration(key, std::nullopt,
                                         "launch to first tile of a kernel node in a replayed CUDA graph");
  if (g < models::gpu::kMinGraphLaunchLatency || g > s.kernel_launch_latency) {
    r.fail(key, "graph_kernel_launch_latency " + sim::format_duration(g) + " must be in [" +
                    sim::format_duration(models::gpu::kMinGraphLaunchLatency) + ", kernel_launch_latency " +
                    sim::format_duration(s.kernel_launch_latency) +
                    "]: a graph node launches no slower than a stream kernel, and no real kernel starts "
                    "sooner than an empty one");
  }
  s.graph_kernel_launch_latency = g;
}

// launch_inside_kernel, when `r` has it: in [0, the graph's launch latency]
// (the graph's is the lower: what a profiler counts as the kernel's cannot
// exceed what either launch adds before the kernel ends). One inherited from
// the preset is capped the same way when a profile or custom GPU lowers the
// latencies.
void read_launch_inside(ConfigReader& r, GpuSpec& s) {
  const std::string key = "launch_inside_kernel";
  const sim::Duration most = s.graph_launch_latency();
  if (!r.has(key)) {
    r.allow(key);
    if (s.launch_inside_kernel) s.launch_inside_kernel = std::min(*s.launch_inside_kernel, most);
    return;
  }
  const sim::Duration d =
      r.get_duration(key, std::nullopt, "the part of a launch latency a profiler counts in the kernel's duration");
  if (d < sim::Duration::zero() || d > most) {
    r.fail(key, "launch_inside_kernel " + sim::format_duration(d) + " must be in [0, " + sim::format_duration(most) +
                    "] (the graph's launch latency, else the stream's): it is the part of a launch latency a "
                    "profiler counts as the kernel's, measured at 0.95-1.38 us on H100 and H200 profiles");
  }
  s.launch_inside_kernel = d;
}

double read_sustained_fraction(ConfigReader& r, double fallback) {
  const double f = r.get_double(
      "sustained_tensor_fraction", fallback,
      "steady-state over rested tensor-core throughput at the power limit (1 = no capping)");
  if (!(f > 0.0 && f <= 1.0)) r.fail("sustained_tensor_fraction", "must lie in (0, 1]");
  return f;
}

}  // namespace

void read_efficiency(ConfigReader& r, GpuEfficiency& eff) {
  auto fraction = [&](ConfigReader& rr, const std::string& key, double fallback,
                      const char* doc) {
    double v = rr.get_double(key, fallback, doc);
    if (!(v > 0.0 && v <= 1.0)) rr.fail(key, "an efficiency must lie in (0, 1]");
    return v;
  };
  ConfigReader tensor = r.child("tensor", "achieved fraction of tensor-core peak, per dtype");
  for (Dtype d : models::gpu::kAllDtypes) {
    if (d == Dtype::fp32) continue;  // plain fp32 GEMMs run on the vector units
    const std::string key(models::gpu::dtype_name(d));
    eff.tensor[static_cast<size_t>(d)] =
        fraction(tensor, key, eff.tensor_for(d), "fraction of peak for this dtype");
  }
  tensor.finish();
  eff.vector = fraction(r, "vector", eff.vector, "achieved fraction of FP32 vector peak");
  eff.hbm = fraction(r, "hbm", eff.hbm, "achieved fraction of HBM bandwidth (streaming copy)");
  eff.attention =
      fraction(r, "attention", eff.attention, "flash-attention fraction of tensor peak");
  eff.attention_backward = fraction(r, "attention_backward", eff.attention_backward,
                                    "flash-attention backward fraction of tensor peak");
  eff.row_reduction = fraction(r, "row_reduction", eff.row_reduction,
                               "norm/softmax fraction of streaming HBM bandwidth");
  eff.tile_overhead = r.get_duration("tile_overhead", eff.tile_overhead,
                                     "fixed cost per wave of tiles (prologue + epilogue)");
  eff.gemm_setup = r.get_duration("gemm_setup", eff.gemm_setup,
                                  "fixed cost of a GEMM kernel before its first wave");
  eff.gemm_setup_per_cta =
      r.get_duration("gemm_setup_per_cta", eff.gemm_setup_per_cta,
                     "added to gemm_setup per CTA of the GEMM's first wave (dispatch, prologue)");
  eff.gemm_split_k_min_slice = r.get_int_in(
      "gemm_split_k_min_slice", eff.gemm_split_k_min_slice,
      "split-K: the shortest K slice a CTA takes (0 = GEMMs never split K)", 0, int64_t{1} << 30);
  eff.attention_tile_overhead =
      r.get_duration("attention_tile_overhead", eff.attention_tile_overhead,
                     "extra cost per wave of flash-attention forward tiles");
  eff.attention_backward_tile_overhead =
      r.get_duration("attention_backward_tile_overhead", eff.attention_backward_tile_overhead,
                     "extra cost per wave of flash-attention backward tiles");
  ConfigReader tiles =
      r.child("gemm_tile", "GEMM CTA tile-shape efficiency, a multiplier on tensor (MxN: value)");
  for (size_t i = 0; i < std::size(models::gpu::kGemmTileCandidates); ++i) {
    const auto& t = models::gpu::kGemmTileCandidates[i];
    eff.gemm_tile[i] = fraction(tiles, std::to_string(t.m) + "x" + std::to_string(t.n),
                                eff.gemm_tile[i], "multiplier for this tile shape");
  }
  tiles.finish();
  ConfigReader softmax = r.child("softmax", "PyTorch's eager softmax forward, by the kernel its row length picks");
  auto cycles = [&](const char* key, double fallback, const char* doc) {
    const double v = softmax.get_double(key, fallback, doc);
    if (!(v >= 0.0 && v <= 64.0)) softmax.fail(key, "SM cycles per element must lie in [0, 64]");
    return v;
  };
  eff.softmax.warp_cycles_per_element = cycles(
      "warp_cycles_per_element", eff.softmax.warp_cycles_per_element, "SM cycles per element, a warp per row");
  eff.softmax.block_cycles_per_element = cycles(
      "block_cycles_per_element", eff.softmax.block_cycles_per_element, "SM cycles per element, a CTA per row");
  eff.softmax.multipass_reads = softmax.get_double(
      "multipass_reads", eff.softmax.multipass_reads, "HBM reads of each row by the three-pass kernel");
  if (!(eff.softmax.multipass_reads >= 1.0 && eff.softmax.multipass_reads <= 3.0)) {
    softmax.fail("multipass_reads", "must lie in [1, 3] (its three passes each load the row)");
  }
  softmax.finish();
  read_attention_families(r, eff);
}

GpuSpec read_gpu_fields(ConfigReader& r, const GpuSpec* base) {
  GpuSpec s = base ? *base : GpuSpec{};
  s.name = r.get_string("name", from(base, &GpuSpec::name), "preset name");
  s.source = r.get_string("source", from(base, &GpuSpec::source), "where the numbers come from");
  s.sm_count = static_cast<int>(
      r.get_int_in("sm_count", base ? std::optional<int64_t>(base->sm_count) : std::nullopt,
                   "streaming multiprocessors", 1, 100'000));
  s.sm_clock_ghz = r.get_double("sm_clock_ghz", from(base, &GpuSpec::sm_clock_ghz),
                                "boost SM clock in GHz");
  if (!(s.sm_clock_ghz > 0)) r.fail("sm_clock_ghz", "must be positive");

  ConfigReader tensor = r.child("tensor_peak", "dense tensor-core peak per dtype", !base);
  for (Dtype d : models::gpu::kAllDtypes) {
    if (d == Dtype::fp32) continue;
    const std::string key(models::gpu::dtype_name(d));
    if (tensor.has(key)) {
      s.tensor_peak[static_cast<size_t>(d)] =
          tensor.get_flop_rate(key, std::nullopt, "dense tensor-core peak");
    } else {
      tensor.allow(key);  // absent: this GPU has no tensor path for the dtype
    }
  }
  tensor.finish();
  s.vector_fp32_peak = r.get_flop_rate("vector_fp32_peak", from(base, &GpuSpec::vector_fp32_peak),
                                       "FP32 non-tensor peak (FMA = 2 flops)");
  s.sfu_per_clock_per_sm = r.get_double(
      "sfu_per_clock_per_sm", s.sfu_per_clock_per_sm,
      "special-function results (exp2, log2, rsqrt, rcp) per SM per clock (CUDA guide: 16)");
  if (!(s.sfu_per_clock_per_sm > 0.0 && s.sfu_per_clock_per_sm <= 128.0)) {
    r.fail("sfu_per_clock_per_sm", "must be in (0, 128]");
  }

  ConfigReader hbm = r.child("hbm", "high-bandwidth memory", !base);
  s.hbm_bandwidth =
      hbm.get_bandwidth("bandwidth", from(base, &GpuSpec::hbm_bandwidth), "datasheet bandwidth");
  s.hbm_capacity = hbm.get_bytes("capacity", from(base, &GpuSpec::hbm_capacity), "capacity");
  if (s.hbm_capacity.count() <= 0) hbm.fail("capacity", "must be positive");
  hbm.finish();
  s.l2_size = r.get_bytes("l2", base ? base->l2_size : sim::Bytes(0), "L2 cache size (0 = unknown)");

  ConfigReader nvlink = r.child("nvlink", "scale-up links to the NVSwitch", !base);
  s.nvlink_bandwidth = nvlink.get_bandwidth("bandwidth", from(base, &GpuSpec::nvlink_bandwidth),
                                            "per GPU, each direction");
  s.nvlink_links = static_cast<int>(nvlink.get_int_in(
      "links", base ? std::optional<int64_t>(base->nvlink_links) : std::nullopt, "link count", 0,
      1'000));
  s.nvlink_latency =
      nvlink.get_duration("latency", from(base, &GpuSpec::nvlink_latency), "one-hop latency");
  s.has_nvls = nvlink.get_bool("nvls", base ? base->has_nvls : false,
                               "NVLink SHARP (in-switch reduction) available");
  nvlink.finish();
  ConfigReader pcie = r.child("pcie", "host link");
  s.pcie_bandwidth = pcie.get_bandwidth(
      "bandwidth", base ? base->pcie_bandwidth : sim::Bandwidth::gb_per_s(64), "each direction");
  pcie.finish();
  s.kernel_launch_latency = r.get_duration(
      "kernel_launch_latency", from(base, &GpuSpec::kernel_launch_latency),
      "launch to first tile, back-to-back launches on a stream");
  read_graph_launch_latency(r, s);
  read_launch_inside(r, s);
  s.graph_collective_overhead = r.get_duration(
      "graph_collective_overhead", base ? base->graph_collective_overhead : sim::Duration::zero(),
      "what an NCCL kernel node adds to a replayed CUDA graph beyond the collective's own time");
  if (s.graph_collective_overhead > models::gpu::kMaxGraphCollectiveOverhead) {
    r.fail("graph_collective_overhead",
           "graph_collective_overhead " + sim::format_duration(s.graph_collective_overhead) + " must be in [0, " +
               sim::format_duration(models::gpu::kMaxGraphCollectiveOverhead) +
               "]: it is a launch gap around one kernel node, measured at ~5 us on H100");
  }
  s.sm_bandwidth_headroom = r.get_double("sm_bandwidth_headroom", s.sm_bandwidth_headroom,
                                         "one SM's HBM reach as a multiple of its even share");
  if (!(s.sm_bandwidth_headroom >= 1.0)) r.fail("sm_bandwidth_headroom", "must be >= 1");
  if (r.has("sm_hbm_reach")) {
    s.sm_hbm_reach = r.get_bandwidth("sm_hbm_reach", std::nullopt, "one SM's own HBM reach (measured)");
    if (!(s.sm_hbm_reach->bytes_per_s() > 0.0 && *s.sm_hbm_reach <= s.hbm_bandwidth)) {
      r.fail("sm_hbm_reach", "sm_hbm_reach " + sim::format_bandwidth(*s.sm_hbm_reach) + " must be in (0, " +
                                 sim::format_bandwidth(s.hbm_bandwidth) +
                                 "]: one SM pulls at most the whole stack (an H100's SM reaches ~134 GB/s)");
    }
  }
  read_l2_bandwidth(r, s);
  s.persistent_gemm =
      r.get_bool("persistent_gemm", s.persistent_gemm,
                 "GEMMs keep the SMs they start on until they end (cuBLAS on Hopper and later)");
  read_attention_default(r, s);
  ConfigReader eff = r.child("efficiency", "achieved fractions of the peaks");
  read_efficiency(eff, s.efficiency);
  eff.finish();
  s.sustained_tensor_fraction = read_sustained_fraction(r, s.sustained_tensor_fraction);
  s.power = read_power_params(r, s.power);
  s.calibration = r.get_string("calibration", base ? base->calibration : std::string(),
                               "default calibration profile (a name in calibration/profiles/ or a "
                               "path), applied unless cluster.calibration names another or none");
  return s;
}

GpuSpec load_gpu_preset(const std::string& name, const ConfigReader& at, const std::string& key) {
  if (auto text = preset_text("hardware", name)) {
    const std::string origin = "configs/hardware/" + name + ".yaml";
    return read_spec_document(sim::config::load_yaml_text(*text, origin), origin);
  }
  if (name.size() > 5 && name.substr(name.size() - 5) == ".yaml") {
    std::string why;
    if (!sim::config::path_exists(name, &why)) {
      at.fail(key, "GPU preset file '" + name + "' not found" + sim::config::why_suffix(why));
    }
    ConfigSource src;
    YAML::Node root = sim::config::load_yaml_file(name, {}, src, "GPU preset");
    return read_spec_document(root, name);
  }
  const auto names = preset_names("hardware");
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  at.fail(key, "unknown GPU '" + name + "'" + sim::config::did_you_mean(name, names) +
                   "; presets: " + list + " (or a path to a .yaml preset)");
}

GpuSpec read_gpu(ConfigReader& cluster) {
  GpuSpec spec = read_gpu_uncalibrated(cluster);
  // The preset's default profile, unless cluster.calibration is given (a
  // profile or `none`: the scenario reads and applies it).
  if (!cluster.has("calibration") && !spec.calibration.empty()) {
    apply_calibration_profile(spec.calibration, spec, cluster);
  }
  return spec;
}

GpuSpec read_gpu_uncalibrated(ConfigReader& cluster) {
  YAML::Node node = cluster.raw("gpu", "GPU preset name, preset file, or inline spec");
  if (!node.IsDefined() || node.IsNull()) {
    cluster.fail_here("missing required key 'gpu' (a preset such as h100-sxm; see gcsim list gpus)");
  }
  if (node.IsScalar()) {
    // Read through get_string so the resolved config records the choice.
    const std::string name =
        cluster.get_string("gpu", std::nullopt, "GPU preset name, preset file, or inline spec");
    return load_gpu_preset(name, cluster, "gpu");
  }
  if (!node.IsMap()) cluster.fail("gpu", "expected a preset name or a map of GPU fields");
  ConfigReader r = cluster.child("gpu", "GPU preset name, preset file, or inline spec");
  std::optional<GpuSpec> base;
  if (r.has("preset")) {
    base = load_gpu_preset(r.get_string("preset", std::nullopt, "preset to start from"), r,
                           "preset");
  }
  GpuSpec spec = read_gpu_fields(r, base ? &*base : nullptr);
  r.get_string("description", std::string(), "one-line description");
  r.finish();
  return spec;
}

Json gpu_spec_json(const GpuSpec& s) {
  Json j = Json::object();
  j["name"] = s.name;
  j["source"] = s.source;
  j["sm_count"] = s.sm_count;
  j["sm_clock_ghz"] = s.sm_clock_ghz;
  Json tensor = Json::object();
  for (Dtype d : models::gpu::kAllDtypes) {
    if (s.tensor_peak_for(d).flops_per_s() > 0) {
      tensor[std::string(models::gpu::dtype_name(d))] = sim::format_flop_rate(s.tensor_peak_for(d));
    }
  }
  j["tensor_peak"] = tensor;
  j["vector_fp32_peak"] = sim::format_flop_rate(s.vector_fp32_peak);
  j["sfu_per_clock_per_sm"] = s.sfu_per_clock_per_sm;
  j["hbm"] = {{"bandwidth", sim::format_bandwidth(s.hbm_bandwidth)},
              {"capacity", sim::format_bytes(s.hbm_capacity)}};
  j["l2"] = sim::format_bytes(s.l2_size);
  j["nvlink"] = {{"bandwidth", sim::format_bandwidth(s.nvlink_bandwidth)},
                 {"links", s.nvlink_links},
                 {"latency", sim::format_duration(s.nvlink_latency)},
                 {"nvls", s.has_nvls}};
  j["pcie"] = {{"bandwidth", sim::format_bandwidth(s.pcie_bandwidth)}};
  j["kernel_launch_latency"] = sim::format_duration(s.kernel_launch_latency);
  if (s.graph_kernel_launch_latency) {
    j["graph_kernel_launch_latency"] = sim::format_duration(*s.graph_kernel_launch_latency);
  }
  if (s.launch_inside_kernel) j["launch_inside_kernel"] = sim::format_duration(*s.launch_inside_kernel);
  j["graph_collective_overhead"] = sim::format_duration(s.graph_collective_overhead);
  j["sm_bandwidth_headroom"] = s.sm_bandwidth_headroom;
  if (s.sm_hbm_reach) j["sm_hbm_reach"] = sim::format_bandwidth(*s.sm_hbm_reach);
  if (s.l2_bandwidth) j["l2_bandwidth"] = sim::format_bandwidth(*s.l2_bandwidth);
  j["persistent_gemm"] = s.persistent_gemm;
  j["sustained_tensor_fraction"] = s.sustained_tensor_fraction;
  if (s.power.enabled()) {
    const auto& p = s.power;
    j["power"] = {{"cap_w", p.cap_w},
                  {"idle_w", p.idle_w},
                  {"tensor_w", p.tensor_w},
                  {"vector_w", p.vector_w},
                  {"hbm_w", p.hbm_w},
                  {"min_voltage_ratio", p.min_voltage_ratio},
                  {"knee_fraction", p.knee_fraction},
                  {"min_clock_fraction", p.min_clock_fraction},
                  {"time_constant", sim::format_duration(p.time_constant)},
                  {"clock_bound_share", p.clock_bound_share},
                  {"memory_issue_share", p.memory_issue_share},
                  {"activity_hold", sim::format_duration(p.activity_hold)},
                  {"hbm_device_share", p.hbm_device_share},
                  {"fast_cap_w", p.fast_cap_w},
                  {"fast_time_constant", sim::format_duration(p.fast_time_constant)},
                  {"instant_cap_w", p.instant_cap_w},
                  {"instant_sustained_w", p.instant_sustained_w},
                  {"attention_tensor_share", p.attention_tensor_share}};
  }
  const auto& e = s.efficiency;
  Json eff_tensor = Json::object();
  for (Dtype d : models::gpu::kAllDtypes) {
    if (d != Dtype::fp32) eff_tensor[std::string(models::gpu::dtype_name(d))] = e.tensor_for(d);
  }
  j["efficiency"] = {{"tensor", eff_tensor},
                     {"vector", e.vector},
                     {"hbm", e.hbm},
                     {"attention", e.attention},
                     {"attention_backward", e.attention_backward},
                     {"row_reduction", e.row_reduction},
                     {"tile_overhead", sim::format_duration(e.tile_overhead)},
                     {"gemm_setup", sim::format_duration(e.gemm_setup)},
                     {"gemm_setup_per_cta", sim::format_duration(e.gemm_setup_per_cta)},
                     {"gemm_split_k_min_slice", e.gemm_split_k_min_slice},
                     {"attention_tile_overhead", sim::format_duration(e.attention_tile_overhead)},
                     {"attention_backward_tile_overhead",
                      sim::format_duration(e.attention_backward_tile_overhead)}};
  Json tiles = Json::object();
  for (size_t i = 0; i < std::size(models::gpu::kGemmTileCandidates); ++i) {
    const auto& t = models::gpu::kGemmTileCandidates[i];
    tiles[std::to_string(t.m) + "x" + std::to_string(t.n)] = e.gemm_tile[i];
  }
  j["efficiency"]["gemm_tile"] = tiles;
  j["efficiency"]["softmax"] = {{"warp_cycles_per_element", e.softmax.warp_cycles_per_element},
                                {"block_cycles_per_element", e.softmax.block_cycles_per_element},
                                {"multipass_reads", e.softmax.multipass_reads}};
  j["efficiency"]["attention_families"] = attention_families_json(e);
  j["attention_default"] = attention_default_json(s);
  j["calibration"] = s.calibration_applied;
  return j;
}

// Keys of a calibration profile that no model reads: fit statistics,
// held-out errors, provenance, raw data.
constexpr std::array<const char*, 5> kInformationalProfileKeys{"fit", "validation", "fit_errors",
                                                               "provenance", "measurements"};

std::optional<std::string> embedded_profile(const std::string& name) {
  // Profiles are embedded beside the presets (CMakeLists.txt), keyed by
  // their path relative to configs/.
  return preset_text("../calibration/profiles", name);
}

void apply_calibration_profile(const std::string& path, GpuSpec& spec, const ConfigReader& at) {
  if (path == "none") return;  // the preset's own efficiencies
  auto source = std::make_shared<ConfigSource>();
  YAML::Node root;
  if (auto text = embedded_profile(path)) {
    source->file = "calibration/profiles/" + path + ".yaml";
    // A built-in profile carries its raw measurements (~150 KB of YAML, ~40
    // ms to parse, most of a small config's load): parsed once per process,
    // kept without the informational keys, and copied for each use.
    static std::map<std::string, YAML::Node> parsed;
    auto it = parsed.find(path);
    if (it == parsed.end()) {
      YAML::Node full = sim::config::load_yaml_text(*text, source->file);
      for (const char* key : kInformationalProfileKeys) full.remove(key);
      it = parsed.emplace(path, full).first;
    }
    root = YAML::Clone(it->second);
  } else if (std::string why; sim::config::path_exists(path, &why)) {
    root = sim::config::load_yaml_file(path, {}, *source, "calibration profile");
  } else {
    at.fail("calibration", "calibration profile '" + path + "' not found" + sim::config::why_suffix(why) +
                               ": neither a built-in profile nor a file (make one with "
                               "`gcsim calibrate -o PROFILE.yaml`, or say `none`)");
  }
  Json ignored;
  ConfigReader r(root, "", source, &ignored);
  const std::string gpu = r.get_string("gpu", std::nullopt, "GPU preset the profile was measured on");
  if (gpu != spec.name) {
    r.fail("gpu", "profile was measured on '" + gpu + "' but the cluster uses '" + spec.name + "'");
  }
  r.get_string("measured_on", std::string(), "device name and date of the measurement");
  if (r.has("kernel_launch_latency")) {
    spec.kernel_launch_latency =
        r.get_duration("kernel_launch_latency", std::nullopt, "measured launch latency");
  }
  read_graph_launch_latency(r, spec);
  read_launch_inside(r, spec);
  if (r.has("sm_bandwidth_headroom")) {
    spec.sm_bandwidth_headroom = r.get_double("sm_bandwidth_headroom", std::nullopt,
                                              "fitted HBM reach of one SM (multiple of its share)");
    if (!(spec.sm_bandwidth_headroom >= 1.0)) r.fail("sm_bandwidth_headroom", "must be >= 1");
  }
  ConfigReader eff = r.child("efficiency", "fitted efficiencies", true);
  read_efficiency(eff, spec.efficiency);
  eff.finish();
  if (r.has("sustained_tensor_fraction")) {
    spec.sustained_tensor_fraction = read_sustained_fraction(r, spec.sustained_tensor_fraction);
  }
  for (const char* key : kInformationalProfileKeys) r.allow(key);
  r.finish();
  spec.calibration_applied = source->file;
}

}  // namespace gcsim::cli
