#include "sim/cli/calibrate_command.h"

#include <sys/wait.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "calibration/fit/kernel_grid_fit.h"
#include "calibration/fit/measurements.h"
#include "calibration/fit/power_activity.h"
#include "calibration/fit/profile_fit.h"
#include "calibration/fit/profile_writer.h"
#include "calibration/fit/validation.h"
#include "sim/cli/calibrate_collectives.h"
#include "sim/cli/calibrate_host.h"
#include "sim/scenario/gpu_spec_loader.h"
#include "sim/cli/usage.h"
#include "sim/config/config_error.h"

namespace gcsim::cli {

namespace po = boost::program_options;
namespace fs = std::filesystem;
using namespace gcsim::calibration;

namespace {

constexpr int kBadInput = 2;
constexpr int kBenchNoDevice = 3;  // gcsim_microbench's "no CUDA device"

// The calibrate forms, as `gcsim calibrate --help` prints them.
std::string usage() { return usage_lines(*find_command_help("calibrate")); }

models::gpu::GpuSpec preset(const std::string& name) {
  auto source = std::make_shared<sim::config::ConfigSource>();
  source->file = "--gpu";
  sim::config::ConfigReader at(YAML::Node(), "", source, nullptr);
  return load_gpu_preset(name, at, "gpu");
}

// The preset a measurement was taken on, from the device name it recorded.
std::string preset_for_device(const MeasurementSet& set) {
  for (const auto& p : set.provenance) {
    const std::string d = p.value("device_name", "");
    if (d.find("H100") != std::string::npos) return "h100-sxm";
    if (d.find("H200") != std::string::npos) return "h200-sxm";
    if (d.find("A100") != std::string::npos) return "a100-sxm-80gb";
    if (d.find("B200") != std::string::npos) return "b200";
  }
  return "";
}

std::string self_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

// Fits on a kernel_grid.py run what the least squares has no column for
// (kernel_grid_fit.h) into `spec`, with a note for each; false (and the
// message) when the file cannot be read.
bool fit_kernel_grid(const std::string& path, models::gpu::GpuSpec& spec, std::vector<std::string>& notes,
                     std::ostream& err) {
  MeasurementSet grid;
  try {
    grid = load_measurements({path});
  } catch (const std::runtime_error& e) {
    err << "gcsim calibrate: --kernel-grid " << e.what() << "\n";
    return false;
  }
  std::vector<const Measurement*> gemms, softmax;
  for (const auto& m : grid.items) {
    if (m.excluded.empty() && in_gemm_fit_half(m)) gemms.push_back(&m);
    if (in_softmax_fit_half(m)) softmax.push_back(&m);
  }
  if (gemms.empty() || softmax.empty()) {
    err << "gcsim calibrate: --kernel-grid " << path
        << ": no 7^3 grid GEMMs or no eager softmax forward (not a kernel_grid.py run)\n";
    return false;
  }
  const GemmFixedCostFit g = fit_gemm_fixed_cost(spec, gemms);
  spec.efficiency.gemm_setup = g.setup;
  spec.efficiency.gemm_setup_per_cta = g.setup_per_cta;
  spec.efficiency.gemm_split_k_min_slice = g.split_k_min_slice;
  const SoftmaxFit f = fit_eager_softmax(spec, softmax);
  spec.efficiency.softmax = f.params;
  std::ostringstream gn, sn;
  gn << "gemm_setup, gemm_setup_per_cta, gemm_split_k_min_slice: fitted apart on "
     << fs::path(path).filename().string() << " (kernel_grid_fit.h), the 7^3 grid's even-index half ("
     << g.cases << " GEMMs, mean |error| " << 100 * g.mean_abs_error << "%)";
  sn << "softmax: fitted apart on its eager softmax forward (" << f.cases << " points, mean |error| "
     << 100 * f.mean_abs_error << "%), log_softmax held out";
  notes.push_back(gn.str());
  notes.push_back(sn.str());
  return true;
}

// --measured-fixed-costs: a kernel's fixed costs split as the runs measured
// them (the kernel grid's stream gap, serving_kernels_bench.py's empty
// kernel and its decode steps' graph gaps), or nullopt (and a message naming
// what is missing).
struct SplitFixedCosts {
  MeasuredFixedCosts stream;
  double graph_gap_us = 0;
  size_t gemms = 0;  // the grid's GEMMs the stream gap is the median of
};
std::optional<SplitFixedCosts> measured_split(const MeasurementSet& set, const std::string& kernel_grid,
                                              std::ostream& err) {
  const char* what = "gcsim calibrate: --measured-fixed-costs needs ";
  if (kernel_grid.empty()) {
    err << what << "--kernel-grid (a kernel_grid.py run: its GEMMs' gaps between kernels)\n";
    return std::nullopt;
  }
  const MeasurementSet grid = load_measurements({kernel_grid});
  const std::optional<double> gap = measured_stream_gap_us(grid);
  const std::optional<double> graph_gap = measured_graph_gap_us(set);
  if (!gap) {
    err << what << "a kernel grid whose GEMMs carry profiled durations; " << kernel_grid << " has none\n";
    return std::nullopt;
  }
  if (!graph_gap || !(set.empty_kernel_duration_us > 0)) {
    err << what << "a serving_kernels_bench.py run among the --fit files (its 1-element kernel and its "
        << "decode steps' graph profiles)\n";
    return std::nullopt;
  }
  SplitFixedCosts split;
  split.stream.launch_us = gap;
  split.stream.overhead_us = set.empty_kernel_duration_us;
  split.graph_gap_us = *graph_gap;
  split.gemms = grid.stream_gaps_us.size();
  return split;
}

int fit_and_write(const std::vector<std::string>& files, const std::string& kernel_grid, std::string gpu,
                  bool measured_fixed_costs, const std::string& out_path, const std::string& command,
                  std::ostream& out, std::ostream& err) {
  MeasurementSet set;
  try {
    set = load_measurements(files);
  } catch (const std::runtime_error& e) {
    err << "gcsim calibrate: " << e.what() << "\n";
    return kBadInput;
  }
  if (gpu.empty()) gpu = preset_for_device(set);
  if (gpu.empty()) {
    err << "gcsim calibrate: cannot tell which preset the measurements are of; name it with --gpu\n";
    return kBadInput;
  }
  const models::gpu::GpuSpec base = preset(gpu);
  const std::vector<Split> splits = split_measurements(set);
  std::vector<const Measurement*> cases;
  for (size_t i = 0; i < set.items.size(); ++i) {
    if (splits[i] == Split::fit) cases.push_back(&set.items[i]);
  }
  if (cases.empty()) {
    err << "gcsim calibrate: no usable measurement in " << files.front() << "\n";
    return kBadInput;
  }
  std::optional<SplitFixedCosts> split;
  if (measured_fixed_costs) {
    try {
      split = measured_split(set, kernel_grid, err);
    } catch (const std::runtime_error& e) {
      err << "gcsim calibrate: --kernel-grid " << e.what() << "\n";
      return kBadInput;
    }
    if (!split) return kBadInput;
  }
  FitResult fit = fit_profile(base, cases, split ? split->stream : MeasuredFixedCosts{});
  if (split) {
    std::ostringstream n;
    n << "kernel_launch_latency, tile_overhead, graph_kernel_launch_latency: measured apart "
      << "(--measured-fixed-costs), not fitted: the median gap between " << split->gemms
      << " back-to-back one-kernel GEMMs under 10 us of " << fs::path(kernel_grid).filename().string()
      << " (spacing - profiled duration), a 1-element kernel's profiled duration on a stream and the "
      << "decode steps' median gap between graph nodes (serving_kernels_bench.py)";
    fit.notes.push_back(n.str());
  }
  round_for_profile(fit.spec);
  if (!kernel_grid.empty() && !fit_kernel_grid(kernel_grid, fit.spec, fit.notes, err)) return kBadInput;
  round_for_profile(fit.spec);
  if (split) {
    // A graph node waits the measured gap.
    fit.spec.graph_kernel_launch_latency = graph_launch_latency_of(fit.spec, split->graph_gap_us);
  } else {
    // A graph node's latency is the fitted stream latency less the measured saving.
    fit.spec.graph_kernel_launch_latency = fit_graph_launch_latency(fit.spec, set);
  }
  fit.spec.launch_inside_kernel = fit_launch_inside_kernel(fit.spec, set);
  ProfileContent content;
  content.command = command;
  content.fit = &fit;
  content.set = &set;
  content.splits = &splits;
  content.heldout = class_errors(fit.spec, set, splits, Split::heldout);
  content.fitted = class_errors(fit.spec, set, splits, Split::fit);
  {
    std::ofstream f(out_path);
    f << profile_yaml(content);
    if (!f) {
      err << "gcsim calibrate: cannot write " << out_path << "\n";
      return kBadInput;
    }
  }
  out << "fitted " << cases.size() << " cases of " << set.items.size() << " (" << gpu
      << "), weighted rms error " << 100 * fit.rms_relative_error << "%; wrote " << out_path << "\n"
      << "held-out cases:\n"
      << error_table(content.heldout);
  for (const auto& n : fit.notes) out << "note: " << n << "\n";
  if (!kernel_grid.empty()) {
    // The grid's classes at the written profile: the 7^3 grid's even-index
    // half and the softmax (not log_softmax) forward are fitted, the rest
    // held out (kernel_grid_fit.h).
    out << "kernel grid " << fs::path(kernel_grid).filename().string()
        << " per class (fitted: the 7^3 grid's even-index half, softmax forward; the rest held out):\n";
    const MeasurementSet grid = load_measurements({kernel_grid});
    for (const auto& [cls, e] : kernel_grid_class_errors(fit.spec, grid)) {
      char line[160];
      std::snprintf(line, sizeof line, "  %-30s n %3d  mean |error| %5.1f%%  bias %+5.1f%%  max %5.1f%%\n",
                    cls.c_str(), e.n, 100 * e.mean, 100 * e.bias, 100 * e.max);
      out << line;
    }
  }
  return 0;
}

int validate(const std::string& path, std::ostream& out, std::ostream& err) {
  // The profile is read like any config (size cap, strict YAML, file/line/key
  // errors that main() turns into exit status 2).
  auto source = std::make_shared<sim::config::ConfigSource>();
  YAML::Node root = sim::config::load_yaml_file(path, {}, *source, "calibration profile");
  sim::config::Json ignored;
  sim::config::ConfigReader r(root, "", source, &ignored);
  if (!r.has("gpu")) {
    r.fail_here("no 'gpu' key: not a calibration profile (gcsim calibrate -o writes one)");
  }
  const std::string gpu = r.get_string("gpu", std::nullopt, "GPU preset the profile was measured on");
  models::gpu::GpuSpec spec = load_gpu_preset(gpu, r, "gpu");
  apply_calibration_profile(path, spec, r);
  std::vector<Split> splits;
  MeasurementSet set;
  try {
    set = measurements_in_profile(root, splits);
  } catch (const std::runtime_error& e) {
    err << "gcsim calibrate: " << path << ": " << e.what() << "\n";
    return kBadInput;
  } catch (const nlohmann::json::exception& e) {
    err << "gcsim calibrate: " << path << ": key 'measurements': not as gcsim calibrate writes it ("
        << e.what() << ")\n";
    return kBadInput;
  }
  out << "profile " << path << " (" << spec.name << ", " << set.items.size() << " measurements)\n"
      << "held-out cases:\n"
      << error_table(class_errors(spec, set, splits, Split::heldout)) << "fitted cases:\n"
      << error_table(class_errors(spec, set, splits, Split::fit));
  return 0;
}

int measure(const std::string& bench_arg, bool quick, const std::string& gpu,
            const std::string& out_path, std::ostream& out, std::ostream& err) {
  const std::string bench = bench_arg.empty() ? self_dir() + "/gcsim_microbench" : bench_arg;
  if (!fs::exists(bench)) {
    err << "gcsim calibrate: no GPU benchmark here: " << bench
        << " does not exist (gcsim was built without the CUDA toolkit), so this machine's GPU "
           "cannot be measured. Build with the CUDA toolkit on a machine with a GPU, or fit "
           "committed measurements: gcsim calibrate --fit "
           "calibration/measurements/h100-sxm/microbench_2026-11-22.json -o PROFILE.yaml\n";
    return kBadInput;
  }
  const std::string data = out_path + ".measurements.json";
  out << "measuring with " << bench << " (about a minute on an H100) ...\n" << std::flush;
  const pid_t pid = fork();
  if (pid == 0) {
    if (quick) {
      execl(bench.c_str(), bench.c_str(), "-o", data.c_str(), "--quick", static_cast<char*>(nullptr));
    } else {
      execl(bench.c_str(), bench.c_str(), "-o", data.c_str(), static_cast<char*>(nullptr));
    }
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status)) {
    err << "gcsim calibrate: could not run " << bench << "\n";
    return 1;
  }
  if (WEXITSTATUS(status) == kBenchNoDevice) {
    err << "gcsim calibrate: no CUDA GPU on this machine (gcsim_microbench found none); "
           "calibrate needs one. Fit committed measurements with --fit instead.\n";
    return kBadInput;
  }
  if (WEXITSTATUS(status) != 0) {
    err << "gcsim calibrate: " << bench << " failed with exit status " << WEXITSTATUS(status)
        << "; its partial results are in " << data << "\n";
    return 1;
  }
  return fit_and_write({data}, "", gpu, false, out_path, "gcsim calibrate -o " + out_path, out, err);
}

// --power-activity: the table calibration/fit/power_fit.py fits with.
int power_activity(const po::variables_map& vm, const std::string& gpu, std::ostream& out, std::ostream& err) {
  if (gpu.empty()) {
    err << "gcsim calibrate: --power-activity needs --gpu PRESET\n" << usage();
    return kBadInput;
  }
  // The spec as a run uses it: the preset and its default calibration profile.
  models::gpu::GpuSpec spec = preset(gpu);
  if (!spec.calibration.empty()) {
    auto source = std::make_shared<sim::config::ConfigSource>();
    source->file = "--gpu";
    apply_calibration_profile(spec.calibration, spec, sim::config::ConfigReader(YAML::Node(), "", source, nullptr));
  }
  if (!spec.power.enabled()) {
    err << "gcsim calibrate: --gpu " << gpu << ": the preset has no power: block (no power model)\n";
    return kBadInput;
  }
  if (vm.count("clock-bound-share")) {
    const double s = vm["clock-bound-share"].as<double>();
    if (!models::gpu::kClockShareRange.holds(s)) {
      err << "gcsim calibrate: --clock-bound-share " << s << " lies outside its physical range ["
          << models::gpu::kClockShareRange.lo << ", " << models::gpu::kClockShareRange.hi << "]\n";
      return kBadInput;
    }
    spec.power.clock_bound_share = s;
  }
  out << power_activity_table(spec).dump(1) << "\n";
  return 0;
}

}  // namespace

