// Chakra through the command line: `gcsim export` writes a config's
// workload as per-rank traces, `gcsim run` on the replay config it writes
// gives the direct run's times to the picosecond (compute: model rebuilds
// every kernel from its gcsim_* shape), for graph and training configs.
#ifndef GCSIM_NO_CHAKRA

#include <filesystem>
#include <map>

#include "catch.h"
#include "scenario/run_gcsim.h"

namespace fs = std::filesystem;
using gcsim::test::GcsimResult;
using gcsim::test::read_json;
using gcsim::test::run_gcsim;
using gcsim::test::source_path;
using gcsim::test::TempDir;

namespace {

// TP 2 x PP 2 (1F1B) x DP 2 on one HGX node, flow network (run_gcsim.h).
const std::string kSmallTrain = gcsim::test::small_hgx_training();

// Runs `config` directly and through export + replay; returns both summaries.
// `both` are -s overrides of the direct run and the export alike.
std::pair<nlohmann::ordered_json, nlohmann::ordered_json> direct_and_replayed(
    const std::string& config, const TempDir& tmp, std::vector<std::string> replay_extra = {},
    const std::vector<std::string>& both = {}) {
  const std::string stem = fs::path(config).stem().string();
  std::vector<std::string> run_args{"run", config, "-o", (tmp / "direct").string(), "-q"};
  run_args.insert(run_args.end(), both.begin(), both.end());
  GcsimResult direct = run_gcsim(run_args);
  INFO("direct: " << direct.err);
  REQUIRE(direct.exit_status == 0);
  std::vector<std::string> export_args{"export", config, "-o", (tmp / "trace").string()};
  export_args.insert(export_args.end(), both.begin(), both.end());
  GcsimResult exported = run_gcsim(export_args);
  INFO("export: " << exported.err << exported.out);
  REQUIRE(exported.exit_status == 0);
  CHECK(fs::exists(tmp / "trace" / (stem + ".0.et")));
  CHECK(fs::exists(tmp / "trace" / (stem + ".comm_groups.json")));
  std::vector<std::string> args{"run", (tmp / "trace" / (stem + ".chakra.yaml")).string(), "-o",
                                (tmp / "replay").string(), "-q"};
  args.insert(args.end(), replay_extra.begin(), replay_extra.end());
  GcsimResult replay = run_gcsim(args);
  INFO("replay: " << replay.err);
  REQUIRE(replay.exit_status == 0);
  return {read_json(tmp / "direct" / "summary.json"), read_json(tmp / "replay" / "summary.json")};
}

// (rank, name) -> (start, end) of every op in a graph-like summary.
std::map<std::pair<int, std::string>, std::pair<double, double>> op_times(const nlohmann::ordered_json& s) {
  std::map<std::pair<int, std::string>, std::pair<double, double>> m;
  for (const auto& op : s["ops"]) {
    m[{op["rank"].get<int>(), op["name"].get<std::string>()}] = {op["start_s"].get<double>(),
                                                                 op["end_s"].get<double>()};
  }
  return m;
}

}  // namespace

TEST_CASE("chakra: graph examples replay from their export to the picosecond", "[scenario][chakra]") {
  for (const char* example : {"configs/examples/quickstart.yaml", "configs/examples/overlap_streams.yaml",
                              "configs/examples/two_node_allreduce.yaml", "tests/data/chakra/two_ranks.yaml"}) {
    INFO(example);
    TempDir tmp;
    const auto [direct, replay] = direct_and_replayed(source_path(example), tmp);
    CHECK(replay["kind"] == "chakra");
    CHECK(replay["simulated_time_s"].get<double>() == direct["simulated_time_s"].get<double>());
    // Every op at the same times: the same kernels, streams and order.
    CHECK(op_times(replay) == op_times(direct));
    CHECK(replay["memory"]["peak_bytes_per_gpu"] == direct["memory"]["peak_bytes_per_gpu"]);
  }
}

