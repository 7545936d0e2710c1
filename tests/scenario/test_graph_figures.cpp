// Hand-written graphs run through `gcsim run`, with each figure in
// summary.json checked against the model's closed form (STYLE.md, rule 7).
// Each test states the system and derives the expected number in a comment.
//
// Communication figures use the `analytical` network model (models/network/
// alpha_beta.h): p2p = alpha + S/beta; ring all-reduce over n ranks =
// 2(n-1) alpha + 2(n-1)/n S/beta; all-gather = (n-1) alpha + (n-1)/n S/beta;
// broadcast = (n-1) alpha + S/beta; alpha and beta are those of the slowest
// tier the group spans. H100 SXM preset: NVLink 450 GB/s each way, 0.6 us;
// 132 SMs; HBM 81559 MiB.
//
// Times are compared in integer picoseconds (the engine's unit), so "exact"
// means exact: summary.json's seconds are ps * 1e-12 in a double, which
// round-trips to the same ps for any run shorter than a day.
#include <cmath>
#include <string>

#include "catch.h"
#include "scenario/run_gcsim.h"

namespace fs = std::filesystem;
using gcsim::test::GcsimResult;
using gcsim::test::read_json;
using gcsim::test::run_gcsim;
using gcsim::test::TempDir;
using gcsim::test::write_text;
using Json = nlohmann::ordered_json;

namespace {

constexpr int64_t kUs = 1'000'000;         // ps per microsecond
constexpr int64_t kMs = 1'000'000'000;     // ps per millisecond

// Writes `yaml` as a config, runs it (plus `extra` arguments) and returns
// summary.json. Fails the test if the run does not exit 0.
Json run_config(const std::string& yaml, std::vector<std::string> extra = {}) {
  return gcsim::test::run_summary(yaml, std::move(extra));
}

int64_t ps(double seconds) { return std::llround(seconds * 1e12); }

struct Span {
  int64_t start = -1, end = -1;  // ps
  bool found = false;
};

// The record of op `name` on `rank`; found == false if it never ran.
Span op(const Json& summary, const std::string& name, int rank) {
  for (const auto& o : summary["ops"]) {
    if (o["name"] == name && o["rank"] == rank) {
      return {ps(o["start_s"].get<double>()), ps(o["end_s"].get<double>()), true};
    }
  }
  return {};
}

}  // namespace

