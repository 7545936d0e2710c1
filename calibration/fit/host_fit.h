// Fits a `cluster.host` profile (workloads/moe/moe_layer.h EagerHostCost:
// what each kind of eager PyTorch call costs this machine's host) to
// calibration/microbench/eager_host_bench.py's readings (schema
// gcsim.eager_host_bench.v1): generic small calls timed per rank with the
// GPU back-logged, no model and no MoE layer. `gcsim calibrate --host-fit`
// runs it and writes the profile (host_profile_yaml) that `cluster.host:
// FILE` reads.
//
// Each kind of the profile is the mean of the generic ops that an EP MoE
// layer's calls of that kind are (the layer's call mix, kHostKinds below),
// each op's cost the median over the run's blocks and ranks; the expert
// loop's per-call cost and fixed cost per pass are the bench's slice loop
// (a SwiGLU MLP over row slices, forward 4 calls, backward 9); `sync` the
// .tolist()'s return after the exchange's end on the GPU; `slowest_rank`
// the median over blocks of the slowest rank's loop cost per call over the
// ranks' median. Nothing is read from a layer's times.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "workloads/moe/moe_layer.h"

namespace gcsim::calibration {

// A reading the fit cannot use: `where` is its place in the file
// (runs[0].blocks[2].per_rank[1].op_us.mm).
class HostFitError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One kind of the profile as generic ops: (op, calls of it per kind's calls).
struct HostKindMix {
  const char* kind;  // router, permute, launch, nccl
  std::vector<std::pair<const char*, int>> ops;
};
const std::vector<HostKindMix>& host_kind_mix();
// Calls of the loop body per slice: the forward's and the backward's.
inline constexpr int kLoopFwdCalls = 4, kLoopBwdCalls = 9;

struct HostFit {
  workloads::moe::EagerHostCost cost;  // profile = "" (the caller names it)
  std::string measured_on;             // GPUs, CPU, host name, date
  int ranks = 0, blocks = 0;
  nlohmann::json readings;             // the medians the costs came from
  nlohmann::json provenance;           // the run's meta that says where
};

// Fits the run tagged `tag` ("" = the file's first run). Throws
// HostFitError for a file that is not the bench's output, a missing or
// non-numeric reading, or a cost outside its physical range (moe_layer.h).
HostFit fit_host_bench(const nlohmann::json& doc, const std::string& tag);

// The profile file: `kind: host_profile`, `measured_on`, `costs` (what
// cluster.host reads), and `fit`, `readings`, `provenance` (what it came from).
std::string host_profile_yaml(const HostFit& fit, const std::string& command);

}  // namespace gcsim::calibration