int calibrate_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description opts("calibrate options");
  opts.add_options()("out,o", po::value<std::string>(), "profile to write")(
      "fit", po::value<std::vector<std::string>>(), "measurement file (repeatable)")(
      "kernel-grid", po::value<std::string>(), "with --fit: kernel_grid.py run for the terms fitted apart")(
      "measured-fixed-costs", po::bool_switch(),
      "with --fit and --kernel-grid: launch gap, empty kernel and graph gap as measured, not fitted")(
      "validate", po::value<std::string>(), "profile to validate")(
      "gpu", po::value<std::string>(), "preset the measurements are of")(
      "bench", po::value<std::string>(), "path of gcsim_microbench")(
      "quick", po::bool_switch(), "a few cases only (smoke test)")(
      "collectives", po::value<std::vector<std::string>>(), "NCCL sweep to fit (repeatable)")(
      "fit-groups", po::value<std::string>()->default_value("2"), "group sizes to fit on")(
      "iterations", po::value<int>()->default_value(0), "Nelder-Mead iterations per restart")(
      "power-activity", po::bool_switch(), "print the runtime's activity of the power bench's kernels")(
      "clock-bound-share", po::value<double>(), "with --power-activity: the share to stretch arithmetic by")(
      "host-fit", po::value<std::string>(), "eager_host_bench.py output to fit a host profile to")(
      "host-run", po::value<std::string>(), "with --host-fit: the run (tag) to fit");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(opts).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    err << "gcsim calibrate: " << e.what() << "\n" << usage();
    return kBadInput;
  }
  const std::string gpu = vm.count("gpu") ? vm["gpu"].as<std::string>() : "";
  if (vm.count("validate")) return validate(vm["validate"].as<std::string>(), out, err);
  if (vm["power-activity"].as<bool>()) return power_activity(vm, gpu, out, err);
  if (vm.count("host-run") && !vm.count("host-fit")) {
    err << "gcsim calibrate: --host-run goes with --host-fit\n" << usage();
    return kBadInput;
  }
  if (!vm.count("out")) {
    err << "gcsim calibrate: " << (vm.count("collectives") ? "-o DIR" : "-o PROFILE.yaml")
        << " is required\n"
        << usage();
    return kBadInput;
  }
  const std::string out_path = vm["out"].as<std::string>();
  if (vm.count("host-fit")) {
    if (vm.count("collectives") || vm.count("fit")) {
      err << "gcsim calibrate: --host-fit is a fit of its own; give it without --fit or --collectives\n"
          << usage();
      return kBadInput;
    }
    return calibrate_host(vm["host-fit"].as<std::string>(),
                          vm.count("host-run") ? vm["host-run"].as<std::string>() : "", out_path, out, err);
  }
  if (vm.count("collectives")) {
    if (vm.count("fit")) {
      err << "gcsim calibrate: --collectives and --fit are separate fits; give one\n" << usage();
      return kBadInput;
    }
    CollectiveCalibration c{vm["collectives"].as<std::vector<std::string>>(),
                            vm["fit-groups"].as<std::string>(), gpu, out_path,
                            vm["iterations"].as<int>()};
    if (c.iterations < 0) {
      err << "gcsim calibrate: --iterations must be positive\n" << usage();
      return kBadInput;
    }
    return calibrate_collectives(c, out, err);
  }
  if (vm.count("fit")) {
    const auto files = vm["fit"].as<std::vector<std::string>>();
    std::string command = "gcsim calibrate";
    const std::string grid = vm.count("kernel-grid") ? vm["kernel-grid"].as<std::string>() : "";
    for (const auto& f : files) command += " --fit " + f;
    if (!grid.empty()) command += " --kernel-grid " + grid;
    const bool split = vm["measured-fixed-costs"].as<bool>();
    if (split) command += " --measured-fixed-costs";
    command += (gpu.empty() ? "" : " --gpu " + gpu) + " -o " + out_path;
    return fit_and_write(files, grid, gpu, split, out_path, command, out, err);
  }
  return measure(vm.count("bench") ? vm["bench"].as<std::string>() : "", vm["quick"].as<bool>(), gpu,
                 out_path, out, err);
}

}  // namespace gcsim::cli
