// The `collective` workload through `gcsim run`: summary.json `results`
// with nccl-tests' definitions (algbw = S/t; busbw = algbw x 2(n-1)/n for
// all-reduce, (n-1)/n for all-gather, x 1 for send/recv), the algorithm and
// protocol that ran, the report table, determinism, and figures against
// published NCCL numbers (../shared/REFERENCE.md).
#include <algorithm>
#include <cmath>
#include <string>

#include "catch.h"
#include "scenario/run_gcsim.h"

using gcsim::test::read_text;
using gcsim::test::run_gcsim;
using gcsim::test::run_summary;
using gcsim::test::source_path;
using gcsim::test::TempDir;
using Json = nlohmann::ordered_json;

using gcsim::test::contains;

namespace {

Json run_example(const std::string& name) {
  TempDir tmp;
  const auto out = tmp / "out";
  const auto r = run_gcsim({"run", source_path("configs/examples/" + name), "-o", out.string(), "-q"});
  REQUIRE(r.exit_status == 0);
  return gcsim::test::read_json(out / "summary.json");
}

}  // namespace

TEST_CASE("collective workload: 8x H100 all-reduce sweep, nccl-tests results", "[scenario]") {
  const Json s = run_example("collective_allreduce_8xh100.yaml");
  CHECK(s["kind"] == "collective");
  const Json& results = s["results"];
  REQUIRE(results.size() == 8);
  double last_time = 0.0;
  for (const auto& r : results) {
    INFO(r.dump());
    for (const char* key : {"op", "bytes", "ranks", "time_s", "algbw_GBps", "busbw_GBps",
                            "algorithm", "protocol"}) {
      CHECK(r.contains(key));
    }
    CHECK(r["op"] == "all_reduce");
    CHECK(r["ranks"] == 8);
    const double t = r["time_s"].get<double>();
    const double bytes = r["bytes"].get<double>();
    // nccl-tests: algbw = S / t, busbw = algbw x 2(n-1)/n.
    CHECK(r["algbw_GBps"].get<double>() == Approx(bytes / t * 1e-9));
    CHECK(r["busbw_GBps"].get<double>() == Approx(bytes / t * 1e-9 * 14.0 / 8.0));
    CHECK(t >= last_time);  // larger messages never finish sooner
    last_time = t;
  }
  // Small messages are latency-bound at tens of microseconds with LL.
  CHECK(results[0]["time_s"].get<double>() > 5e-6);
  CHECK(results[0]["time_s"].get<double>() < 50e-6);
  CHECK(results[0]["protocol"] == "LL");
  // Large ones take NVLink SHARP (the h100-sxm preset has it), near the
  // published ~480 GB/s (nccl issue 1455).
  const Json& big = results[7];
  CHECK(big["algorithm"] == "nvls");
  CHECK(big["protocol"] == "Simple");
  CHECK(big["busbw_GBps"].get<double>() == Approx(480).epsilon(0.05));
}

TEST_CASE("collective workload: NVLS off gives the ring's ~370 GB/s; forced choices hold",
          "[scenario]") {
  // The published 8x H100 ring figure (nccl-tests issues 212, 290): ~370 GB/s.
  // Within 4 %: measured on this workplace's Hoppers, 361 GB/s on 8 H100s at
  // 1 GiB (KINDS.md) and 362.3 on 4 H200s at 4 GiB (h200-x4/nccl_2026-11-26);
  // gcsim gives 357.1 at 8 GiB, each ring GPU's links carrying both ways and
  // losing the 1.46 % reverse overhead measured on 2 GPUs (362.3 without).
  const Json ring = run_summary(R"(
cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 8}
network: {model: flow}
workload: {kind: collective, op: all_reduce, bytes: 8GiB, nvls: false}
)");
  CHECK(ring["results"][0]["algorithm"] == "ring");
  CHECK(ring["results"][0]["protocol"] == "Simple");
  CHECK(ring["results"][0]["busbw_GBps"].get<double>() == Approx(370).epsilon(0.04));
  // algorithm/protocol named: they run, whatever the tuner would pick.
  const Json ll = run_summary(R"(
cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 8}
workload: {kind: collective, op: all_reduce, bytes: 64MiB, algorithm: ring, protocol: LL}
)");
  CHECK(ll["results"][0]["algorithm"] == "ring");
  CHECK(ll["results"][0]["protocol"] == "LL");
  // LL moves 4 payload bytes per 8-byte line and NCCL caps it at 141 GB/s
  // per GPU on Hopper: far below the Simple ring.
  CHECK(ll["results"][0]["busbw_GBps"].get<double>() < 150);
}

TEST_CASE("collective workload: send/recv between two nodes at 46-48 GB/s per NDR NIC",
          "[scenario]") {
  const Json s = run_example("collective_sendrecv_two_nodes.yaml");
  const Json& results = s["results"];
  REQUIRE(results.size() == 4);
  const Json& big = results[3];
  CHECK(big["op"] == "send_recv");
  CHECK(big["bytes"] == 1073741824);
  // Each rank sends 1 GiB to the other at once; busbw = algbw for send/recv.
  CHECK(big["busbw_GBps"].get<double>() >= 46.0);
  CHECK(big["busbw_GBps"].get<double>() <= 48.0);
  CHECK(big["busbw_GBps"] == big["algbw_GBps"]);
}

