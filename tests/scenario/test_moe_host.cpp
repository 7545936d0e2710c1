// The moe op's host timeline (workloads/moe/moe_layer.h, EagerHostCost) by
// hand: a layer small enough that the GPU takes microseconds while the host
// is set to take milliseconds per launch, so the layer time is the host's
// sum of launches and syncs plus the last kernel.
#include <cmath>
#include <string>

#include "catch.h"
#include "scenario/run_gcsim.h"
#include "workloads/moe/moe_layer.h"

using gcsim::test::run_summary;

namespace {

// A slow host (each cost near its physical range's top), so that the
// tiny layer's GPU time is small beside it.
const std::string kSlowHost =
    ", host: {router: 200us, permute: 150us, launch: 100us, nccl: 300us, sync: 50us, expert: 80us,"
    " loop_fwd: 300us, loop_bwd: 400us}";

// 64 tokens per rank, 4 experts on 2 H100s (2 local experts each, both
// with rows), top-2.
double layer_s(const std::string& pass, const std::string& host, const char* field = nullptr,
               const std::string& cluster_host = kSlowHost) {
  const auto s = run_summary(
      "cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 2" + cluster_host + "}\n"
      "workload:\n  kind: graph\n  ops:\n"
      "    - {name: moe, op: moe, tokens: 64, hidden: 256, expert_ffn: 256, experts: 4, top_k: 2, pass: " +
      pass + host + "}\n");
  if (field != nullptr) return s["moe"][0]["per_rank"][0]["busy_s"][field].get<double>();
  return s["moe"][0]["layer_time_s"].get<double>();
}

}  // namespace

TEST_CASE("moe host: the layer takes the host's launches and its sync", "[moe][host]") {
  // Forward: the router's 4 calls at 200 us (GEMM, fp32 cast, softmax,
  // top-k); the permute's gather at 150 us; the expert loop's fixed 300 us
  // and its 8 kernels at 80 us (2 experts x fc1, silu, mul, fc2); 5 other
  // kernels at 100 us (sort; unsort; unpermute's scale, zero, index_add);
  // 3 NCCL calls (counts, dispatch, combine) at 300 us; one .tolist() at
  // 50 us: 800 + 150 + 300 + 640 + 500 + 900 + 50 = 3,340 us of host,
  // which the report counts.
  CHECK(layer_s("fwd", "", "host") == Approx(3340e-6).epsilon(1e-9));
  // The layer ends with the last kernel, a few microseconds after its
  // launch (the GPU work before it is done long before); the counts
  // exchange, which the .tolist() waits for, is in that margin too.
  const double fwd = layer_s("fwd", "");
  CHECK(fwd > 3340e-6);
  CHECK(fwd < 3340e-6 + 50e-6);
  // Backward: the output gradient's gather and scale at 150 us; the loop's
  // fixed 400 us and its 18 kernels at 80 us (2 experts x 9: two wgrad, two
  // dgrad, five SwiGLU backward kernels); 6 other kernels at 100 us (sort;
  // unsort; permute's zero and index_add; the router's two GEMMs) and 2
  // NCCL calls, no sync: 300 + 400 + 1,440 + 600 + 600 = 3,340 us.
  CHECK(layer_s("bwd", "", "host") == Approx(3340e-6).epsilon(1e-9));
  const double bwd = layer_s("bwd", "");
  CHECK(bwd > 3340e-6);
  CHECK(bwd < 3340e-6 + 50e-6);
  // Without the host the same layer takes the GPU's microseconds.
  CHECK(layer_s("fwd", ", host: none") < 1e-3);
  CHECK(layer_s("fwd", ", host: none", "host") == 0.0);
}

TEST_CASE("moe host: a layer on several ranks issues at its slowest host's pace", "[moe][host]") {
  // slowest_rank 1.5: every launch and the sync of the 2-rank layer cost
  // 1.5x, so the forward's 3,340 us of host become 5,010 us.
  const std::string paced = kSlowHost.substr(0, kSlowHost.size() - 1) + ", slowest_rank: 1.5}";
  CHECK(layer_s("fwd", "", "host", paced) == Approx(1.5 * 3340e-6).epsilon(1e-9));
  CHECK(layer_s("bwd", "", "host", paced) == Approx(1.5 * 3340e-6).epsilon(1e-9));
  // One rank has no peer to wait for: the same layer on one GPU keeps its
  // host time whatever the pace.
  const auto one_rank = [&](const std::string& host) {
    return run_summary("cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 1" + host + "}\n"
                       "workload:\n  kind: graph\n  ops:\n"
                       "    - {name: moe, op: moe, tokens: 64, hidden: 256, expert_ffn: 256, experts: 4,"
                       " top_k: 2, pass: fwd}\n")["moe"][0]["per_rank"][0]["busy_s"]["host"]
        .get<double>();
  };
  CHECK(one_rank(paced) == Approx(one_rank(kSlowHost)).epsilon(1e-12));
  // The summary records the pace used.
  const auto s = run_summary("cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 2, host: h100x4-20261126-2313}\n"
                             "workload:\n  kind: graph\n  ops:\n"
                             "    - {name: moe, op: moe, tokens: 64, hidden: 256, expert_ffn: 256, experts: 4}\n");
  CHECK(s["moe"][0]["host"]["slowest_rank"].get<double>() == Approx(1.071));
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
  CHECK(w - wo >= (c.router_us + c.sync_us + c.collective_us) * 1e-6);
  CHECK(w - wo < host);
}

namespace {

// One GPU-bound layer (32K tokens, hidden 4096, 2 H100s) as written ops.
nlohmann::ordered_json big_layer(const std::string& ops) {
  return run_summary("cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 2}\n"
                     "workload:\n  kind: graph\n  ops:\n" + ops);
}
const std::string kBig = "op: moe, tokens: 32768, hidden: 4096, expert_ffn: 2048, experts: 16";

}  // namespace

TEST_CASE("moe host: a backward after its forward starts with the host ahead", "[moe][host]") {
  // The bench's backward: the forward launched first (untimed), then the
  // backward, timed from the forward's end on the GPU, by which time the
  // host has launched part of the backward. A `bwd` op after a `fwd` op
  // continues its host and its GPU: the two layer times add up to the one
  // `fwd_bwd` op's to the picosecond, and the backward alone (host and GPU
  // starting together) is longer by the head start.
  const auto both = big_layer("    - {name: l, " + kBig + ", pass: fwd_bwd}\n")["moe"];
  const auto split = big_layer("    - {name: f, " + kBig + ", pass: fwd}\n"
                               "    - {name: b, " + kBig + ", pass: bwd, after: [f]}\n")["moe"];
  const auto alone = big_layer("    - {name: b, " + kBig + ", pass: bwd}\n")["moe"];
  const double f = split[0]["layer_time_s"].get<double>(), b = split[1]["layer_time_s"].get<double>();
  CHECK(std::llround((f + b) * 1e12) == std::llround(both[0]["layer_time_s"].get<double>() * 1e12));
  const double b_alone = alone[0]["layer_time_s"].get<double>();
  CHECK(b < b_alone);
  // It saves at most the launches the lone backward exposes: the host's
  // whole issue of it.
  CHECK(b_alone - b < alone[0]["per_rank"][0]["busy_s"]["host"].get<double>());
}
