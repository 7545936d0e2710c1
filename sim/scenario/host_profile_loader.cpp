#include "sim/scenario/host_profile_loader.h"

#include <optional>

#include "sim/config/input_file.h"
#include "sim/report/format.h"

namespace gcsim::cli {

using sim::config::ConfigReader;
using workloads::moe::EagerHostCost;
namespace moe = workloads::moe;

namespace {

const char* const kDoc =
    "the machine's host: a host profile file (gcsim calibrate --host-fit writes one), a measured "
    "machine's profile (h200, h100x4-20261126-2313, h100x4-20261126-2212), or a map of `profile` and "
    "per-call costs";

// Names the measured machines' profiles had when they passed for a GPU
// kind's host: each is one machine's reading.
std::optional<std::string> renamed_to(const std::string& name) {
  if (name == "h100") return "h100x4-20261126-2313";
  if (name == "h100-fast") return "h100x4-20261126-2212";
  return std::nullopt;
}

bool names_a_file(const std::string& v) {
  const auto ends = [&](const std::string& s) {
    return v.size() >= s.size() && v.compare(v.size() - s.size(), s.size(), s) == 0;
  };
  return v.find('/') != std::string::npos || ends(".yaml") || ends(".yml");
}

// One cost in µs, within its physical range; absent: left as it is unless
// `required`.
void read_cost(ConfigReader& r, const std::string& key, double& us, double lo, double hi,
               const char* doc, bool required) {
  if (!required && !r.has(key)) return;
  us = r.get_duration(key, std::nullopt, doc).seconds() * 1e6;
  if (!(us >= lo && us <= hi)) {
    r.fail(key, "must be between " + fmt("%g", lo) + " and " + fmt("%g", hi) + " us");
  }
}

const char* const kCostKeys[] = {"router", "permute", "launch", "nccl", "sync",
                                 "expert", "loop_fwd", "loop_bwd", "slowest_rank"};

// The costs of `r` onto `c`: each one present (every one when `required`).
void read_costs(ConfigReader& r, EagerHostCost& c, bool required) {
  using moe::kHostCallMaxUs;
  using moe::kHostCallMinUs;
  read_cost(r, "router", c.router_us, kHostCallMinUs, kHostCallMaxUs,
            "per router call (GEMM, .float(), softmax, top-k)", required);
  read_cost(r, "permute", c.permute_us, kHostCallMinUs, kHostCallMaxUs,
            "per permute gather call (index_select of the token copies)", required);
  read_cost(r, "launch", c.launch_us, kHostCallMinUs, kHostCallMaxUs,
            "per other kernel call (sort, unsort, unpermute, router backward)", required);
  read_cost(r, "nccl", c.collective_us, kHostCallMinUs, moe::kHostNcclMaxUs, "per NCCL call", required);
  read_cost(r, "sync", c.sync_us, moe::kHostSyncMinUs, moe::kHostSyncMaxUs,
            "the counts' .tolist() after the GPU is done", required);
  read_cost(r, "expert", c.expert_us, kHostCallMinUs, kHostCallMaxUs,
            "per kernel call of the expert loop", required);
  read_cost(r, "loop_fwd", c.loop_fwd_us, 0, moe::kHostLoopMaxUs,
            "the forward expert loop's fixed cost per pass", required);
  read_cost(r, "loop_bwd", c.loop_bwd_us, 0, moe::kHostLoopMaxUs,
            "the backward expert loop's fixed cost per pass", required);
  if (required || r.has("slowest_rank")) {
    c.slowest_rank = r.get_double("slowest_rank", std::nullopt,
                                  "the group's slowest host over a typical rank (a layer's pace)");
    if (!(c.slowest_rank >= 1 && c.slowest_rank <= moe::kHostSlowestRankMax)) {
      r.fail("slowest_rank", "must be between 1 and " + fmt("%g", moe::kHostSlowestRankMax));
    }
  }
}

// A host profile file (calibration/fit/host_fit.h host_profile_yaml): its
// `costs`, every one required; errors name the file, line and key.
EagerHostCost read_profile_file(const std::string& path, const ConfigReader& at, const std::string& key) {
  std::string why;
  if (!sim::config::path_exists(path, &why)) {
    at.fail(key, "host profile file '" + path + "' not found" + sim::config::why_suffix(why) +
                     " (make one on the machine: torchrun calibration/microbench/eager_host_bench.py, "
                     "then gcsim calibrate --host-fit)");
  }
  auto source = std::make_shared<sim::config::ConfigSource>();
  const YAML::Node root = sim::config::load_yaml_file(path, {}, *source, "host profile");
  sim::config::Json ignored;
  ConfigReader f(root, "", source, &ignored);
  const std::string kind = f.get_string("kind", std::nullopt, "what the file is: host_profile");
  if (kind != "host_profile") {
    f.fail("kind", "'" + kind + "' is not a host profile (gcsim calibrate --host-fit writes `kind: host_profile`)");
  }
  const std::string measured_on = f.get_string("measured_on", std::string(), "machine and date of the reading");
  EagerHostCost c;
  ConfigReader costs = f.child("costs", "the host's cost per kind of call", true);
  read_costs(costs, c, true);
  costs.finish();
  for (const char* k : {"fit", "readings", "provenance"}) f.allow(k);
  f.finish();
  c.profile = path;
  return c;
}

// A profile name or a host profile file at `key` of `r`.
EagerHostCost named(ConfigReader& r, const std::string& key) {
  const std::string value = r.get_string(key, std::nullopt, kDoc);
  if (const EagerHostCost* p = moe::host_profile(value)) return *p;
  if (const auto to = renamed_to(value)) {
    r.fail(key, "'" + value + "' was one 4x H100 machine's host, now named " + *to +
                    ": a host's speed is the machine's, not the GPU kind's (machines of one kind measured "
                    "1.3-1.7x apart); calibrate yours (gcsim calibrate --host-fit) or name that machine");
  }
  if (names_a_file(value)) return read_profile_file(r.get_path(key, std::nullopt, kDoc), r, key);
  std::string names;
  for (const auto& n : moe::host_profile_names()) names += (names.empty() ? "" : ", ") + n;
  r.fail(key, "unknown host profile '" + value + "': a host profile file (a path ending in .yaml; gcsim "
                  "calibrate --host-fit writes one) or one of " + names);
}

}  // namespace

EagerHostCost read_host_profile(ConfigReader& cluster) {
  if (!cluster.has("host")) return moe::eager_host_cost();
  const YAML::Node node = cluster.raw("host", kDoc);
  if (node.IsScalar()) return named(cluster, "host");
  if (!node.IsMap()) cluster.fail("host", "expected a profile name, a host profile file or a map of host costs");
  ConfigReader r = cluster.child("host", kDoc);
  EagerHostCost c = r.has("profile") ? named(r, "profile") : moe::eager_host_cost();
  const std::string base = c.profile;
  read_costs(r, c, false);
  for (const char* k : kCostKeys) {
    if (r.has(k)) {
      c.profile = base + " (edited)";
      break;
    }
  }
  r.finish();
  return c;
}

}  // namespace gcsim::cli