TEST_CASE("chakra: a training step replays from its export with the same step time", "[scenario][chakra]") {
  // TP 2 x PP 2 (1F1B) x DP 2 on one HGX node, flow network: kernels, TP
  // all-reduces, pipeline sends and receives, DP reduce-scatters, memory.
  // The direct run mirrors symmetric ranks; the export expands them (every
  // rank needs its own trace), and the mirrored shortcut is exact, so the
  // replay of all 8 ranks must give the same step time.
  TempDir tmp;
  gcsim::test::write_text(tmp / "small_train.yaml", kSmallTrain);
  const auto [direct, replay] = direct_and_replayed((tmp / "small_train.yaml").string(), tmp);
  REQUIRE(direct.contains("step_time_s"));
  CHECK(replay["simulated_time_s"].get<double>() == direct["step_time_s"].get<double>());
  CHECK(replay["memory"]["peak_bytes_per_gpu"].get<double>() > 0);
}

TEST_CASE("chakra: a training step under the clock model replays from its export with the same step time",
          "[scenario][chakra][clocks]") {
  // Under cluster.clocks: model a step starts from its periodic steady
  // state (warm-up passes, sim/cli/clock_warmup.h); the export records
  // each GPU's start in small_train.clock_start.json and the replay config
  // names it, so the replay (a chakra workload, which would start from
  // rest: 4.76 against 5.05 ms here) starts every GPU where the step did.
  TempDir tmp;
  gcsim::test::write_text(tmp / "small_train.yaml", kSmallTrain);
  const auto [direct, replay] =
      direct_and_replayed((tmp / "small_train.yaml").string(), tmp, {}, {"-s", "cluster.clocks=model"});
  REQUIRE(direct.contains("energy"));  // summary.json's energy under the model
  CHECK(replay["simulated_time_s"].get<double>() == direct["step_time_s"].get<double>());
  const std::string config = gcsim::test::read_text(tmp / "trace" / "small_train.chakra.yaml");
  CHECK(config.find("clock_start: small_train.clock_start.json") != std::string::npos);
  const auto states = read_json(tmp / "trace" / "small_train.clock_start.json");
  CHECK(states["ranks"].size() == 8);
  CHECK(states["gpu"] == "h100-sxm");
}

TEST_CASE("chakra: compute: trace replays recorded durations", "[scenario][chakra]") {
  // The export records each kernel's time alone on the GPU, rounded to the
  // microsecond (Chakra's unit). Replayed as fixed durations, a run of
  // kernels that never share the GPU lands within 1 us per kernel of the
  // direct run: quickstart's longest chain on rank 0 has 3 kernels before
  // the p2p and all-reduce, whose times do not depend on the mode.
  TempDir tmp;
  const auto [direct, replay] = direct_and_replayed(source_path("configs/examples/quickstart.yaml"), tmp,
                                                    {"-s", "workload.compute=trace"});
  const double d = direct["simulated_time_s"].get<double>(), r = replay["simulated_time_s"].get<double>();
  CHECK(std::abs(r - d) <= 3.5e-6);
  CHECK(r != d);  // the recorded durations really are used
}

TEST_CASE("chakra: export is deterministic", "[scenario][chakra]") {
  TempDir tmp;
  const std::string config = source_path("configs/examples/quickstart.yaml");
  for (const char* dir : {"a", "b"}) {
    REQUIRE(run_gcsim({"export", config, "-o", (tmp / dir).string()}).exit_status == 0);
  }
  for (int r = 0; r < 8; ++r) {
    const std::string f = "quickstart." + std::to_string(r) + ".et";
    CHECK(gcsim::test::read_text(tmp / "a" / f) == gcsim::test::read_text(tmp / "b" / f));
  }
  CHECK(gcsim::test::read_text(tmp / "a" / "quickstart.comm_groups.json") == "{\n  \"1\": [0,1,2,3,4,5,6,7]\n}\n");
}

TEST_CASE("chakra: the committed trace fixture replays to its graph's times", "[scenario][chakra]") {
  // tests/data/chakra/two_ranks.{0,1}.et were written by gcsim export; they
  // stand for a trace from elsewhere (fixed bytes on disk).
  TempDir tmp;
  const GcsimResult a = run_gcsim({"run", source_path("tests/data/chakra/two_ranks.yaml"), "-o",
                                   (tmp / "a").string(), "-q"});
  const GcsimResult b = run_gcsim({"run", source_path("tests/data/chakra/two_ranks.chakra.yaml"), "-o",
                                   (tmp / "b").string(), "-q"});
  INFO(a.err << b.err);
  REQUIRE(a.exit_status == 0);
  REQUIRE(b.exit_status == 0);
  const auto sa = read_json(tmp / "a" / "summary.json"), sb = read_json(tmp / "b" / "summary.json");
  CHECK(op_times(sa) == op_times(sb));
}