TEST_CASE("figures: a delay, then a 450 MB p2p inside a node", "[scenario]") {
  // Rank 0 waits 10 us, then sends 450 MB to rank 1 over NVLink:
  //   p2p = 0.6 us + 450e6 B / 450e9 B/s = 0.6 us + 1 ms = 1.0006 ms.
  // The send starts when the delay ends (after: [wait]); rank 1's recv was
  // posted at t = 0 and waits for it, so both sides end at
  //   10 us + 1.0006 ms = 1.0106 ms.
  const Json s = run_config(R"(
cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 8}
workload:
  kind: graph
  ops:
    - {name: wait, rank: 0, op: delay, duration: 10us}
    - {name: x, op: p2p, src: 0, dst: 1, bytes: 450MB, after: [wait]}
)");
  CHECK(s["kind"] == "graph");
  CHECK(s["status"] == "ok");
  const Span wait = op(s, "wait", 0), send = op(s, "x", 0), recv = op(s, "x", 1);
  CHECK(wait.start == 0);
  CHECK(wait.end == 10 * kUs);
  CHECK(send.start == 10 * kUs);
  CHECK(send.end == 10 * kUs + 600'000 + kMs);
  CHECK(recv.start == 0);  // a recv's span starts when its rank reached it
  CHECK(recv.end == 10 * kUs + 600'000 + kMs);
  CHECK(ps(s["simulated_time_s"].get<double>()) == 10 * kUs + 600'000 + kMs);
  // The two GPUs nobody used ran nothing: 3 records in all.
  CHECK(s["ops"].size() == 3);
}

TEST_CASE("figures: a 1 GB all-reduce across two nodes is NIC-bound", "[scenario]") {
  // 2 nodes x 8 H100, NIC 400 Gb/s = 50e9 B/s per GPU, 2 us NIC to NIC.
  // The 16-rank group spans nodes, so alpha = 2 us and beta = 50 GB/s:
  //   2*15*2 us + 2*(15/16)*1e9 B / 50e9 B/s = 60 us + 37.5 ms = 37.56 ms.
  // A p2p of 50 MB from rank 0 to rank 8 (other node) afterwards:
  //   2 us + 50e6 / 50e9 s = 1.002 ms, ending at 37.56 + 1.002 = 38.562 ms.
  const Json s = run_config(R"(
cluster:
  gpu: h100-sxm
  nodes: 2
  gpus_per_node: 8
  scale_out: {topology: fat-tree, nic_bandwidth: 400Gbps, latency: 2us}
workload:
  kind: graph
  ops:
    - {name: ar, op: all_reduce, ranks: all, bytes: 1GB}
    - {name: x, op: p2p, src: 0, dst: 8, bytes: 50MB, after: [ar]}
)");
  const int64_t ar = 60 * kUs + 37'500 * kUs;
  for (int rank = 0; rank < 16; ++rank) {
    INFO("rank " << rank);
    CHECK(op(s, "ar", rank).start == 0);
    CHECK(op(s, "ar", rank).end == ar);
  }
  CHECK(op(s, "x", 0).start == ar);
  CHECK(op(s, "x", 8).end == ar + 2 * kUs + kMs);
  CHECK(ps(s["simulated_time_s"].get<double>()) == ar + 2 * kUs + kMs);
  // The resolved config says what was simulated.
  CHECK(s["config"]["cluster"]["nodes"] == 2);
  CHECK(s["config"]["cluster"]["scale_out"]["nic_bandwidth"] == "50GB/s");
}

TEST_CASE("figures: collectives inside a node, sub-groups and late arrivals", "[scenario]") {
  // One node of 8 H100s, NVLink alpha = 0.6 us, beta = 450 GB/s, S = 450 MB.
  //   all_gather over 8:   7*0.6 us + (7/8)*1 ms = 4.2 us + 875 us = 879.2 us
  //   broadcast over 8:    7*0.6 us + 1 ms = 1004.2 us
  //   all_reduce over [2, 5]: 2*1*0.6 us + 2*(1/2)*1 ms = 1001.2 us
  // Rank 3 sleeps 20 us first; the all-gather waits for it (a rendezvous),
  // so it runs 20 us .. 899.2 us on every rank; rank 0 reports its span from
  // when it arrived (t = 0). The broadcast follows on the comm stream. The
  // pair all-reduce on ranks 2 and 5 uses its own stream and needs no one
  // else, so it starts at t = 0 beside the all-gather.
  const Json s = run_config(R"(
cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 8}
workload:
  kind: graph
  ops:
    - {name: late, rank: 3, op: delay, duration: 20us}
    - {name: ag, op: all_gather, ranks: all, bytes: 450MB, after: [late]}
    - {name: bc, op: broadcast, ranks: all, root: 4, bytes: 450MB}
    - {name: pair, op: all_reduce, ranks: [2, 5], bytes: 450MB, stream: side}
)");
  const int64_t ag_end = 20 * kUs + 4'200'000 + 875 * kUs;
  CHECK(op(s, "ag", 0).start == 0);
  CHECK(op(s, "ag", 3).start == 20 * kUs);
  for (int rank = 0; rank < 8; ++rank) {
    INFO("rank " << rank);
    CHECK(op(s, "ag", rank).end == ag_end);
    CHECK(op(s, "bc", rank).start == ag_end);
    CHECK(op(s, "bc", rank).end == ag_end + 4'200'000 + kMs);
  }
  CHECK(op(s, "pair", 2).start == 0);
  CHECK(op(s, "pair", 5).end == 1'200'000 + kMs);
  CHECK_FALSE(op(s, "pair", 0).found);
}

TEST_CASE("figures: one stream serialises, two streams overlap", "[scenario]") {
  // Rank 0, delays only, so every time is exact:
  //   a (100 us) then b (50 us) on stream s1: b runs 100..150 us.
  //   c (70 us) on stream s2 runs beside them: 0..70 us.
  //   d (10 us) on s2 after a: waits for a across streams, 100..110 us,
  //   although s2 was free from 70 us.
  const Json s = run_config(R"(
cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 1, scale_up: {kind: none}}
workload:
  kind: graph
  ops:
    - {name: a, rank: 0, op: delay, duration: 100us, stream: s1}
    - {name: b, rank: 0, op: delay, duration: 50us, stream: s1}
    - {name: c, rank: 0, op: delay, duration: 70us, stream: s2}
    - {name: d, rank: 0, op: delay, duration: 10us, stream: s2, after: [a]}
)");
  CHECK(op(s, "a", 0).start == 0);
  CHECK(op(s, "a", 0).end == 100 * kUs);
  CHECK(op(s, "b", 0).start == 100 * kUs);
  CHECK(op(s, "b", 0).end == 150 * kUs);
  CHECK(op(s, "c", 0).start == 0);
  CHECK(op(s, "c", 0).end == 70 * kUs);
  CHECK(op(s, "d", 0).start == 100 * kUs);
  CHECK(op(s, "d", 0).end == 110 * kUs);
  CHECK(ps(s["simulated_time_s"].get<double>()) == 150 * kUs);
}

