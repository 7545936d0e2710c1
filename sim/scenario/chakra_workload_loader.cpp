#include "sim/scenario/chakra_workload_loader.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "sim/report/format.h"
#include "sim/config/input_file.h"
#include "workloads/chakra/trace_file.h"
#include "workloads/chakra/trace_loader.h"

namespace gcsim::cli {

namespace fs = std::filesystem;
using sim::config::ConfigReader;
using workloads::chakra::ComputeTiming;
using workloads::chakra::ImportOptions;

namespace {

std::vector<int> group_from_json(const nlohmann::json& v, const std::string& file,
                                 const std::string& name) {
  if (!v.is_array()) throw std::invalid_argument(file + ": group '" + name + "' is not a list of ranks");
  std::vector<int> ranks;
  for (const auto& x : v) {
    if (!x.is_number_integer()) {
      throw std::invalid_argument(file + ": group '" + name + "' holds " + x.dump() + ", not a rank");
    }
    ranks.push_back(x.get<int>());
  }
  return ranks;
}

// A map written in the config, or ASTRA-sim's JSON file named by a string.
std::map<std::string, std::vector<int>> read_comm_groups(ConfigReader& w) {
  const char* doc =
      "pg_name -> ranks for collectives (ASTRA-sim's communicator groups), or the path of its "
      "JSON file; pg_name absent, empty or \"0\" means every rank";
  YAML::Node n = w.raw("comm_groups", doc);
  std::map<std::string, std::vector<int>> groups;
  if (!n.IsDefined() || n.IsNull()) return groups;
  if (n.IsScalar()) {
    const std::string file = w.get_path("comm_groups", std::nullopt, doc);
    std::string text, error;
    if (!sim::config::read_input_file(file, sim::config::kMaxDataBytes, "comm-group", text, error)) {
      w.fail("comm_groups", "cannot read the comm-group file '" + file + "': " + error);
    }
    try {
      const nlohmann::json j = nlohmann::json::parse(text);
      if (!j.is_object()) throw std::invalid_argument(file + ": expected an object of groups");
      for (const auto& [name, ranks] : j.items()) groups[name] = group_from_json(ranks, file, name);
    } catch (const nlohmann::json::exception& e) {
      w.fail("comm_groups", file + ": not valid JSON: " + e.what());
    } catch (const std::invalid_argument& e) {
      w.fail("comm_groups", e.what());
    }
    return groups;
  }
  if (!n.IsMap()) w.fail("comm_groups", "expected a map such as {\"1\": [0, 1, 2, 3]} or a file path");
  ConfigReader g = w.child("comm_groups", doc);
  for (const auto& kv : n) {
    const std::string name = kv.first.Scalar();
    const std::vector<int64_t> ranks = g.get_int_list(name, "ranks of this process group");
    for (int64_t r : ranks) {
      if (r < std::numeric_limits<int>::min() || r > std::numeric_limits<int>::max()) {
        g.fail(name, "rank " + std::to_string(r) + " is out of range");
      }
      groups[name].push_back(static_cast<int>(r));
    }
  }
  g.finish();
  return groups;
}

// A trace is loaded whole (README Status), ~6.7 bytes of memory per byte
// of ET file and one op per ~210 bytes (an 803 MB export of a Llama 3 8B
// step at 500 layers: 3.85M ops, 5.4 GB resident): refuse before reading
// what would not fit. Files of unknown size (devices) are read and fail
// on their content.
void check_trace_budget(ConfigReader& w, const std::string& prefix, int num_ranks,
                        const ResourceLimits& limits) {
  double bytes = 0;
  for (int r = 0; r < num_ranks; ++r) {
    std::error_code ec;
    const auto path = workloads::chakra::rank_file(prefix, r);
    if (std::filesystem::is_regular_file(path, ec)) {
      bytes += static_cast<double>(std::filesystem::file_size(path, ec));
    }
  }
  const double ops = bytes / kTraceBytesPerOp;
  ResourceEstimate e = ResourceEstimate::from_ops(ops, ops);
  e.memory_bytes = kBaseBytes + bytes * kBytesPerTraceByte;
  enforce(e, limits, w, "prefix",
          "the trace's " + std::to_string(num_ranks) + " files hold " + human_bytes(bytes) +
              " (about " + fmt("%.3g", ops) + " ops)",
          "Replay fewer ranks or a shorter trace");
}

}  // namespace

std::unique_ptr<workloads::WorkloadGraph> load_chakra_workload(ConfigReader& w, int num_ranks,
                                                               const models::gpu::GpuSpec& gpu,
                                                               std::vector<std::string>& notes,
                                                               const ResourceLimits& limits) {
  const std::string prefix = w.get_path(
      "prefix", std::nullopt, "trace files PREFIX.<rank>.et, one per GPU (relative to this config)");
  ImportOptions options;
  options.num_ranks = num_ranks;
  options.gpu = gpu;
  options.compute =
      w.get_choice("compute", {"trace", "model"}, std::string("trace"),
                   "trace: COMP nodes last their recorded duration; model: the GPU model times "
                   "them from their gcsim kernel shape or num_ops and tensor_size") == "model"
          ? ComputeTiming::model
          : ComputeTiming::trace;
  options.comm_groups = read_comm_groups(w);
  check_trace_budget(w, prefix, num_ranks, limits);
  workloads::chakra::LoadedTrace trace;
  try {
    trace = workloads::chakra::load_trace(prefix, options);
  } catch (const workloads::chakra::TraceError& e) {
    w.fail("prefix", e.what());
  } catch (const std::invalid_argument& e) {
    w.fail("comm_groups", e.what());
  }
  const auto& st = trace.stats;
  notes.push_back("chakra trace " + prefix + ".*.et (schema " +
                  (trace.version.empty() ? std::string("unversioned") : trace.version) + "): " +
                  std::to_string(st.nodes) + " nodes; compute timed by " +
                  std::to_string(st.recorded_duration) + " recorded durations, " +
                  std::to_string(st.kernel_shape) + " GPU-model kernels, " +
                  std::to_string(st.roofline) + " roofline kernels (alone on the GPU)");
  return std::move(trace.graph);
}

}  // namespace gcsim::cli
