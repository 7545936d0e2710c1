#include "sim/scenario/host_profile_loader.h"

#include <optional>

#include "sim/report/format.h"

namespace gcsim::cli {

using sim::config::ConfigReader;
using workloads::moe::EagerHostCost;
namespace moe = workloads::moe;

namespace {

const char* const kDoc =
    "the machine's host: a profile (h200, h100, h100-fast) or a map of `profile` and per-call costs";

EagerHostCost named(ConfigReader& r, const std::string& key) {
  const std::string name = r.get_choice(key, moe::host_profile_names(), std::nullopt, kDoc);
  return *moe::host_profile(name);
}

// One cost in µs, within its physical range.
void read_cost(ConfigReader& r, const std::string& key, double& us, double lo, double hi,
               const char* doc) {
  if (!r.has(key)) return;
  us = r.get_duration(key, std::nullopt, doc).seconds() * 1e6;
  if (!(us >= lo && us <= hi)) {
    r.fail(key, "must be between " + fmt("%g", lo) + " and " + fmt("%g", hi) +
                    " us");
  }
}

}  // namespace

EagerHostCost read_host_profile(ConfigReader& cluster) {
  if (!cluster.has("host")) return moe::eager_host_cost();
  const YAML::Node node = cluster.raw("host", kDoc);
  if (node.IsScalar()) return named(cluster, "host");
  if (!node.IsMap()) cluster.fail("host", "expected a profile name or a map of host costs");
  ConfigReader r = cluster.child("host", kDoc);
  EagerHostCost c = r.has("profile") ? named(r, "profile") : moe::eager_host_cost();
  const std::string base = c.profile;
  using moe::kHostCallMaxUs;
  using moe::kHostCallMinUs;
  read_cost(r, "router", c.router_us, kHostCallMinUs, kHostCallMaxUs,
            "per router call (GEMM, .float(), softmax, top-k)");
  read_cost(r, "permute", c.permute_us, kHostCallMinUs, kHostCallMaxUs,
            "per permute gather call (index_select of the token copies)");
  read_cost(r, "launch", c.launch_us, kHostCallMinUs, kHostCallMaxUs,
            "per other kernel call (expert loop, sort, unpermute, router backward)");
  read_cost(r, "nccl", c.collective_us, kHostCallMinUs, moe::kHostNcclMaxUs, "per NCCL call");
  read_cost(r, "sync", c.sync_us, moe::kHostSyncMinUs, moe::kHostSyncMaxUs,
            "the counts' .tolist() after the GPU is done");
  read_cost(r, "expert", c.expert_us, kHostCallMinUs, kHostCallMaxUs,
            "per kernel call of the expert loop");
  read_cost(r, "loop_fwd", c.loop_fwd_us, 0, moe::kHostLoopMaxUs,
            "the forward expert loop's fixed cost per pass");
  read_cost(r, "loop_bwd", c.loop_bwd_us, 0, moe::kHostLoopMaxUs,
            "the backward expert loop's fixed cost per pass");
  if (r.has("slowest_rank")) {
    c.slowest_rank = r.get_double("slowest_rank", std::nullopt,
                                  "the group's slowest host over a typical rank (a layer's pace)");
    if (!(c.slowest_rank >= 1 && c.slowest_rank <= moe::kHostSlowestRankMax)) {
      r.fail("slowest_rank", "must be between 1 and " + fmt("%g", moe::kHostSlowestRankMax));
    }
  }
  for (const char* k : {"router", "permute", "launch", "nccl", "sync", "expert", "loop_fwd", "loop_bwd",
                        "slowest_rank"}) {
    if (r.has(k)) {
      c.profile = base + " (edited)";
      break;
    }
  }
  r.finish();
  return c;
}

}  // namespace gcsim::cli
