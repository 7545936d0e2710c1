// The graph workload's `inputs_in_l2` key (models/gpu/l2_cache.h): a pass
// over what the op before it wrote streams from L2 when its bytes fit.
#include "catch.h"
#include "run_gcsim.h"

using gcsim::test::read_json;
using gcsim::test::run_gcsim;
using gcsim::test::TempDir;
using gcsim::test::write_text;

namespace {

// One add over `elements` bf16 elements on an H200 (calibration: none, the
// preset's values), its end in seconds.
double add_seconds(const TempDir& dir, long elements, const char* l2) {
  write_text(dir / "add.yaml",
             std::string("cluster: {gpu: h200-sxm, nodes: 1, gpus_per_node: 1, calibration: none}\n"
                         "workload:\n  kind: graph\n  ops:\n"
                         "    - {name: add, rank: 0, op: elementwise, kind: add, dtype: bf16, elements: ") +
                 std::to_string(elements) + l2 + "}\n");
  auto r = run_gcsim({"run", (dir / "add.yaml").string(), "-q", "-o", (dir / "out").string()});
  INFO(r.err);
  REQUIRE(r.exit_status == 0);
  return read_json(dir / "out" / "summary.json")["ops"][0]["end_s"].get<double>();
}

}  // namespace

TEST_CASE("graph op inputs_in_l2: an add that fits the L2 streams at its rate, one past it does not",
          "[scenario][l2]") {
  TempDir dir;
  // 4 Mi elements: 3 x 8 MiB = 24 MiB, under the H200's 60 MiB. By hand,
  // with the preset alone (calibration: none): the launch 2 us, one wave of
  // 132 tiles each streaming its 1/132 of the bytes at its even share of
  // L2's 7290 GB/s, and the wave's 1 us overhead; from HBM the same at the
  // preset's achieved 4800 GB/s x 0.90. Within 1e-5: each tile's time is
  // rounded to 1 ps.
  const double from_hbm = add_seconds(dir, 4L << 20, "");
  const double from_l2 = add_seconds(dir, 4L << 20, ", inputs_in_l2: true");
  const double bytes = 3.0 * 8.0 * 1048576.0;
  CHECK(from_l2 == Approx(2e-6 + bytes / 7290e9 + 1e-6).epsilon(1e-5));
  CHECK(from_hbm == Approx(2e-6 + bytes / (4800e9 * 0.90) + 1e-6).epsilon(1e-5));
  // 16 Mi elements: 96 MiB, past the L2: the key changes nothing.
  CHECK(add_seconds(dir, 16L << 20, ", inputs_in_l2: true") == add_seconds(dir, 16L << 20, ""));
}

TEST_CASE("graph op inputs_in_l2 that is not a boolean is refused, naming the key", "[cli][l2]") {
  TempDir dir;
  write_text(dir / "add.yaml",
             "cluster: {gpu: h200-sxm, nodes: 1, gpus_per_node: 1}\n"
             "workload:\n  kind: graph\n  ops:\n"
             "    - {name: add, rank: 0, op: elementwise, kind: add, elements: 1024, inputs_in_l2: sometimes}\n");
  auto r = run_gcsim({"run", (dir / "add.yaml").string(), "-q", "-o", (dir / "out").string()});
  INFO(r.err);
  CHECK(r.exit_status == 2);
  CHECK(r.err.find("add.yaml:5") != std::string::npos);
  CHECK(r.err.find("inputs_in_l2") != std::string::npos);
}
