// The moe op's host timeline (workloads/moe/moe_layer.h, EagerHostCost) by
// hand: a layer small enough that the GPU takes microseconds while the host
// is set to take milliseconds per launch, so the layer time is the host's
// sum of launches and syncs plus the last kernel.
#include <string>

#include "catch.h"
#include "scenario/run_gcsim.h"
#include "workloads/moe/moe_layer.h"

using gcsim::test::run_summary;

namespace {

// 64 tokens per rank, 4 experts on 2 H100s (2 local experts each, both
// with rows), top-2.
double layer_s(const std::string& pass, const std::string& host, const char* field = nullptr) {
  const auto s = run_summary(
      "cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 2}\n"
      "workload:\n  kind: graph\n  ops:\n"
      "    - {name: moe, op: moe, tokens: 64, hidden: 256, expert_ffn: 256, experts: 4, top_k: 2, pass: " +
      pass + host + "}\n");
  if (field != nullptr) return s["moe"][0]["per_rank"][0]["busy_s"][field].get<double>();
  return s["moe"][0]["layer_time_s"].get<double>();
}

const std::string kSlowHost = ", host_overhead: 1ms, host_collective: 2ms, host_sync: 3ms";

}  // namespace

TEST_CASE("moe host: the layer takes the host's launches and its sync", "[moe][host]") {
  // Forward: 18 kernels (router GEMM, fp32 cast, softmax, top-k; permute;
  // sort; 2 experts x fc1, silu, mul, fc2; unsort; unpermute's scale, zero,
  // index_add) at 1 ms, 3 NCCL calls (counts, dispatch, combine) at 2 ms,
  // one .tolist() at 3 ms: 27 ms of host, which the report counts.
  CHECK(layer_s("fwd", kSlowHost, "host") == Approx(27e-3).epsilon(1e-9));
  // The layer ends with the last kernel, a few microseconds after its
  // launch (the GPU work before it is done long before).
  const double fwd = layer_s("fwd", kSlowHost);
  CHECK(fwd > 27e-3);
  CHECK(fwd < 27e-3 + 50e-6);
  // Backward: 26 kernels (unpermute's gather and scale; sort; 2 experts x
  // 9: two wgrad, two dgrad, five SwiGLU backward kernels; unsort;
  // permute's zero and index_add; the router's two GEMMs) and 2 NCCL
  // calls, no sync: 30 ms.
  const double bwd = layer_s("bwd", kSlowHost);
  CHECK(bwd > 30e-3);
  CHECK(bwd < 30e-3 + 50e-6);
  // Without the host the same layer takes the GPU's microseconds.
  CHECK(layer_s("fwd", ", host: none") < 1e-3);
  CHECK(layer_s("fwd", ", host: none", "host") == 0.0);
}

TEST_CASE("moe host: the launches hide under long kernels except after the sync", "[moe][host]") {
  // With the fitted host, a layer whose kernels are long takes its GPU time
  // plus what the host exposes: at least the first launch, the counts'
  // .tolist() and the dispatch's NCCL call after it (the GPU idles through
  // all three), at most the host's whole time.
  const std::string big =
      "cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 2}\n"
      "workload:\n  kind: graph\n  ops:\n"
      "    - {name: moe, op: moe, tokens: 32768, hidden: 4096, expert_ffn: 2048, experts: 16, pass: fwd";
  const auto with = run_summary(big + "}\n")["moe"][0];
  const auto without = run_summary(big + ", host: none}\n")["moe"][0];
  const double w = with["layer_time_s"].get<double>(), wo = without["layer_time_s"].get<double>();
  const double host = with["per_rank"][0]["busy_s"]["host"].get<double>();
  const auto c = gcsim::workloads::moe::eager_host_cost();
  CHECK(w - wo >= (c.kernel_us + c.sync_us + c.collective_us) * 1e-6);
  CHECK(w - wo < host);
}
