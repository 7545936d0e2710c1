// cluster.launch_queues against the measured order of Megatron's overlapped
// reduce-scatter (calibration/measurements/h100-x2/holds_2026-11-26/
// order_fixed, 2x H100, profiled): GEMM g1 (8192^3 bf16, the data-gradient
// GEMM), then a 24-CTA reduce-scatter of 256 MiB bf16 on another stream that
// waits for g1, then GEMM g2 (the weight-gradient GEMM) issued after it.
// Times from g1's end (alone: GEMM 1397-1412 us, reduce-scatter 604-611 us):
//   one queue (CUDA_DEVICE_MAX_CONNECTIONS=1, Megatron's setting): the
//     reduce-scatter starts 4 us after g1, ends at 671 us (rank 0; rank 1's
//     2591 us waited for rank 0's late launch, which gcsim's ranks do not
//     have), and g2 runs beside it 1493-1668 us, 7-19% over the 1369-1373 us
//     it takes in the other call;
//   many queues (CUDA's default): the reduce-scatter starts at g2's last
//     wave, 1278-1281 us, and ends at 1835-1892 us; g2 1369-1373 us, as alone.
#include <filesystem>
#include <string>

#include "catch.h"
#include "scenario/run_gcsim.h"

using gcsim::test::run_gcsim;
using gcsim::test::source_path;
using gcsim::test::TempDir;

namespace {

const std::string kGemm = "op: gemm, m: 8192, n: 8192, k: 8192, dtype: bf16";

// Each rank: g1, the reduce-scatter after it on `comm`, then g2 (issue
// order); `gemms` false: the reduce-scatter alone.
std::string config(const std::string& queues, bool gemms = true) {
  std::string y = "cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 2, clocks: rested, "
                  "launch_queues: " + queues + "}\n"
                  "network: {model: flow}\n"
                  "workload:\n"
                  "  kind: graph\n"
                  "  ops:\n";
  if (!gemms) return y + "    - {name: rs, op: reduce_scatter, ranks: all, bytes: 256MiB, stream: comm}\n";
  return y + "    - {name: g1, rank: 0, " + kGemm + "}\n"
             "    - {name: g1_peer, rank: 1, " + kGemm + "}\n"
             "    - {name: rs, op: reduce_scatter, ranks: all, bytes: 256MiB, stream: comm, "
             "after: [g1, g1_peer]}\n"
             "    - {name: g2, rank: 0, " + kGemm + "}\n"
             "    - {name: g2_peer, rank: 1, " + kGemm + "}\n";
}

struct Order {
  double g1 = 0, g2 = 0;  // durations, us
  double rs = 0;          // the reduce-scatter's end from g1's end (alone: its time), us
};

Order simulate(const std::string& queues, bool gemms = true) {
  const auto s = gcsim::test::run_summary(config(queues, gemms));
  Order o;
  double g1_end = 0, rs_end = 0;
  for (const auto& op : s["ops"]) {
    if (op["rank"] != 0) continue;
    const double a = op["start_s"].get<double>() * 1e6, b = op["end_s"].get<double>() * 1e6;
    if (op["name"] == "g1") {
      o.g1 = b - a;
      g1_end = b;
    }
    if (op["name"] == "g2") o.g2 = b - a;
    if (op["name"] == "rs") rs_end = b;
  }
  o.rs = rs_end - g1_end;
  return o;
}

}  // namespace

TEST_CASE("launch queues: one queue puts the reduce-scatter beside the next GEMM, as measured",
          "[scenario][launch_queues][measured]") {
  const Order one = simulate("one");
  const Order many = simulate("many");
  const double alone = simulate("many", false).rs;
  INFO("one: g2 " << one.g2 << " us, rs end " << one.rs << " us; many: g2 " << many.g2
                  << " us, rs end " << many.rs << " us; g1 " << one.g1 << " us; rs alone " << alone);
  // One queue: g2 shares the SMs with the collective; measured +7 .. +19%.
  CHECK(one.g2 / many.g2 > 1.07);
  CHECK(one.g2 / many.g2 < 1.19);
  // ... and the collective starts at once and ends at 671 us measured, 1.104x
  // its 604-611 us alone (its share of HBM beside g2). Taken against its own
  // time alone: gcsim's 256 MiB reduce-scatter alone is 484 us, 20% short of
  // the measured one (the collective model's, not the order's), and its
  // stretch beside a GEMM is not fitted (README Status): within 8%.
  CHECK(one.rs / alone == Approx(671.0 / 607.7).epsilon(0.08));
  // Many queues: g2 runs as alone and the collective starts at g2's last
  // wave (of 16 on 132 SMs), so its end less its time alone is its start:
  // measured 1863 - 608 = 1255 us (profiled start 1278-1281 us), within 5%.
  CHECK(many.g2 == Approx(one.g1).epsilon(0.01));
  CHECK(many.rs - alone == Approx(1255.0).epsilon(0.05));
  CHECK(many.rs > many.g2);
}

TEST_CASE("launch queues: auto is one queue for Megatron training only", "[scenario][launch_queues]") {
  // A graph workload is no framework's step: auto keeps CUDA's default.
  const auto def = gcsim::test::run_summary(config("auto"));
  const auto many = gcsim::test::run_summary(config("many"));
  CHECK(def["simulated_time_s"] == many["simulated_time_s"]);
  CHECK(def["config"]["cluster"]["launch_queues"] == "auto");
}

TEST_CASE("bad input: cluster.launch_queues names its choices", "[cli][launch_queues]") {
  const auto r = run_gcsim({"run", source_path("configs/examples/quickstart.yaml"), "-s",
                            "cluster.launch_queues=two", "-q"});
  CHECK(r.exit_status == 2);
  CHECK(r.err.find("-s cluster.launch_queues=two") != std::string::npos);
  CHECK(r.err.find("key 'cluster.launch_queues'") != std::string::npos);
  CHECK(r.err.find("'two' is not one of auto | one | many") != std::string::npos);
}

TEST_CASE("bad input: cluster.launch_queues in a file names file, line and key", "[cli][launch_queues]") {
  TempDir tmp;
  const std::string path = (tmp / "queues.yaml").string();
  // Line 3 holds the bad value.
  gcsim::test::write_text(tmp / "queues.yaml",
                          "cluster:\n"
                          "  gpu: h100-sxm\n"
                          "  launch_queues: 1\n"
                          "workload: {kind: collective, op: all_reduce, bytes: [1MiB], ranks: all}\n");
  const auto r = run_gcsim({"run", path, "-o", (tmp / "out").string(), "-q"});
  INFO(r.err);
  CHECK(r.exit_status == 2);
  CHECK(r.err.find(path + ":3:") != std::string::npos);
  CHECK(r.err.find("key 'cluster.launch_queues'") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(tmp / "out" / "summary.json"));
}