TEST_CASE("figures: kernels on one stream serialise, on two streams overlap", "[scenario]") {
  // The same 4096^3 bf16 GEMM four times on rank 0: g1 then g2 on the
  // compute stream, h1 on stream x and h2 on stream y issued together
  // after g2. Stream order: g2 starts no earlier than g1 ends. Overlap:
  // h2 starts before h1 ends. Sharing the SMs, neither of h1, h2 can be
  // faster than the GEMM alone (g1), and the pair together cannot beat two
  // back-to-back GEMMs by more than the one launch latency they overlap.
  // GEMMs here are not persistent (persistent_gemm: false, an A100-style
  // grid of one CTA per tile), so the two streams share SMs wave by wave;
  // persistent GEMMs take their SMs in launch order (test_concurrent_kernels).
  const Json s = run_config(R"(
cluster: {gpu: {preset: h100-sxm, persistent_gemm: false}, nodes: 1, gpus_per_node: 1, scale_up: {kind: none}}
workload:
  kind: graph
  ops:
    - {name: g1, rank: 0, op: gemm, m: 4096, n: 4096, k: 4096}
    - {name: g2, rank: 0, op: gemm, m: 4096, n: 4096, k: 4096}
    - {name: h1, rank: 0, op: gemm, m: 4096, n: 4096, k: 4096, stream: x, after: [g2]}
    - {name: h2, rank: 0, op: gemm, m: 4096, n: 4096, k: 4096, stream: y, after: [g2]}
)");
  const Span g1 = op(s, "g1", 0), g2 = op(s, "g2", 0), h1 = op(s, "h1", 0), h2 = op(s, "h2", 0);
  const int64_t alone = g1.end - g1.start;
  CHECK(alone > 0);
  CHECK(g2.start >= g1.end);
  CHECK(g2.end - g2.start == alone);  // the same kernel alone: the same time
  CHECK(h1.start >= g2.end);
  CHECK(h2.start >= g2.end);
  CHECK(h2.start < h1.end);  // overlap
  CHECK(h1.start < h2.end);
  CHECK(h1.end - h1.start >= alone);
  CHECK(h2.end - h2.start >= alone);
  const int64_t pair = std::max(h1.end, h2.end) - std::min(h1.start, h2.start);
  CHECK(pair >= 2 * alone - 2 * kUs);  // kernel_launch_latency = 2 us
}

