// Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
// Transformer Models"), Table 5: iteration times of GPT 22B, 175B, 530B and
// 1T on Selene (A100 80GB, 8 x 200 Gb/s HDR per node) with full recompute
// and with sequence parallelism + selective recompute, as quoted in
// ../shared/REFERENCE.md. The eight configurations are
// configs/studies/korthikanti-table5.yaml, run here through `gcsim sweep`.
//
// The target is every case within 10% and a mean error of at most
// 5%, below the analytical model Calculon's 3.65% mean (8.87% max). Today
// (network flow: TP/SP collectives on the NCCL collective engine; the
// a100-sxm-80gb preset's 16-bit tensor efficiency anchored to the published
// A100 maximum achievable matmul rate, 267.9 TF/s; tensor work at sustained
// clocks, x0.854, a power-cap fraction measured on an H100 and only assumed
// for the A100; Megatron's mixed-precision optimizer passes, 54 B per
// parameter):
//   22B -3.9% / -2.3%, 175B -4.4% / -2.5%, 530B -2.1% / -0.1%,
//   1T +3.9% / +3.2% (SP+selective / full): mean 2.8%, max 4.4%, with
//   Megatron's one launch queue (cluster.launch_queues: auto) and the
//   pipeline receives posted where its schedule issues them; before (CUDA's
//   many queues, receives posted at the step's start, holds from the
//   meeting) 22B -1.2/+0.4, 175B -1.3/-0.1, 530B -1.0/+1.7, 1T +4.6/+4.4%
//   (mean 1.8%).
// What is left grows with model size: the small models run fast and the
// 1T slow. In the 22B (one micro-batch of 4) the 48 layers take 0.95 s
// (7.1 ms forward, 12.6 ms backward each with SP + selective) and the rest
// of the iteration 0.09 s (optimizer 0.08 s, embedding and head 0.01 s);
// candidates for the missing 0.06 s are the loss's fp32 passes over the
// logits (modelled as one kernel) and multi-tensor optimizer kernels that
// run below streaming bandwidth. Neither is measured here.
// The 1T's bubble is 15-16% of the step: (p-1)/m = 12.3% plus the last
// stage's LM head (+8% work on a 2-layer stage), which paces the pipeline.
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>

#include "catch.h"
#include "scenario/run_gcsim.h"

using gcsim::test::run_study;
using gcsim::test::TempDir;

namespace {

// Table 5, seconds per iteration.
const std::map<std::string, double> kMeasured{
    {"22B full (1.42 s)", 1.42},          {"22B sp+selective (1.10 s)", 1.10},
    {"175B full (18.13 s)", 18.13},       {"175B sp+selective (13.75 s)", 13.75},
    {"530B full (49.05 s)", 49.05},       {"530B sp+selective (37.83 s)", 37.83},
    {"1T full (94.42 s)", 94.42},         {"1T sp+selective (71.49 s)", 71.49}};


}  // namespace

TEST_CASE("Korthikanti et al. Table 5: iteration times of GPT 22B-1T on A100",
          "[scenario][training][table5]") {
  TempDir tmp;
  const auto results = run_study("configs/studies/korthikanti-table5.yaml", tmp / "out");
  double sum = 0, worst = 0;
  int cases = 0;
  std::ostringstream table;
  table << "| case | measured (s) | gcsim (s) | error |\n|---|---:|---:|---:|\n";
  for (const auto& f : results) {
    const std::string name = f.at("case");
    REQUIRE(f.at("status") == "ok");
    const double predicted = std::stod(f.at("step_time_s"));
    const double measured = kMeasured.at(name);
    const double error = (predicted - measured) / measured;
    char row[160];
    std::snprintf(row, sizeof row, "| %s | %.2f | %.2f | %+.1f%% |\n", name.c_str(), measured,
                  predicted, 100 * error);
    table << row;
    sum += std::fabs(error);
    worst = std::max(worst, std::fabs(error));
    ++cases;
    // The target: every case within 10%. Today: from 4.4% fast (175B
    // SP + selective) to 3.9% slow (1T).
    CHECK(std::fabs(error) < 0.10);
    CHECK(error > -0.06);
    // 5%: the 1T cases were +2.8% / +2.4%; with CTAs dispatched in launch
    // order (issue 16: a collective waits for the last wave of the kernels
    // launched before it, measured on 2x H100) +4.6% / +4.4%: the TP
    // reduce-scatter of the input gradient, issued before the weight
    // gradient GEMM as Megatron does, waited for that GEMM's last wave
    // (1T SP + selective: exposed TP 2.72 -> 4.41 s). Megatron launches
    // through one queue (CUDA_DEVICE_MAX_CONNECTIONS=1; cluster.launch_queues:
    // auto is one for it), where the collective takes its SMs first and runs
    // beside the GEMM (measured, holds_2026-11-26/order_fixed: it starts 4
    // us after the previous GEMM, the next GEMM +7..+19% beside it): exposed
    // TP 2.72 s again, 1T +3.9% / +3.2%, the smaller models 0.1-4.4% fast
    // (22B -3.9/-2.3, 175B -4.4/-2.5, 530B -2.1/-0.1%), mean 2.8% (1.8%
    // before), max 4.4% (4.6%).
    CHECK(error < 0.05);
  }
  const double mean = sum / cases;
  INFO("Korthikanti Table 5 with the shipped A100 preset: mean |error| " << 100 * mean
                                                                          << "%, max " << 100 * worst
                                                                          << "%\n" << table.str());
  CHECK(cases == 8);
  CHECK(mean <= 0.05);    // the target
  CHECK(mean < 0.0365);   // Calculon's mean on the same eight

}
