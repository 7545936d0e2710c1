#include "sim/cli/calibrate_collectives.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "calibration/fit/collective_fit.h"
#include "sim/scenario/gpu_spec_loader.h"
#include "sim/config/config_reader.h"
#include "sim/config/input_file.h"

namespace gcsim::cli {

namespace {

constexpr int kBadInput = 2;

std::string pct(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f%%", 100 * v);
  return b;
}

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.4f", v);
  return b;
}

// "2" or "2,4" -> {2, 4}; empty on a malformed list.
std::set<int> parse_groups(const std::string& s) {
  std::set<int> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos ||
        item.size() > 6) {
      return {};
    }
    const int n = std::stoi(item);
    if (n < 2) return {};
    out.insert(n);
  }
  return out;
}

// The preset a sweep ran on, from meta.device_name ("NVIDIA H100 80GB HBM3").
std::string preset_of_sweep(const std::string& path) {
  std::string body, error;
  if (!sim::config::read_input_file(path, sim::config::kMaxDataBytes, "NCCL sweep", body, error)) {
    return "";
  }
  const auto d = nlohmann::json::parse(body, nullptr, false);
  if (!d.is_object() || !d.contains("meta") || !d["meta"].is_object()) return "";
  const std::string name = d["meta"].value("device_name", "");
  if (name.find("H100") != std::string::npos) return "h100-sxm";
  if (name.find("H200") != std::string::npos) return "h200-sxm";
  return "";
}

models::gpu::GpuSpec preset(const std::string& name) {
  auto source = std::make_shared<sim::config::ConfigSource>();
  source->file = "--gpu";
  sim::config::ConfigReader at(YAML::Node(), "", source, nullptr);
  return load_gpu_preset(name, at, "gpu");
}

nlohmann::json errors_json(const std::vector<calibration::SeriesError>& v) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& e : v) {
    a.push_back({{"series", e.series},
                 {"ranks", e.ranks},
                 {"busbw_points", e.bw_points},
                 {"busbw_median_error", e.bw_median},
                 {"busbw_max_error", e.bw_max},
                 {"latency_points", e.lat_points},
                 {"latency_median_error", e.lat_median},
                 {"latency_max_error", e.lat_max}});
  }
  return a;
}

}  // namespace