TEST_CASE("figures: a collective's SMs slow the GEMM beside it by whole waves", "[scenario]") {
  // An 8192^3 bf16 GEMM picks 128x256 tiles: 64*32 = 2048 tiles. Alone on
  // 132 SMs that is ceil(2048/132) = 16 waves; beside an all-reduce that
  // holds network.collective_sms = 16 SMs it gets 116 SMs, ceil(2048/116)
  // = 18 waves. The GEMM is compute-bound, so a wave costs the same either
  // way and its time (first tile to end) grows by exactly 18/16. With 0 SMs
  // held (copy-engine transfers) the two GEMMs take the same time.
  // The all-reduce (8 ranks, 1 GiB) takes 14*0.6 us + 1.75*2^30/450e9 s
  // = 4.184063 ms, longer than the GEMM, so it holds its SMs throughout.
  // `beside` is launched 1 us after it (`settle`), once its SMs are held: a
  // GEMM launched at the same instant would land first and, persistent on
  // the H100, keep every SM while the all-reduce waits for its end, as
  // measured (tests/scenario/test_gemm_beside_nccl.cpp).
  // calibration: none: the 18/16 ratio below uses the preset's tiles.
  const std::string config = R"(
cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 8, calibration: none}
network: {interference: {enabled: false}}  # the SMs alone (test_interference_measured.cpp)
workload:
  kind: graph
  ops:
    - {name: sync, op: all_reduce, ranks: all, bytes: 1GiB}
    - {name: settle, rank: 0, op: delay, duration: 1us, stream: compute}
    - {name: beside, rank: 0, op: gemm, m: 8192, n: 8192, k: 8192, stream: compute}
    - {name: alone, rank: 0, op: gemm, m: 8192, n: 8192, k: 8192, after: [sync]}
)";
  const Json held = run_config(config, {"-s", "network.collective_sms=16"});
  const Span sync = op(held, "sync", 0);
  CHECK(sync.end == 8'400'000 + std::llround(1.75 * 1073741824.0 / 450e9 * 1e12));
  const Span beside = op(held, "beside", 0), alone = op(held, "alone", 0);
  REQUIRE(beside.end < sync.end);
  const double ratio =
      static_cast<double>(beside.end - beside.start) / static_cast<double>(alone.end - alone.start);
  // To 1e-5, not exactly: the waves share HBM among different counts of
  // SMs, and the tiles' bytes reach their time only through the p = 4
  // overlap (kernel_cost_model.h), ~1e-5 of a wave.
  CHECK(ratio == Approx(18.0 / 16.0).epsilon(1e-5));

  const Json free_sms = run_config(config, {"-s", "network.collective_sms=0"});
  const Span b0 = op(free_sms, "beside", 0), a0 = op(free_sms, "alone", 0);
  CHECK(b0.end - b0.start == a0.end - a0.start);
  CHECK(free_sms["config"]["network"]["collective_sms"] == 0);
}

TEST_CASE("figures: an allocation beyond HBM stops the run as OOM", "[scenario]") {
  // H100 SXM HBM: 81559 MiB (as nvidia-smi reports it). 40 GiB + 39 GiB =
  // 80896 MiB fits; one more GiB makes 81920 MiB (80 GiB) > 81559 MiB: OOM at
  // op `more`. The run exits 0 with status "oom" and memory.fits false;
  // `after_oom` never runs. Peak use is what fitted: 79 GiB.
  const Json s = run_config(R"(
cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 1, scale_up: {kind: none}}
workload:
  kind: graph
  ops:
    - {name: weights, rank: 0, op: alloc, bytes: 40GiB}
    - {name: grads, rank: 0, op: alloc, bytes: 39GiB, after: [weights]}
    - {name: step, rank: 0, op: delay, duration: 5us, after: [grads]}
    - {name: more, rank: 0, op: alloc, bytes: 1GiB, after: [step]}
    - {name: after_oom, rank: 0, op: delay, duration: 5us, after: [more]}
)");
  CHECK(s["status"] == "oom");
  CHECK(s["memory"]["fits"] == false);
  CHECK(s["memory"]["capacity_bytes"] == int64_t{81559} * 1024 * 1024);
  CHECK(s["memory"]["peak_bytes_per_gpu"] == int64_t{79} * 1024 * 1024 * 1024);
  CHECK(s["memory"]["oom"].get<std::string>().find("'more'") != std::string::npos);
  CHECK(op(s, "step", 0).end == 5 * kUs);
  CHECK_FALSE(op(s, "more", 0).found);
  CHECK_FALSE(op(s, "after_oom", 0).found);

  // 100 GiB at once on h100-sxm: OOM at the first op, nothing runs.
  const Json big = run_config(R"(
cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 1, scale_up: {kind: none}}
workload:
  kind: graph
  ops:
    - {name: huge, rank: 0, op: alloc, bytes: 100GiB}
    - {name: never, rank: 0, op: delay, duration: 1us, after: [huge]}
)");
  CHECK(big["status"] == "oom");
  CHECK(big["memory"]["fits"] == false);
  CHECK(big["ops"].empty());
}

