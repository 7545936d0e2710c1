// Attention beside an NCCL kernel that only waits for a late peer, against
// the 2x H100 measurements (calibration/microbench/
// attention_beside_waiting_nccl.py, calibration/measurements/h100-x2/
// attention_beside_nccl_2026-11-26/run2): cuDNN's SDPA (one CTA per SM)
// timed on rank M while M's NCCL op waits for its peer, whose GPU sleeps
// 1.5x the timed loop first; the same loop alone is the baseline.
//
// gcsim replays the harness: rank M issues its side of the op on the comm
// stream at t = 0, then 20 attention kernels on the compute stream; the
// peer's side waits behind a delay on its comm stream. The waiting kernel
// holds its SMs from M's issue (models/cluster/nccl_kernel_holds.h): an
// all-reduce its 24 channels (network.collective_sms), a recv the 16
// channels NCCL 2.28 splits a 2-rank send/recv over (p2p_split.h: 32 p2p
// channels per peer, halved while 2 ranks x 32 exceed them; parts of at
// least 64 KiB), a send that fits NCCL's buffers (2 MiB: 128 KiB per
// channel against 8 steps of 512 KiB) none after posting. It moves no
// bytes, so no HBM load: the attention kernel only loses SMs (2048 tiles
// over 132 SMs: 16 waves; over 116: 18, x1.125; over 108: 19, x1.19).
// Nothing is fitted: every case is held out.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "catch.h"
#include "scenario/run_gcsim.h"

using Json = nlohmann::ordered_json;

