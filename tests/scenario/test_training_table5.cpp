// Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
// Transformer Models"), Table 5: iteration times of GPT 22B, 175B, 530B and
// 1T on Selene (A100 80GB, 8 x 200 Gb/s HDR per node) with full recompute
// and with sequence parallelism + selective recompute, as quoted in
// ../shared/REFERENCE.md. The eight configurations are
// configs/studies/korthikanti-table5.yaml, run here through `gcsim sweep`.
//
// The target is every case within 10% and a mean error of at most
// 5%. Today (network flow: TP/SP collectives on the NCCL collective engine,
// ~210 GB/s ring busbw on 8 A100; tensor work at sustained clocks, the
// a100-sxm-80gb preset's 0.80 tensor efficiency x 0.854, a power-cap
// fraction measured on an H100 and only assumed for the A100):
//   22B  -3.9% / -0.9%, 175B +1.3% / +3.5%, 530B +4.9% / +7.1%,
//   1T +11.3% / +10.9% (SP+selective / full): mean 5.5%, max 11.3%.
// The error grows with model size: the 1T's bubble is 15-16% of the step,
// (p-1)/m = 12.3% plus the last stage's LM head (+6% work on a 2-layer
// stage), and one flat tensor efficiency ignores the A100's better
// efficiency on the 1T's larger GEMMs (no A100 profile to fit it from).
// Rested clocks (cluster.clocks: rested) put every case fast, mean 8.0%.
// This test pins today's figures so that a change in them is seen; the
// bounds below are what holds today, not the target.
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>

#include "catch.h"
#include "scenario/run_gcsim.h"

using gcsim::test::read_text;
using gcsim::test::run_gcsim;
using gcsim::test::source_path;
using gcsim::test::TempDir;

namespace {

// Table 5, seconds per iteration.
const std::map<std::string, double> kMeasured{
    {"22B full (1.42 s)", 1.42},          {"22B sp+selective (1.10 s)", 1.10},
    {"175B full (18.13 s)", 18.13},       {"175B sp+selective (13.75 s)", 13.75},
    {"530B full (49.05 s)", 49.05},       {"530B sp+selective (37.83 s)", 37.83},
    {"1T full (94.42 s)", 94.42},         {"1T sp+selective (71.49 s)", 71.49}};

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (char c : line) {
    if (c == '"') quoted = !quoted;
    else if (c == ',' && !quoted) {
      out.push_back(cur);
      cur.clear();
    } else cur += c;
  }
  out.push_back(cur);
  return out;
}

}  // namespace

TEST_CASE("Korthikanti et al. Table 5: iteration times of GPT 22B-1T on A100",
          "[scenario][training][table5]") {
  TempDir tmp;
  const auto r = run_gcsim({"sweep", source_path("configs/studies/korthikanti-table5.yaml"), "-o",
                            (tmp / "out").string(), "-j", "2", "-q"});
  INFO(r.err);
  REQUIRE(r.exit_status == 0);
  std::istringstream csv(read_text(tmp / "out" / "results.csv"));
  std::string line;
  std::getline(csv, line);
  const auto header = split_csv(line);
  const auto col = [&](const char* name) {
    return static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  double sum = 0, worst = 0;
  int cases = 0;
  std::ostringstream table;
  table << "| case | measured (s) | gcsim (s) | error |\n|---|---:|---:|---:|\n";
  while (std::getline(csv, line)) {
    const auto f = split_csv(line);
    const std::string name = f[col("case")];
    REQUIRE(f[col("status")] == "ok");
    const double predicted = std::stod(f[col("step_time_s")]);
    const double measured = kMeasured.at(name);
    const double error = (predicted - measured) / measured;
    char row[160];
    std::snprintf(row, sizeof row, "| %s | %.2f | %.2f | %+.1f%% |\n", name.c_str(), measured,
                  predicted, 100 * error);
    table << row;
    sum += std::fabs(error);
    worst = std::max(worst, std::fabs(error));
    ++cases;
    // Today: from 3.9% fast (22B) to 11.3% slow (1T).
    CHECK(error > -0.05);
    CHECK(error < 0.12);
  }
  const double mean = sum / cases;
  INFO("Korthikanti Table 5 with the shipped A100 preset: mean |error| " << 100 * mean
                                                                          << "%, max " << 100 * worst
                                                                          << "%\n" << table.str());
  CHECK(cases == 8);
  CHECK(mean < 0.06);
}
