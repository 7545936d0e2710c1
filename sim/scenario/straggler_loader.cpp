#include "sim/scenario/straggler_loader.h"

#include <algorithm>

#include "sim/report/format.h"

namespace gcsim::cli {

using sim::config::ConfigReader;

namespace {

// A straggler runs at least a millionth of its nominal rate: below that its
// kernels' times leave the int64 picosecond clock (1e-300 overflowed in the
// GPU model), and such a GPU is failed, not slow.
constexpr double kMinSpeed = 1e-6;

double read_factor(ConfigReader& r, const std::string& key, const char* doc) {
  const double f = r.get_double(key, 1.0, doc);
  if (!(f >= kMinSpeed && f <= 1.0)) {
    r.fail(key, "must lie in [1e-06, 1] (a share of the nominal rate; a failed GPU is a failure, "
                "not a straggler), got " + fmt("%g", f));
  }
  return f;
}

std::string percent(double f) { return fmt("%g%%", f * 100.0); }

}  // namespace

std::vector<StragglerConfig> read_stragglers(ConfigReader& cluster, int nodes, int gpus_per_node) {
  const char* doc =
      "GPUs slower than their peers without failing: {rank, speed, memory_speed} or {node, gpu, "
      "speed, memory_speed}";
  std::vector<StragglerConfig> out;
  if (!cluster.has("stragglers")) {
    cluster.raw("stragglers", doc);  // known and documented, even when absent
    return out;
  }
  const int gpus = nodes * gpus_per_node;
  for (ConfigReader& r : cluster.child_list("stragglers", doc)) {
    StragglerConfig s;
    if (r.has("rank") && (r.has("node") || r.has("gpu"))) {
      r.fail("rank", "give either rank or node and gpu, not both");
    }
    if (r.has("rank") || !(r.has("node") || r.has("gpu"))) {
      const int64_t rank = r.get_int("rank", std::nullopt, "global rank of the slow GPU");
      if (rank < 0 || rank >= gpus) {
        r.fail("rank", "rank " + std::to_string(rank) + " is outside the cluster's " +
                           std::to_string(gpus) + " GPUs (0 to " + std::to_string(gpus - 1) + ")");
      }
      s.rank = static_cast<int>(rank);
    } else {
      const int64_t node = r.get_int("node", std::nullopt, "node of the slow GPU");
      if (node < 0 || node >= nodes) {
        r.fail("node", "node " + std::to_string(node) + " is outside the cluster's " +
                           std::to_string(nodes) + " nodes");
      }
      const int64_t g = r.get_int("gpu", std::nullopt, "the slow GPU's index within its node");
      if (g < 0 || g >= gpus_per_node) {
        r.fail("gpu", "gpu " + std::to_string(g) + " is outside the node's " +
                          std::to_string(gpus_per_node) + " GPUs");
      }
      s.rank = static_cast<int>(node * gpus_per_node + g);
    }
    s.throttle.compute_speed = read_factor(r, "speed",
                          "SM clock / nominal in [1e-6, 1]: tensor-core and CUDA-core rates and "
                          "per-wave SM work scale with it");
    s.throttle.memory_speed = read_factor(r, "memory_speed",
                                 "HBM bandwidth / nominal in [1e-6, 1]; 1 by default: throttling "
                                 "lowers the SM clock, HBM keeps its own clock");
    for (const auto& earlier : out) {
      if (earlier.rank == s.rank) {
        r.fail(r.has("rank") ? "rank" : "gpu",
               "rank " + std::to_string(s.rank) + " is listed twice");
      }
    }
    r.finish();
    out.push_back(s);
  }
  std::sort(out.begin(), out.end(),
            [](const StragglerConfig& a, const StragglerConfig& b) { return a.rank < b.rank; });
  return out;
}

std::string describe_stragglers(const std::vector<StragglerConfig>& stragglers) {
  std::string out;
  for (const auto& s : stragglers) {
    if (!out.empty()) out += ", ";
    out += "rank " + std::to_string(s.rank) + " at " + percent(s.throttle.compute_speed) + " SM clock";
    if (s.throttle.memory_speed < 1.0) out += " and " + percent(s.throttle.memory_speed) + " HBM bandwidth";
  }
  return out;
}

nlohmann::json stragglers_json(const std::vector<StragglerConfig>& stragglers) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& s : stragglers) {
    a.push_back({{"rank", s.rank}, {"speed", s.throttle.compute_speed}, {"memory_speed", s.throttle.memory_speed}});
  }
  return a;
}

bool any_slow(const std::vector<StragglerConfig>& stragglers) {
  return std::any_of(stragglers.begin(), stragglers.end(),
                     [](const StragglerConfig& s) { return s.throttle.slows(); });
}

std::vector<int> slow_ranks(const std::vector<StragglerConfig>& stragglers) {
  std::vector<int> out;
  for (const auto& s : stragglers) {
    if (s.throttle.slows()) out.push_back(s.rank);
  }
  return out;  // read_stragglers sorted them by rank
}

}  // namespace gcsim::cli