namespace {

// One measured case: the SDPA kernel, what waited beside it, and the
// slowdown (mean of the two ranks).
struct WaitCase {
  std::string kernel, beside;
  double measured = 0;
};

// "sdpa_fwd_b2h32s4096" as a graph op on `rank`.
std::string attention_op(const std::string& kernel, int rank) {
  const bool bwd = kernel.find("_bwd_") != std::string::npos;
  const size_t b = kernel.find("_b", 8), h = kernel.find('h', b + 2), s = kernel.find('s', h + 1);
  const std::string batch = kernel.substr(b + 2, h - b - 2);
  const std::string heads = kernel.substr(h + 1, s - h - 1);
  const std::string seq = kernel.substr(s + 1);
  return "rank: " + std::to_string(rank) + ", op: attention, batch: " + batch + ", heads: " + heads +
         ", q_len: " + seq + ", head_dim: 128, causal: true, pass: " + (bwd ? "bwd" : "fwd") +
         ", kernel: cudnn, dtype: bf16";
}

// The waiting op (measured rank 0, its peer 1): attention_beside_waiting_nccl.py's
// recv/send of 2 MiB and all-reduce of 64 MiB fp32.
// holds_bench.py's adds sizes: "send_waiting_256MiB", "allreduce_waiting_4MiB_bf16", ...
std::string waiting_op(const std::string& beside) {
  const auto size = [&beside](const char* dflt) {
    const size_t u = beside.find("_waiting_");
    if (u == std::string::npos) return std::string(dflt);
    const std::string rest = beside.substr(u + 9);
    return rest.substr(0, rest.find("MiB") + 3);
  };
  if (beside.rfind("recv_waiting", 0) == 0) return "op: p2p, src: 1, dst: 0, bytes: " + size("2MiB");
  if (beside.rfind("send_waiting", 0) == 0) return "op: p2p, src: 0, dst: 1, bytes: " + size("2MiB");
  if (beside.rfind("reducescatter_waiting", 0) == 0) {
    return "op: reduce_scatter, ranks: all, bytes: " + size("64MiB");
  }
  REQUIRE(beside.rfind("allreduce_waiting", 0) == 0);
  return "op: all_reduce, ranks: all, bytes: " + size("64MiB");
}

constexpr int kIters = 20;

std::string harness(const WaitCase& c, bool beside, double late_ms) {
  std::string y =
      "cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 2, clocks: rested}\n"
      "network: {model: flow, holds_from_issue: true}\n"
      "workload:\n  kind: graph\n  ops:\n";
  if (beside) {
    y += "    - {name: late, op: delay, rank: 1, stream: comm, duration: " + std::to_string(late_ms) +
         "ms}\n";
    y += "    - {name: waiting, " + waiting_op(c.beside) + "}\n";
  }
  for (int i = 0; i < kIters; ++i) {
    y += "    - {name: k" + std::to_string(i) + ", " + attention_op(c.kernel, 0) + "}\n";
  }
  return y;
}

double median(std::vector<double> v) {
  REQUIRE(!v.empty());
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// Median attention kernel on rank 0, us; and the waiting op's end there.
double kernel_median(const Json& s, double* waiting_end_us = nullptr) {
  std::vector<double> k;
  for (const auto& o : s["ops"]) {
    if (o["rank"] != 0) continue;
    const double a = o["start_s"].get<double>() * 1e6, b = o["end_s"].get<double>() * 1e6;
    if (o["name"].get<std::string>()[0] == 'k') k.push_back(b - a);
    if (o["name"] == "waiting" && waiting_end_us != nullptr) *waiting_end_us = b;
  }
  return median(k);
}

double simulate(const WaitCase& c) {
  const double alone = kernel_median(gcsim::test::run_summary(harness(c, false, 0)));
  // The peer arrives after 1.5x the loop, as measured.
  const double late_ms = 1.5 * alone * kIters * 1e-3;
  double waiting_end = 0;
  const double beside = kernel_median(gcsim::test::run_summary(harness(c, true, late_ms)), &waiting_end);
  REQUIRE(waiting_end > alone * kIters);  // it waited beside the whole loop
  return beside / alone;
}

// The cases of a measurement whose ranks are `r0` and `r1`.
std::vector<WaitCase> measured_cases(const char* file, const char* r0, const char* r1) {
  const Json d = gcsim::test::read_json(gcsim::test::source_path(file));
  std::vector<WaitCase> out;
  for (const auto& c : d[r0]["cases"]) {
    WaitCase w{c["kernel"].get<std::string>(), c["beside"].get<std::string>(), 0.0};
    for (const char* r : {r0, r1}) {
      for (const auto& o : d[r]["cases"]) {
        if (o["kernel"] == w.kernel && o["beside"] == w.beside) w.measured += o["slowdown"].get<double>() / 2;
      }
    }
    out.push_back(w);
  }
  return out;
}

// Held to each case within `tolerance`, the mean within `mean_bound`.
void check(const std::vector<WaitCase>& cases, double tolerance, double mean_bound) {
  double mean_err = 0, worst = 0;
  std::ostringstream table;
  table << "| kernel | beside | measured | gcsim | error |\n|---|---|---:|---:|---:|\n";
  for (const WaitCase& c : cases) {
    INFO(c.kernel << " beside " << c.beside);
    const double sim = simulate(c);
    const double e = sim / c.measured - 1.0;
    INFO("measured " << c.measured << " gcsim " << sim);
    char row[200];
    std::snprintf(row, sizeof row, "| %s | %s | %.3f | %.3f | %+.1f%% |\n", c.kernel.c_str(),
                  c.beside.c_str(), c.measured, sim, 100 * e);
    table << row;
    CHECK(std::abs(e) <= tolerance);
    mean_err += std::abs(e) / static_cast<double>(cases.size());
    worst = std::max(worst, std::abs(e));
    // A send that fits NCCL's buffers holds nothing once posted.
    if (c.beside == "send_waiting" || c.beside == "send_waiting_2MiB" ||
        c.beside == "send_waiting_64MiB") {
      CHECK(sim == Approx(1.0).margin(0.01));
    }
  }
  INFO("mean |error| " << mean_err << ", max " << worst << "\n" << table.str());
  CHECK(mean_err < mean_bound);
}

}  // namespace

TEST_CASE("waiting NCCL kernels hold their SMs: attention beside them on 2 H100s, held out",
          "[scenario][interference][measured]") {
  // attention_beside_waiting_nccl.py (run2): recv / send of 2 MiB, all-reduce
  // of 64 MiB fp32, 12 cases. Now +3.9 .. -1.2%, mean 1.6%; before (holds
  // from the last rank's arrival, p2p none: 1.0 everywhere) -15 .. -0.3%,
  // mean 8.2%. Each case within 5% (the ranks differ by up to 4%).
  const std::vector<WaitCase> run2 = measured_cases(
      "calibration/measurements/h100-x2/attention_beside_nccl_2026-11-26/run2/"
      "attention_beside_waiting_nccl.json",
      "rank0", "rank1");
  REQUIRE(run2.size() == 12);
  check(run2, 0.05, 0.03);
}

TEST_CASE("waiting NCCL kernels: sends past NCCL's buffers, reduce-scatter, small all-reduce",
          "[scenario][interference][measured]") {
  // holds_bench.py (calibration/measurements/h100-x2/holds_2026-11-26), 32
  // cases, all held out: recv / send of 2 and 64 MiB, send of 256 MiB (16
  // MiB per channel: it waits like a recv, 1.04-1.11x; 64 MiB, 4 MiB per
  // channel, posts in 195 us and exits, 1.00-1.02x), all-reduce of 4 MiB
  // bf16 and reduce-scatter of 64 MiB (24 channels as the all-reduce). The
  // bwd b2 s4096 column's baseline ran 4% slower than in run2 (its sends
  // 0.95-0.97x): each case within 9%, the mean within 4%.
  const std::vector<WaitCase> cases = measured_cases(
      "calibration/measurements/h100-x2/holds_2026-11-26/holds.json", "conn_default.rank0",
      "conn_default.rank1");
  REQUIRE(cases.size() == 32);
  check(cases, 0.09, 0.04);
}

TEST_CASE("bad input: network.holds_from_issue must be true or false", "[cli][interference]") {
  const auto r = gcsim::test::run_gcsim({"run", gcsim::test::source_path("configs/examples/quickstart.yaml"),
                                         "-s", "network.holds_from_issue=maybe", "-q"});
  CHECK(r.exit_status == 2);
  CHECK(r.err.find("key 'network.holds_from_issue': expected true or false") != std::string::npos);
}
