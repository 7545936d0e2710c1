#include "sim/cli/calibrate_host.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "calibration/fit/host_fit.h"
#include "sim/config/input_file.h"
#include "sim/report/format.h"

namespace gcsim::cli {

namespace {
constexpr int kBadInput = 2;
}

int calibrate_host(const std::string& bench_file, const std::string& run_tag, const std::string& out_path,
                   std::ostream& out, std::ostream& err) {
  std::string text, error;
  if (!sim::config::read_input_file(bench_file, sim::config::kMaxDataBytes, "host bench", text, error)) {
    err << "gcsim calibrate: " << bench_file << ": " << error << "\n";
    return kBadInput;
  }
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    err << "gcsim calibrate: " << bench_file << ": not JSON (" << e.what() << ")\n";
    return kBadInput;
  }
  calibration::HostFit fit;
  try {
    fit = calibration::fit_host_bench(doc, run_tag);
  } catch (const calibration::HostFitError& e) {
    err << "gcsim calibrate: " << bench_file << ": " << e.what() << "\n";
    return kBadInput;
  }
  const std::string command = "gcsim calibrate --host-fit " + bench_file +
                              (run_tag.empty() ? "" : " --host-run " + run_tag) + " -o " + out_path;
  {
    std::ofstream f(out_path);
    f << calibration::host_profile_yaml(fit, command);
    if (!f) {
      err << "gcsim calibrate: cannot write " << out_path << "\n";
      return kBadInput;
    }
  }
  const auto& c = fit.cost;
  out << "host profile from " << fit.blocks << " blocks x " << fit.ranks << " ranks (" << fit.measured_on
      << "); wrote " << out_path << "\n"
      << fmt("  router %.1f us", c.router_us) << fmt(", permute %.1f", c.permute_us)
      << fmt(", launch %.1f", c.launch_us) << fmt(", nccl %.1f", c.collective_us) << fmt(", sync %.1f\n", c.sync_us)
      << fmt("  expert %.1f us per call", c.expert_us) << fmt(", loop fixed %.1f", c.loop_fwd_us)
      << fmt(" / %.1f us per forward / backward", c.loop_bwd_us) << fmt(", slowest_rank %.3f\n", c.slowest_rank)
      << "use it with cluster.host: " << out_path << "\n";
  return 0;
}

}  // namespace gcsim::cli