TEST_CASE("collective workload: all-gather counts output bytes; groups of any ranks",
          "[scenario]") {
  // 4 ranks spread over two nodes; all-gather of 64 MiB output: busbw =
  // algbw x 3/4, and the ring crosses the NICs, so busbw stays below the
  // NIC's 47 GB/s payload rate times the rails the group uses (2 per node).
  const Json s = run_summary(R"(
cluster:
  gpu: h100-sxm
  nodes: 2
  gpus_per_node: 8
  scale_out: {topology: fat-tree}
network: {model: flow}
workload: {kind: collective, op: all_gather, bytes: 64MiB, ranks: [0, 1, 8, 9]}
)");
  const Json& r = s["results"][0];
  CHECK(r["ranks"] == 4);
  CHECK(r["algorithm"] == "ring");
  const double algbw = 64.0 * 1048576 / r["time_s"].get<double>() * 1e-9;
  CHECK(r["busbw_GBps"].get<double>() == Approx(algbw * 0.75));
  CHECK(r["busbw_GBps"].get<double>() < 2 * 47.0);
  CHECK(r["busbw_GBps"].get<double>() > 30.0);
  CHECK(s["config"]["workload"]["ranks"] == Json::array({0, 1, 8, 9}));
  CHECK(s["config"]["workload"]["bytes"] == Json::array({"64MiB"}));
}

TEST_CASE("collective workload: report table, stdout table, determinism", "[scenario]") {
  TempDir tmp;
  const std::string config = source_path("configs/examples/collective_alltoall_two_nodes.yaml");
  const auto a = run_gcsim({"run", config, "-o", (tmp / "a").string(), "-q"});
  const auto b = run_gcsim({"run", config, "-o", (tmp / "b").string(), "-q"});
  REQUIRE(a.exit_status == 0);
  REQUIRE(b.exit_status == 0);
  Json sa = gcsim::test::read_json(tmp / "a" / "summary.json");
  Json sb = gcsim::test::read_json(tmp / "b" / "summary.json");
  sa.erase("wall_time_s");
  sb.erase("wall_time_s");
  CHECK(sa.dump() == sb.dump());
  const std::string report = read_text(tmp / "a" / "report.md");
  CHECK(contains(report, "## Collective: all_to_all over 16 ranks"));
  CHECK(contains(report, "| size (B) | count | type | algorithm | protocol |"));
  CHECK(contains(report, "| 268435456 |"));
  CHECK(contains(a.out, "busbw GB/s"));
  CHECK(sa["results"][2]["algorithm"] == "direct");
}

TEST_CASE("collective workload: the h200 calibration fit is what h200-sxm runs", "[scenario]") {
  // 2x H200 all-reduce of 1 GiB: NCCL 2.28.9 measured 331 GB/s busbw
  // (calibration/measurements/h200-x4/nccl_2026-11-26/); within 5 %, the
  // fit's held-out median (calibration/fit/collective_fit_hopper_2026-11-26.md).
  const Json s = run_summary(R"(
cluster: {gpu: h200-sxm, nodes: 1, gpus_per_node: 2}
workload: {kind: collective, op: all_reduce, bytes: 1GiB, nvls: false}
)");
  const double busbw = s["results"][0]["busbw_GBps"].get<double>();
  CHECK(busbw == Approx(331).epsilon(0.05));
}

TEST_CASE("graph collectives run on the engine with a fabric model, alpha-beta on analytical",
          "[scenario]") {
  // The same 1 GB all-reduce over 2 nodes x 8 H100 (16 ranks). Analytical:
  // the closed ring form over one NIC's 50 GB/s, 2*15*2 us + 2*(15/16)*1e9 /
  // 50e9 s = 37.56 ms (tests/scenario/test_graph_figures.cpp). Flow: NCCL's
  // algorithms, whose channels use all 8 rails of each node: several times
  // faster, busbw at most 8 NICs x 47 GB/s = 376 GB/s.
  const std::string body = R"(
cluster:
  gpu: h100-sxm
  nodes: 2
  gpus_per_node: 8
  scale_out: {topology: fat-tree, nic_bandwidth: 400Gbps}
workload:
  kind: graph
  ops:
    - {name: ar, op: all_reduce, ranks: all, bytes: 1GB}
)";
  auto end_of = [](const Json& s) {
    double end = 0.0;
    for (const auto& o : s["ops"]) end = std::max(end, o["end_s"].get<double>());
    return end;
  };
  const double analytical = end_of(run_summary(body + "network: {model: analytical}\n"));
  const double flow = end_of(run_summary(body + "network: {model: flow}\n"));
  CHECK(analytical == Approx(37.56e-3).epsilon(1e-9));
  const double busbw = 1e9 / flow * 2.0 * 15 / 16 * 1e-9;
  INFO("flow busbw " << busbw << " GB/s");
  CHECK(busbw < 8 * 47.0);
  CHECK(busbw > 200.0);
}
