// cluster.clocks through the command line: a training step runs its tensor
// work at the GPU's sustained (power-capped) clocks by default, a graph at
// rested clocks, and either can be chosen; bad values are exit-2 errors.
#include <string>
#include <vector>

#include "catch.h"
#include "scenario/run_gcsim.h"

using gcsim::test::run_gcsim;
using gcsim::test::run_summary;
using gcsim::test::TempDir;
using gcsim::test::write_text;

namespace {

const char* const kGemm = gcsim::test::kH100Gemm8192;

// Runs `config` expecting bad input: exit status 2; returns stderr.
std::string run_bad(const std::string& config, std::vector<std::string> extra) {
  TempDir tmp;
  write_text(tmp / "c.yaml", config);
  std::vector<std::string> args{"run", (tmp / "c.yaml").string(), "-q", "-o", (tmp / "out").string()};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto r = run_gcsim(args);
  CHECK(r.exit_status == 2);
  return r.err;
}

}  // namespace

TEST_CASE("a GEMM at sustained clocks takes 1/0.854 of its rested tile time", "[scenario][clocks]") {
  const auto rested = run_summary(kGemm);
  CHECK(rested["config"]["cluster"]["clocks"] == "auto");
  const auto sustained = run_summary(kGemm, {"-s", "cluster.clocks=sustained"});
  // 2048 tiles of 128x256 in 16 waves (132 SMs). Tile = 2*128*256*8192 flop
  // at 989.4e12 x 0.81 / 132 flop/s per SM, derated by the H100's measured
  // 0.854 (configs/hardware/h100-sxm.yaml); + 1 us overhead per wave, after
  // the 2 us launch.
  const double tile = 2.0 * 128 * 256 * 8192 / (989.4e12 * 0.81 / 132);
  CHECK(rested["ops"][0]["end_s"].get<double>() == Approx(2e-6 + 16 * (tile + 1e-6)).epsilon(1e-6));
  CHECK(sustained["ops"][0]["end_s"].get<double>() ==
        Approx(2e-6 + 16 * (tile / 0.854 + 1e-6)).epsilon(1e-6));
  CHECK(sustained["hardware"]["efficiency"]["tensor"]["bf16"].get<double>() == Approx(0.81 * 0.854));
}

TEST_CASE("training runs at sustained clocks unless told rested", "[scenario][clocks][training]") {
  const std::string config = R"(cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 8}
workload:
  kind: training
  model: {layers: 4, hidden: 4096, heads: 32, vocab: 32000, seq_len: 2048}
  batch: {global: 8, micro: 1}
  parallelism: {tp: 8, pp: 1, dp: 1}
)";
  const auto sustained = run_summary(config);
  const auto rested = run_summary(config, {"-s", "cluster.clocks=rested"});
  const double ts = sustained["step_time_s"].get<double>(), tr = rested["step_time_s"].get<double>();
  // Only the tensor-core share of the step slows, by at most 1/0.854.
  CHECK(ts > tr * 1.03);
  CHECK(ts < tr / 0.854);
  // MFU keeps the datasheet peak as its denominator: it falls with the step.
  CHECK(sustained["mfu"].get<double>() == Approx(rested["mfu"].get<double>() * tr / ts).epsilon(1e-9));
}

TEST_CASE("bad clocks and sustained fractions are exit-2 errors naming the key", "[scenario][clocks][cli]") {
  CHECK(run_bad(kGemm, {"-s", "cluster.clocks=fast"}).find("cluster.clocks") != std::string::npos);
  const std::string inline_gpu = R"(cluster:
  gpu: {preset: h100-sxm, sustained_tensor_fraction: 1.5}
  nodes: 1
  gpus_per_node: 1
workload:
  kind: graph
  ops:
    - {name: g, rank: 0, op: gemm, m: 64, n: 64, k: 64}
)";
  const std::string err = run_bad(inline_gpu, {});
  CHECK(err.find("sustained_tensor_fraction") != std::string::npos);
  CHECK(err.find("c.yaml:2") != std::string::npos);
}
