// cluster.clock_start: where each GPU's power governor starts under the
// clock model. A workload repeated back to back (a training step, by
// default) starts from its own periodic steady state, found by warm-up
// passes (sim/cli/clock_warmup.h); a Chakra replay of an exported step from
// the states the export recorded; bad values are exit-2 errors naming the
// key.
#include <cmath>
#include <string>
#include <vector>

#include "catch.h"
#include "scenario/run_gcsim.h"
#include "sim/cli/clock_warmup.h"
#include "sim/scenario/scenario.h"

using gcsim::test::contains;
using gcsim::test::run_bad_config;
using gcsim::test::run_gcsim;
using gcsim::test::run_summary;
using gcsim::test::TempDir;
using gcsim::test::write_text;

namespace {

// Twelve 8192^3 bf16 GEMMs back to back on one H100 (~17 ms at full clock).
std::string gemm_loop(const std::string& clock_start) {
  std::string c = "cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 1, clock_start: " + clock_start +
                  "}\nworkload:\n  kind: graph\n  ops:\n";
  for (int i = 0; i < 12; ++i) {
    c += "    - {name: g" + std::to_string(i) + ", rank: 0, op: gemm, m: 8192, n: 8192, k: 8192" +
         (i > 0 ? ", after: [g" + std::to_string(i - 1) + "]" : std::string()) + "}\n";
  }
  return c;
}

// TP 2 x PP 2 (1F1B) x DP 2 on one HGX node (run_gcsim.h, as tests/scenario/
// test_chakra_roundtrip.cpp) under the clock model: a ~5 ms step, far
// shorter than the slow loop's 61 ms, so its start matters (4.76 ms from
// rest, 5.14 ms from back-to-back GEMMs' state, 5.05 ms from its own).
const std::string kSmallTrain = gcsim::test::small_hgx_training(", clocks: model");

}  // namespace

TEST_CASE("clock_start: a GEMM loop repeated back to back starts at the GEMMs' sustained clock",
          "[scenario][clocks]") {
  // Periodic, the loop is back-to-back GEMMs forever: each GEMM, the first
  // too, runs at the steady state the model settles them at (x0.852 of the
  // rested rate at 1349 MHz on an H100, README "Clocks from a power model";
  // measured 0.855 at 1350 MHz, calibration/measurements/h100-sxm/
  // power_clock_2026-11-26/). From rest the first GEMM runs at full clock.
  const auto rest = run_summary(gemm_loop("rest"));
  const auto steady = run_summary(gemm_loop("steady"));
  auto length = [](const nlohmann::ordered_json& s, int i) {
    return s["ops"][i]["end_s"].get<double>() - s["ops"][i]["start_s"].get<double>();
  };
  const auto rested = run_summary(gemm_loop("rest"), {"-s", "cluster.clocks=rested"});
  CHECK(length(rest, 0) == Approx(length(rested, 0)).epsilon(1e-9));
  // gcsim: 1.1725x as long (1/0.852 = 1.1737: the per-wave
  // overheads do not follow the clock); 0.5% for that and the rounding of
  // the quoted speed.
  for (int i : {0, 11}) {
    INFO("GEMM " << i);
    CHECK(length(steady, i) / length(rested, i) == Approx(1.0 / 0.852).epsilon(0.005));
  }
  bool noted = false;
  for (const auto& n : steady["notes"]) noted = noted || contains(n.get<std::string>(), "warm-up pass");
  CHECK(noted);
}

TEST_CASE("clock_start: a training step starts where it ends (its periodic steady state)",
          "[scenario][clocks][training]") {
  namespace g = gcsim::models::gpu;
  TempDir tmp;
  write_text(tmp / "t.yaml", kSmallTrain);
  gcsim::cli::Scenario s = gcsim::cli::load_scenario((tmp / "t.yaml").string(), {});
  // Training under `model`: from the step's periodic state (clock_start: auto).
  REQUIRE(s.cluster.clock_model);
  REQUIRE(s.cluster.clock_settle);
  const gcsim::cli::ClockWarmup w = gcsim::cli::settle_clock_start(s, gcsim::cli::ResourceLimits::machine());
  CHECK(w.settled);
  CHECK(w.passes >= 2);  // the first pass starts from the GEMMs' steady state, not the step's
  CHECK(w.passes <= gcsim::cli::kMaxPasses);
  // One more step from there: every GPU ends where it started (to the
  // settling tolerance), and the step's own start is not back-to-back
  // GEMMs' (its memory-bound kernels, waits and optimizer lower the
  // average: the start clock is higher).
  const gcsim::cli::GovernorPass p = gcsim::cli::run_governor_pass(s, gcsim::cli::ResourceLimits::machine());
  REQUIRE(p.complete);
  const double gemm_clock = g::state_clock(p.power[0], s.cluster.clock_model_start);
  int worked = 0;
  for (size_t r = 0; r < p.end.size(); ++r) {
    INFO("rank " << r);
    if (!p.worked[r]) continue;  // mirrored ranks: not simulated
    ++worked;
    const double start = g::state_clock(p.power[r], w.start[r]);
    const double next = g::state_clock(p.power[r], g::periodic_start(p.power[r], w.start[r], p.end[r], p.period));
    CHECK(std::abs(next - start) < gcsim::cli::kSettledClock);
    CHECK(start > gemm_clock);
  }
  CHECK(worked >= 2);  // one rank of each pipeline stage
}

