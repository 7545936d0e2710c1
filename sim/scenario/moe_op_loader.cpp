#include "sim/scenario/moe_op_loader.h"

#include <algorithm>
#include <cmath>

#include "sim/report/format.h"
#include "sim/scenario/rank_group.h"

namespace gcsim::cli {

using sim::config::ConfigReader;
using namespace workloads::moe;

namespace {

double read_fraction(ConfigReader& r, const std::string& key, double fallback, double hi,
                     const char* doc) {
  const double v = r.get_double(key, fallback, doc);
  if (!(v >= 0.0 && v <= hi)) r.fail(key, "must be between 0 and " + fmt("%g", hi));
  return v;
}

}  // namespace

MoeOpRead read_moe_op(ConfigReader& r, const std::string& name, int num_ranks, int gpus_per_node,
                      uint64_t seed, workloads::WorkloadGraph& g, uint16_t compute_stream,
                      uint16_t comm_stream, uint16_t host_stream,
                      const models::gpu::GpuSpec& gpu, const EagerHostCost& host) {
  MoeOpRead out;
  std::vector<int> ranks = read_rank_group(r, num_ranks, {"", false, true});
  std::sort(ranks.begin(), ranks.end());
  out.ranks = ranks;

  RoutingConfig rc;
  rc.ranks = static_cast<int>(ranks.size());
  rc.tokens = r.get_int_in("tokens", std::nullopt, "tokens per EP rank (this micro-batch)", 1,
                           int64_t{1} << 31);
  MoeLayerSpec spec;
  spec.eager = EagerKernelEfficiency{}.on_gpu(gpu.sm_count, gpu.hbm_bandwidth.bytes_per_s());
  spec.hidden = r.get_int_in("hidden", std::nullopt, "model width", 1, int64_t{1} << 20);
  spec.expert_ffn = r.get_int_in("expert_ffn", std::nullopt, "each expert's FFN width", 1,
                                 int64_t{1} << 20);
  rc.experts = static_cast<int>(
      r.get_int_in("experts", std::nullopt, "routed experts of the layer", 1, 1 << 16));
  if (rc.experts % rc.ranks != 0) {
    r.fail("experts", "experts (" + std::to_string(rc.experts) +
                          ") must be a multiple of the EP group's " + std::to_string(rc.ranks) +
                          " ranks");
  }
  rc.top_k = static_cast<int>(
      r.get_int_in("top_k", 2, "experts per token", 1, rc.experts));
  if (r.has("skew") && r.has("expert_tokens")) {
    r.fail("expert_tokens", "give skew or expert_tokens, not both");
  }
  rc.skew = read_fraction(r, "skew", 0.0, 10.0, "Zipf exponent of expert popularity (0: uniform)");
  if (r.has("expert_tokens")) {
    rc.expert_tokens = r.get_int_list("expert_tokens", "token copies per expert over all sources");
  }
  const std::string placement = r.get_choice(
      "placement", {"index", "permuted"}, std::string("index"),
      "popular experts on the lowest indices, or on a seeded permutation per layer");
  rc.placement = placement == "permuted" ? HotPlacement::permuted : HotPlacement::index;
  rc.sample = r.get_bool("sample", false,
                         "draw the counts per (layer, micro-batch) instead of their expectation");
  rc.balance = read_fraction(r, "balance", 0.0, 1.0,
                             "fraction of the skew removed by load balancing (DeepSeek-V3 bias)");
  rc.capacity_factor = read_fraction(r, "capacity_factor", 0.0, 1000.0,
                                     "expert capacity factor (0: dropless)");
  rc.pad_to_capacity = r.get_bool("pad_to_capacity", false, "fill every expert to its capacity");
  if (rc.pad_to_capacity && rc.capacity_factor == 0.0) {
    r.fail("pad_to_capacity", "needs a capacity_factor");
  }
  const int layer = static_cast<int>(r.get_int_in("layer", 0, "layer index (routing stream)", 0, 1 << 20));
  const int micro_batch = static_cast<int>(
      r.get_int_in("micro_batch", 0, "micro-batch index (routing stream)", 0, 1 << 20));
  rc.seed = seed;
  spec.max_route_nodes = static_cast<int>(r.get_int_in(
      "max_route_nodes", 0, "node-limited routing: nodes a token may reach (0: off)", 0, 1 << 16));
  const std::string pass = r.get_choice("pass", {"fwd", "bwd", "fwd_bwd"}, std::string("fwd"),
                                        "forward, backward or both");
  spec.pass = pass == "fwd" ? MoePass::fwd : pass == "bwd" ? MoePass::bwd : MoePass::fwd_bwd;
  spec.activation = r.get_choice("activation", {"swiglu", "gelu"}, std::string("swiglu"),
                                 "expert activation") == "gelu"
                        ? ExpertActivation::gelu
                        : ExpertActivation::swiglu;
  std::vector<std::string> dtypes;
  for (auto d : models::gpu::kAllDtypes) dtypes.emplace_back(models::gpu::dtype_name(d));
  spec.dtype = *models::gpu::parse_dtype(
      r.get_choice("dtype", dtypes, std::string("bf16"), "activation and weight type"));

  spec.host = host;
  spec.host.modelled = r.get_choice("host", {"eager", "none"}, std::string("eager"),
                                    "eager PyTorch's host launches and sync (cluster.host's "
                                    "costs), or none") == "eager";
  if (spec.max_route_nodes > 0) {
    // The group index must run node by node, the same count on each node.
    const int per_node = gpus_per_node > 0 ? gpus_per_node : num_ranks;
    int first_node_count = 0;
    for (int rk : ranks) first_node_count += rk / per_node == ranks.front() / per_node ? 1 : 0;
    for (size_t i = 0; i < ranks.size(); ++i) {
      const int want_node = ranks.front() / per_node + static_cast<int>(i) / first_node_count;
      if (ranks[i] / per_node != want_node || ranks.size() % first_node_count != 0) {
        r.fail("max_route_nodes", "node-limited routing needs the same number of EP ranks on "
                                  "every node of the group, on consecutive nodes");
      }
    }
    spec.ranks_per_node = first_node_count;
  }
  const std::string why = check_routing(rc);
  if (!why.empty()) r.fail(rc.expert_tokens.empty() ? "tokens" : "expert_tokens", why);

  auto routing = std::make_shared<const Routing>(route(rc, layer, micro_batch));
  out.info.name = name;
  out.info.routing = routing;
  out.ops = build_moe_layer(g, spec, *routing, ranks, compute_stream, comm_stream, host_stream,
                             out.info);
  return out;
}

}  // namespace gcsim::cli