TEST_CASE("figures: freeing memory makes room again", "[scenario]") {
  // 60 GiB, free it, then 60 GiB again: each fits alone (61440 MiB <
  // 81559 MiB) though 120 GiB would not; peak is 60 GiB.
  const Json s = run_config(R"(
cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 1, scale_up: {kind: none}}
workload:
  kind: graph
  ops:
    - {name: a, rank: 0, op: alloc, bytes: 60GiB}
    - {name: fa, rank: 0, op: free, bytes: 60GiB, after: [a]}
    - {name: b, rank: 0, op: alloc, bytes: 60GiB, after: [fa]}
)");
  CHECK(s["status"] == "ok");
  CHECK(s["memory"]["fits"] == true);
  CHECK(s["memory"]["peak_bytes_per_gpu"] == int64_t{60} * 1024 * 1024 * 1024);
  CHECK(op(s, "b", 0).found);
}

TEST_CASE("a collective's wait for late peers is told apart from its transfer",
          "[scenario][graph]") {
  // Rank 1 computes for 1 ms before a 64 MiB all-reduce over ranks 0 and 1;
  // rank 0 arrives at once. Rank 0 then waits 1 ms for its peer (the
  // rendezvous), and both move the data in 2 alpha + 2 x 1/2 x S / beta =
  // 1.2 us + 67,108,864 B / 450 GB/s = 1.2 us + 149.131 us = 150.331 us.
  TempDir tmp;
  write_text(tmp / "c.yaml",
             "cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 2, scale_out: {topology: none}}\n"
             "network: {model: analytical}\n"
             "workload:\n  kind: graph\n  ops:\n"
             "    - {name: late, rank: 1, op: delay, duration: 1ms}\n"
             "    - {name: ar, op: all_reduce, ranks: [0, 1], bytes: 64MiB, after: [late]}\n");
  const GcsimResult r = run_gcsim({"run", (tmp / "c.yaml").string(), "-o", (tmp / "out").string(), "-q"});
  INFO(r.err);
  REQUIRE(r.exit_status == 0);
  const Json s = read_json(tmp / "out" / "summary.json");
  const int64_t transfer = 2 * 600'000 + std::llround(67108864.0 / 450e9 * 1e12);
  for (const auto& op : s["ops"]) {
    if (op["name"] != "ar") continue;
    const int rank = op["rank"];
    const int64_t wait = ps(op["wait_s"].get<double>());
    const int64_t busy = ps(op["end_s"].get<double>()) - ps(op["start_s"].get<double>()) - wait;
    CHECK(wait == (rank == 0 ? kMs : 0));
    CHECK(std::llabs(busy - transfer) <= 1);  // one ps of rounding in S / beta
  }
  // report.md: rank 0's row has the transfer and the wait in their own columns,
  // and the longest ops are ranked by their work, not their wait.
  const std::string md = gcsim::test::read_text(tmp / "out" / "report.md");
  CHECK(md.find("| rank | ops | compute | communication (transfer) | waiting for peers |") !=
        std::string::npos);
  CHECK(md.find("| 0 | 1 | 0 us | 150 us | 1 ms |") != std::string::npos);
  CHECK(md.find("| ar | 0 | collective | comm | 0 us | 150 us | 1 ms |") != std::string::npos);
}
