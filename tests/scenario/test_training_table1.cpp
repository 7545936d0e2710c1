// Narayanan et al. 2021 ("Efficient Large-Scale Language Model Training on
// GPU Clusters Using Megatron-LM", SC'21), Table 1: achieved teraFLOP/s per
// A100 for GPT models of 1.7B to 1T parameters on Selene, each row's layout
// from NVIDIA's examples/sc21/run_table_1.sh. The ten rows are
// configs/studies/narayanan-table1.yaml, run here through `gcsim sweep`
// (analytical network, mirrored ranks: a few seconds of CPU).
//
// gcsim's figure is the paper's own FLOP count over the simulated step:
// F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) / (step x GPUs).
//
// The numbers this test pins (README, "Megatron-LM Table 1"):
//   before (A100 preset as Korthikanti Table 5 calibrates it, DP always
//   overlapped): +4.6 ... +15.9%, mean 11.1% (every row too fast).
//   now: the pipelined rows reduce after the flush (Megatron's local DDP of
//   2021) and the study runs the A100 at the 2021 software stack's GEMM
//   efficiency, 0.80 instead of 0.874, one value fitted on the 530B and 1T
//   rows (the two layouts Korthikanti et al. 2022 ran again on a newer
//   stack, 9-10% faster) and held out on the other eight:
//     1.7B +6.9%, 3.6B +5.9%, 7.5B +5.7%, 18.4B +6.5%, 39.1B +1.8%,
//     76.1B +8.4%, 145.6B +2.7%, 310.1B +4.7% (held out, mean 5.3%),
//     529.6B +2.3%, 1T -2.3% (fit): mean 4.7%, max 8.4%.
// What is left: the four PP 1 rows stay 6-7% fast. They are the rows where
// PyTorch DDP all-reduces 3.4-4.6 GB of gradients per GPU inside the
// backward; gcsim charges that overlap only the SMs NCCL holds, not its HBM
// traffic (README Status: on 2 H200s the same effect is 1.5-3.3 ms short of
// 4.0-5.8 ms measured); not measured on an A100, so a candidate only. The
// 76.1B's +8.4% has no identified cause.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "catch.h"
#include "scenario/run_gcsim.h"

using gcsim::test::run_study;
using gcsim::test::TempDir;

namespace {

struct Row {
  int layers;
  int hidden;
  int gpus;
  int batch;
  double published;  // achieved teraFLOP/s per GPU, Table 1
  bool fitted;       // the stack's GEMM efficiency was fitted on this row
};

// Keyed by the case name's first word (the parameter count).
const std::map<std::string, Row> kTable1{
    {"1.7B", {24, 2304, 32, 512, 137, false}},
    {"3.6B", {30, 3072, 64, 512, 138, false}},
    {"7.5B", {36, 4096, 128, 512, 142, false}},
    {"18.4B", {40, 6144, 256, 1024, 135, false}},
    {"39.1B", {48, 8192, 512, 1536, 138, false}},
    {"76.1B", {60, 10240, 1024, 1792, 140, false}},
    {"145.6B", {80, 12288, 1536, 2304, 148, false}},
    {"310.1B", {96, 16384, 1920, 2160, 155, false}},
    {"529.6B", {105, 20480, 2520, 2520, 163, true}},
    {"1008.0B", {128, 25600, 3072, 3072, 163, true}},
};

double paper_flops(const Row& r) {
  const double s = 2048, v = 51200, l = r.layers, h = r.hidden;
  return 96.0 * r.batch * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h));
}


}  // namespace

TEST_CASE("Narayanan et al. Table 1: teraFLOP/s per A100 of GPT 1.7B-1T",
          "[scenario][training][table1]") {
  TempDir tmp;
  const auto results = run_study("configs/studies/narayanan-table1.yaml", tmp / "out");
  double sum_all = 0, worst_all = 0, sum_held = 0, worst_held = 0;
  int rows = 0, held = 0;
  std::ostringstream table;
  table << "| model | published TF/s | gcsim TF/s | error |\n|---|---:|---:|---:|\n";
  for (const auto& f : results) {
    const std::string name = f.at("case");
    REQUIRE(f.at("status") == "ok");
    const Row& row = kTable1.at(name.substr(0, name.find(' ')));
    const double step = std::stod(f.at("step_time_s"));
    const double tflops = paper_flops(row) / (step * row.gpus) / 1e12;
    const double error = tflops / row.published - 1;
    char text[160];
    std::snprintf(text, sizeof text, "| %s%s | %.0f | %.1f | %+.1f%% |\n", name.c_str(),
                  row.fitted ? " (fit)" : "", row.published, tflops, 100 * error);
    table << text;
    sum_all += std::fabs(error);
    worst_all = std::max(worst_all, std::fabs(error));
    ++rows;
    if (!row.fitted) {
      sum_held += std::fabs(error);
      worst_held = std::max(worst_held, std::fabs(error));
      ++held;
    }
    // The bar for every row: within 10%.
    CHECK(std::fabs(error) <= 0.10);
  }
  INFO("Narayanan Table 1: mean |error| " << 100 * sum_all / rows << "% (held out "
                                          << 100 * sum_held / held << "%), max "
                                          << 100 * worst_all << "%\n"
                                          << table.str());
  CHECK(rows == 10);
  CHECK(held == 8);
  // The bar: mean within 5%, max within 10% (met on all ten rows).
  CHECK(sum_all / rows <= 0.05);
  CHECK(worst_all <= 0.10);
  // On the eight rows the fitted value never saw the mean is 5.3%, just
  // over the bar: today's residual (the PP 1 rows, see the header), pinned
  // so that it cannot grow unnoticed.
  CHECK(sum_held / held <= 0.055);

  // The one fitted value, the 2021 stack's 16-bit tensor efficiency, stays
  // in its physical range: at least 0.61 (the 1T step's 52% of peak, GEMMs
  // included, over the sustained clock fraction 0.854) and at most the
  // newer cuBLAS's 0.874 that the A100 preset is anchored to.
  const auto summary = gcsim::test::read_json(tmp / "out" / "points" / "0000" / "summary.json");
  const double efficiency = summary["hardware"]["efficiency"]["tensor"]["fp16"].get<double>();
  CHECK(efficiency >= 0.52 / 0.854);
  CHECK(efficiency <= 0.874);
}