int calibrate_collectives(const CollectiveCalibration& c, std::ostream& out, std::ostream& err) {
  const std::set<int> groups = parse_groups(c.fit_groups);
  if (groups.empty()) {
    err << "gcsim calibrate: --fit-groups '" << c.fit_groups
        << "': expected group sizes of at least 2 GPUs, comma-separated (e.g. 2 or 2,3)\n";
    return kBadInput;
  }
  std::vector<calibration::NcclMeasurement> all;
  try {
    for (const auto& f : c.files) {
      for (auto& m : calibration::load_nccl_sweep(f)) all.push_back(std::move(m));
    }
  } catch (const calibration::NcclSweepError& e) {
    err << "gcsim calibrate: " << e.what() << "\n";
    return kBadInput;
  }
  std::string gpu_name = c.gpu;
  if (gpu_name.empty()) {
    for (const auto& f : c.files) {
      gpu_name = preset_of_sweep(f);
      if (!gpu_name.empty()) break;
    }
  }
  if (gpu_name.empty()) {
    err << "gcsim calibrate: " << c.files.front()
        << ": key 'meta.device_name' names no H100 or H200; name the preset with --gpu\n";
    return kBadInput;
  }
  const models::gpu::GpuSpec gpu = preset(gpu_name);  // an unknown name: ConfigError, exit 2

  std::vector<calibration::NcclMeasurement> fit_points;
  std::set<int> held;
  for (const auto& m : all) {
    if (groups.count(m.ranks)) {
      fit_points.push_back(m);
    } else {
      held.insert(m.ranks);
    }
  }
  if (fit_points.empty()) {
    err << "gcsim calibrate: no measurement on " << c.fit_groups << " GPUs in "
        << c.files.front() << " (--fit-groups names group sizes the sweep holds)\n";
    return kBadInput;
  }
  std::error_code ec;
  std::filesystem::create_directories(c.out_dir, ec);
  if (ec || !std::filesystem::is_directory(c.out_dir)) {
    err << "gcsim calibrate: -o " << c.out_dir << ": cannot create the directory\n";
    return kBadInput;
  }

  out << "fitting the collective model (" << gpu.name << ") to " << fit_points.size()
      << " points on " << c.fit_groups << " GPUs ...\n"
      << std::flush;
  const calibration::CollectiveFit fit = calibration::fit_collective_params(
      fit_points, gpu, calibration::fit_start(gpu),
      c.iterations > 0 ? c.iterations : calibration::kFitIterations);
  models::collectives::CollectiveParams p = fit.params;
  p.source = "gcsim calibrate --collectives, fitted on " + c.fit_groups + " GPUs";

  std::vector<calibration::SeriesError> fitted_err, held_err;
  for (int n : groups) {
    for (auto& e : calibration::series_errors(p, gpu, all, n)) fitted_err.push_back(e);
  }
  for (int n : held) {
    for (auto& e : calibration::series_errors(p, gpu, all, n)) held_err.push_back(e);
  }
  const auto bad = calibration::out_of_range(p);

  std::ostringstream md;
  md << "# Collective fit (" << gpu.name << ")\n\n"
     << "Fitted on " << c.fit_groups << " GPUs: " << fit.points << " points, rms log error "
     << num(fit.rms_log_error) << " (" << fit.evaluations << " model evaluations). Files:";
  for (const auto& f : c.files) md << " `" << f << "`";
  md << ".\n\nbusbw error: |predicted / measured busbw - 1| for messages >= 1 MiB; latency "
        "error: |predicted / measured time - 1| for 8 B - 64 KiB; NCCL's own choices, "
        "outliers left out.\n\n## Held out\n\n";
  auto table = [&](const std::vector<calibration::SeriesError>& v) {
    md << "| op | GPUs | busbw points | median | worst | latency points | median | worst |\n"
          "|---|---:|---:|---:|---:|---:|---:|---:|\n";
    for (const auto& e : v) {
      md << "| " << e.series << " | " << e.ranks << " | " << e.bw_points << " | "
         << pct(e.bw_median) << " | " << pct(e.bw_max) << " | " << e.lat_points << " | "
         << pct(e.lat_median) << " | " << pct(e.lat_max) << " |\n";
    }
  };
  if (held_err.empty()) {
    md << "No other group size in the files: nothing is held out.\n";
  } else {
    table(held_err);
    md << "\nPooled busbw median:";
    for (int n : held) md << " " << n << " GPUs " << pct(calibration::pooled_bw_median(p, gpu, all, n)) << ";";
    md << "\n";
  }
  md << "\n## Fitted group sizes\n\n";
  table(fitted_err);
  md << "\n## Parameters\n\n| field | value | physical range |\n|---|---:|---|\n";
  for (const auto& v : calibration::fitted_values(p)) {
    md << "| " << v.range.name << " | " << v.value << " | [" << v.range.lo << ", " << v.range.hi
       << "] |\n";
  }
  md << "\nAs C++ (models/collectives/fitted_params.cpp):\n\n```cpp\n"
     << calibration::fitted_fields_cpp(p) << "```\n";
  for (const auto& b : bad) md << "\nOUT OF RANGE: " << b << "\n";

  nlohmann::json j;
  j["schema"] = "gcsim.collective_fit.v1";
  j["gpu"] = gpu.name;
  j["files"] = c.files;
  j["fit_groups"] = std::vector<int>(groups.begin(), groups.end());
  j["held_out_groups"] = std::vector<int>(held.begin(), held.end());
  j["fit"] = {{"points", fit.points},
              {"rms_log_error", fit.rms_log_error},
              {"evaluations", fit.evaluations}};
  nlohmann::json params = nlohmann::json::array();
  for (const auto& v : calibration::fitted_values(p)) {
    params.push_back({{"name", v.range.name}, {"value", v.value}, {"lo", v.range.lo},
                      {"hi", v.range.hi}});
  }
  j["parameters"] = params;
  j["out_of_range"] = bad;
  j["held_out"] = errors_json(held_err);
  j["fitted"] = errors_json(fitted_err);
  nlohmann::json pooled = nlohmann::json::object();
  for (int n : held) pooled[std::to_string(n)] = calibration::pooled_bw_median(p, gpu, all, n);
  j["held_out_pooled_busbw_median_error"] = pooled;

  const auto md_path = std::filesystem::path(c.out_dir) / "collective_fit.md";
  const auto json_path = std::filesystem::path(c.out_dir) / "collective_fit.json";
  std::ofstream(md_path) << md.str();
  std::ofstream(json_path) << j.dump(1) << "\n";
  if (!std::ifstream(md_path) || !std::ifstream(json_path)) {
    err << "gcsim calibrate: cannot write into " << c.out_dir << "\n";
    return kBadInput;
  }
  out << "rms log error " << num(fit.rms_log_error) << " over " << fit.points
      << " fitted points; held out:\n";
  for (const auto& e : held_err) {
    out << "  " << e.series << " on " << e.ranks << " GPUs: busbw median " << pct(e.bw_median)
        << " (worst " << pct(e.bw_max) << "), latency median " << pct(e.lat_median) << "\n";
  }
  if (held_err.empty()) out << "  (no other group size in the files)\n";
  out << "wrote " << md_path.string() << " and " << json_path.string() << "\n";
  return bad.empty() ? 0 : 1;  // the fit keeps every value in range: outside is a bug
}

}  // namespace gcsim::cli