TEST_CASE("chakra: export needs -o, one config and a fixed graph", "[cli][chakra]") {
  const GcsimResult r = run_gcsim({"export", source_path("configs/examples/quickstart.yaml")});
  CHECK(r.exit_status == 2);
  CHECK(r.err.find("expected one CONFIG.yaml and -o DIR") != std::string::npos);
  TempDir tmp;
  for (const auto& entry : fs::directory_iterator(source_path("configs/examples"))) {
    if (gcsim::test::read_text(entry.path()).find("kind: inference") == std::string::npos) continue;
    const GcsimResult inf = run_gcsim({"export", entry.path().string(), "-o", (tmp / "x").string()});
    INFO(entry.path() << ": " << inf.err);
    CHECK(inf.exit_status == 2);
    CHECK(inf.err.find("no fixed graph to export") != std::string::npos);
    break;
  }
}

#endif  // GCSIM_NO_CHAKRA

#ifndef GCSIM_NO_CHAKRA
#include "sim/cli/chakra_stream_run.h"
#include "workloads/chakra/trace_loader.h"

TEST_CASE("chakra: a streamed replay on the full stack gives gcsim run's time", "[scenario][chakra][stream]") {
  // The training step of the round-trip test, exported, then replayed
  // streamed on the same cluster and flow network that `gcsim run` builds:
  // the same step time to the picosecond.
  TempDir tmp;
  gcsim::test::write_text(tmp / "small_train.yaml", kSmallTrain);
  const auto [direct, replay] = direct_and_replayed((tmp / "small_train.yaml").string(), tmp);
  const std::string replay_config = (tmp / "trace" / "small_train.chakra.yaml").string();
  const gcsim::cli::Scenario s = gcsim::cli::load_scenario(replay_config, {});
  gcsim::workloads::chakra::ImportOptions o;
  o.num_ranks = s.cluster.total_gpus();
  o.gpu = s.cluster.gpu;
  o.compute = gcsim::workloads::chakra::ComputeTiming::model;
  const nlohmann::json groups =
      nlohmann::json::parse(gcsim::test::read_text(tmp / "trace" / "small_train.comm_groups.json"));
  for (const auto& [name, ranks] : groups.items()) {
    o.comm_groups[name] = ranks.get<std::vector<int>>();
  }
  const std::string prefix = (tmp / "trace" / "small_train").string();
  // The default window (4096 ops per rank) holds each rank's ~300 nodes.
  const auto run = gcsim::cli::run_chakra_streamed(s, prefix, o, 4096, (tmp / "stream_trace.json").string());
  INFO(run.outcome.problem);
  REQUIRE(run.outcome.complete);
  CHECK(run.outcome.makespan.seconds() == direct["step_time_s"].get<double>());
  CHECK(run.outcome.late_ops == 0);
  CHECK(run.outcome.ops_done == replay["ops"].size());
  // A 16-op window: the generator posts each pipeline receive just before
  // the pass that reads it (pipeline_receives.h), so no send waits for a
  // receive beyond the window: no growth, nothing late, the same time.
  // (Window growth is tested in tests/unit/test_chakra_streaming.cpp; it
  // was needed here while every receive was posted at the step's start.)
  const auto small = gcsim::cli::run_chakra_streamed(s, prefix, o, 16);
  REQUIRE(small.outcome.complete);
  CHECK(small.outcome.window_growths == 0);
  CHECK(small.outcome.late_ops == 0);
  CHECK(small.outcome.peak_rank_window <= 16);
  CHECK(small.outcome.makespan == run.outcome.makespan);
  // Two ops: ops that are ready together on other streams lie beyond the
  // window, so the replay issues some late and says so.
  const auto tiny = gcsim::cli::run_chakra_streamed(s, prefix, o, 2);
  REQUIRE(tiny.outcome.complete);
  CHECK(tiny.outcome.late_ops > 0);
  CHECK(fs::file_size(tmp / "stream_trace.json") > 1000);
}
#endif  // GCSIM_NO_CHAKRA