TEST_CASE("clock_start: the same config gives the same step, warm-up included, byte for byte",
          "[scenario][clocks][training]") {
  TempDir tmp;
  write_text(tmp / "t.yaml", kSmallTrain);
  for (const char* dir : {"a", "b"}) {
    REQUIRE(run_gcsim({"run", (tmp / "t.yaml").string(), "-q", "--trace", "-o", (tmp / dir).string()}).exit_status == 0);
  }
  // Every line but the run's wall time (report.md has none; trace.json
  // neither, and its clock counters start from the warm-up's state).
  auto without_wall_time = [](const std::string& text) {
    std::string out;
    size_t at = 0;
    while (at < text.size()) {
      const size_t end = std::min(text.find('\n', at), text.size());
      const std::string line = text.substr(at, end - at);
      if (!contains(line, "\"wall_time_s\"")) out += line + "\n";
      at = end + 1;
    }
    return out;
  };
  CHECK(without_wall_time(gcsim::test::read_text(tmp / "a" / "summary.json")) ==
        without_wall_time(gcsim::test::read_text(tmp / "b" / "summary.json")));
  CHECK(gcsim::test::read_text(tmp / "a" / "trace.json") == gcsim::test::read_text(tmp / "b" / "trace.json"));
  CHECK(contains(gcsim::test::read_text(tmp / "a" / "trace.json"), "SM clock (MHz)"));
}

TEST_CASE("clock_start: bad values and state files are exit-2 errors naming the key", "[scenario][clocks][cli]") {
  const std::string loop = gemm_loop("rest");
  std::string err = run_bad_config(loop, {"-s", "cluster.clock_start=/nonexistent/states.json"});
  CHECK(contains(err, "cluster.clock_start"));
  CHECK(contains(err, "/nonexistent/states.json"));
  TempDir tmp;
  auto with_file = [&](const std::string& json) {
    write_text(tmp / "s.json", json);
    return run_bad_config(loop, {"-s", "cluster.clock_start=" + (tmp / "s.json").string()});
  };
  // One GPU: one state.
  err = with_file(R"({"ranks": [{"slow": [0.9, 0, 0.2, 0], "fast": [0.9, 0, 0.2, 0]},
                              {"slow": [0.9, 0, 0.2, 0], "fast": [0.9, 0, 0.2, 0]}]})");
  CHECK(contains(err, "2 ranks, the cluster has 1 GPUs"));
  err = with_file(R"({"ranks": [{"slow": [1.5, 0, 0.2, 0], "fast": [0.9, 0, 0.2, 0]}]})");
  CHECK(contains(err, "ranks[0].slow"));
  CHECK(contains(err, "[0, 1]"));
  err = with_file(R"({"ranks": [{"slow": [0.9, 0, -0.2, 0], "fast": [0.9, 0, 0.2, 0]}]})");
  CHECK(contains(err, "ranks[0].slow[2]"));
  err = with_file(R"({"ranks": [{"slow": [0.9, 0, 0.2, 0]}]})");
  CHECK(contains(err, "expected {slow: [...], fast: [...]}"));
  err = with_file(R"({"gpu": "h200-sxm", "ranks": [{"slow": [0.9, 0, 0.2, 0], "fast": [0.9, 0, 0.2, 0]}]})");
  CHECK(contains(err, "recorded on \"h200-sxm\""));
  err = with_file("{\"ranks\": [");
  CHECK(contains(err, "not valid JSON"));
  // Serving's governors start from rest or each step from its own periodic
  // state (steady); a state file records an exported training step's start.
  write_text(tmp / "s.json", R"({"ranks": [{"slow": [0.9, 0, 0.2, 0], "fast": [0.9, 0, 0.2, 0]}]})");
  const std::string serving = R"(cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 1}
workload:
  kind: inference
  model: {preset: llama3-8b}
  requests: {count: 4, arrival: {kind: burst}, prompt_len: 128, output_len: 8}
)";
  err = run_bad_config(serving, {"-s", "cluster.clock_start=" + (tmp / "s.json").string()});
  CHECK(contains(err, "cluster.clock_start"));
  CHECK(contains(err, "serving"));
  TempDir ok;
  write_text(ok / "s.yaml", serving);
  CHECK(run_gcsim({"run", (ok / "s.yaml").string(), "-q", "-o", (ok / "out").string(), "-s",
                   "cluster.clock_start=steady"})
            .exit_status == 0);
}

TEST_CASE("clock_start: a recorded state is where the GPU starts", "[scenario][clocks]") {
  // One GPU recorded at back-to-back GEMMs' averages (tensor 0.993, HBM
  // 0.078: what `gcsim export` records for this loop under clock_start:
  // steady, the hold keeping each wave's highest level): its first GEMM
  // runs at their sustained clock (x0.852), not at full clock.
  TempDir tmp;
  write_text(tmp / "s.json", R"({"ranks": [{"slow": [0.993, 0, 0.078, 0], "fast": [0.993, 0, 0.078, 0]}]})");
  const auto rested = run_summary(gemm_loop("rest"), {"-s", "cluster.clocks=rested"});
  const auto recorded = run_summary(gemm_loop("rest"), {"-s", "cluster.clock_start=" + (tmp / "s.json").string()});
  const double first = recorded["ops"][0]["end_s"].get<double>() - recorded["ops"][0]["start_s"].get<double>();
  const double base = rested["ops"][0]["end_s"].get<double>() - rested["ops"][0]["start_s"].get<double>();
  CHECK(first / base == Approx(1.0 / 0.852).epsilon(0.005));
}
