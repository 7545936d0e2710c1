// `gcsim calibrate --collectives SWEEP.json --fit-groups N -o DIR`: fits the
// collective model on some group sizes and reports held-out error per op on
// the others (markdown and JSON); every class of bad input exits 2 naming
// the file and key.
#include <nlohmann/json.hpp>

#include "catch.h"
#include "run_gcsim.h"

using gcsim::test::read_text;
using gcsim::test::run_gcsim;
using gcsim::test::TempDir;
using gcsim::test::write_text;

namespace {

// A small sweep in nccl_sweep.py's schema: all-reduce and all-to-all on 2
// and 4 GPUs at 8 B, 1 MiB and 64 MiB, times from the committed H200 run
// (calibration/measurements/h200-x4/nccl_2026-11-26/nccl_default.json).
std::string small_sweep() {
  nlohmann::json d;
  d["schema"] = "gcsim.nccl_sweep.v1";
  d["meta"] = {{"device_name", "NVIDIA H200"}};
  d["choices"] = nlohmann::json::array();
  for (int n : {2, 4}) {
    d["choices"].push_back({{"op", "all_reduce"}, {"ranks", n}, {"bytes", 8}, {"protocol", "LL"}});
    d["choices"].push_back(
        {{"op", "all_reduce"}, {"ranks", n}, {"bytes", 1 << 20}, {"protocol", "LL"}});
    d["choices"].push_back(
        {{"op", "all_reduce"}, {"ranks", n}, {"bytes", 64 << 20}, {"protocol", "SIMPLE"}});
  }
  auto row = [&](const char* op, int n, int64_t bytes, double us) {
    d["results"].push_back({{"op", op}, {"ranks", n}, {"bytes", bytes}, {"time_us", us},
                            {"protocol", "default"}, {"in_place", std::string(op) == "all_reduce"}});
  };
  row("all_reduce", 2, 8, 6.2);
  row("all_reduce", 2, 1 << 20, 13.3);
  row("all_reduce", 2, 64 << 20, 252.3);
  row("all_to_all", 2, 8, 7.3);
  row("all_to_all", 2, 1 << 20, 13.1);
  row("all_to_all", 2, 64 << 20, 140.2);
  row("all_reduce", 4, 8, 9.4);
  row("all_reduce", 4, 1 << 20, 18.3);
  row("all_reduce", 4, 64 << 20, 327.5);
  row("all_to_all", 4, 8, 13.7);
  row("all_to_all", 4, 1 << 20, 14.7);
  row("all_to_all", 4, 64 << 20, 188.1);
  return d.dump();
}

}  // namespace

TEST_CASE("calibrate --collectives fits 2 GPUs and reports 4 GPUs held out", "[cli]") {
  TempDir dir;
  write_text(dir / "sweep.json", small_sweep());
  // A few iterations: this checks the command, not the fit's quality
  // (tests/unit/test_collectives_fit.cpp checks the committed fit).
  auto r = run_gcsim({"calibrate", "--collectives", (dir / "sweep.json").string(), "--fit-groups",
                      "2", "--iterations", "3", "-o", (dir / "fit").string()});
  INFO(r.out << r.err);
  REQUIRE(r.exit_status == 0);
  CHECK(r.out.find("all_to_all on 4 GPUs: busbw median") != std::string::npos);
  const auto j = nlohmann::json::parse(read_text(dir / "fit" / "collective_fit.json"));
  CHECK(j["gpu"] == "h200-sxm");  // from meta.device_name
  CHECK(j["fit_groups"] == nlohmann::json::array({2}));
  CHECK(j["held_out_groups"] == nlohmann::json::array({4}));
  CHECK(j["fit"]["points"] == 6);
  CHECK(j["out_of_range"].empty());
  // Held out: two ops on 4 GPUs, each with two busbw points (1 MiB, 64 MiB)
  // and one latency point (8 B); the 2-GPU rows are the fitted ones.
  REQUIRE(j["held_out"].size() == 2);
  for (const auto& e : j["held_out"]) {
    CHECK(e["ranks"] == 4);
    CHECK(e["busbw_points"] == 2);
    CHECK(e["latency_points"] == 1);
    CHECK(e["busbw_median_error"].get<double>() >= 0.0);
  }
  CHECK(j["fitted"].size() == 2);
  // Every fitted value inside its stated range.
  for (const auto& p : j["parameters"]) {
    INFO(p.dump());
    CHECK(p["value"].get<double>() >= p["lo"].get<double>() * (1 - 1e-9));
    CHECK(p["value"].get<double>() <= p["hi"].get<double>() * (1 + 1e-9));
  }
  const std::string md = read_text(dir / "fit" / "collective_fit.md");
  CHECK(md.find("## Held out") != std::string::npos);
  CHECK(md.find("| all_to_all | 4 |") != std::string::npos);
  CHECK(md.find("p.p2p_max_per_channel") != std::string::npos);
}

TEST_CASE("calibrate --collectives on bad files and options is bad input", "[cli]") {
  TempDir dir;
  const std::string out = (dir / "fit").string();
  auto run = [&](const std::string& file, const std::vector<std::string>& more = {}) {
    std::vector<std::string> args{"calibrate", "--collectives", file, "-o", out};
    args.insert(args.end(), more.begin(), more.end());
    return run_gcsim(args);
  };
  auto missing = run((dir / "none.json").string());
  CHECK(missing.exit_status == 2);
  CHECK(missing.err.find("none.json") != std::string::npos);

  write_text(dir / "text.json", "not json");
  auto text = run((dir / "text.json").string());
  CHECK(text.exit_status == 2);
  CHECK(text.err.find("not JSON") != std::string::npos);

  write_text(dir / "schema.json", R"({"schema": "gcsim.microbench.v1", "results": []})");
  auto schema = run((dir / "schema.json").string());
  CHECK(schema.exit_status == 2);
  CHECK(schema.err.find("key 'schema'") != std::string::npos);

  auto sweep = nlohmann::json::parse(small_sweep());
  auto with = [&](const char* name, auto change) {
    auto d = sweep;
    change(d);
    write_text(dir / name, d.dump());
    return run((dir / name).string());
  };
  auto op = with("op.json", [](auto& d) { d["results"][3]["op"] = "all_to_some"; });
  CHECK(op.exit_status == 2);
  CHECK(op.err.find("results[3].op 'all_to_some'") != std::string::npos);
  auto time = with("time.json", [](auto& d) { d["results"][1]["time_us"] = "fast"; });
  CHECK(time.exit_status == 2);
  CHECK(time.err.find("results[1].time_us must be a number") != std::string::npos);
  auto no_ranks = with("ranks.json", [](auto& d) { d["results"][0].erase("ranks"); });
  CHECK(no_ranks.exit_status == 2);
  CHECK(no_ranks.err.find("results[0] has no key 'ranks'") != std::string::npos);
  auto proto = with("proto.json", [](auto& d) { d["results"][2]["protocol"] = "LL64"; });
  CHECK(proto.exit_status == 2);
  CHECK(proto.err.find("results[2].protocol 'LL64'") != std::string::npos);
  auto no_choice = with("choice.json", [](auto& d) { d["choices"] = nlohmann::json::array(); });
  CHECK(no_choice.exit_status == 2);
  CHECK(no_choice.err.find("key 'choices'") != std::string::npos);
  auto no_device = with("device.json", [](auto& d) { d["meta"]["device_name"] = "MI300X"; });
  CHECK(no_device.exit_status == 2);
  CHECK(no_device.err.find("meta.device_name") != std::string::npos);

  write_text(dir / "sweep.json", small_sweep());
  const std::string good = (dir / "sweep.json").string();
  auto groups = run(good, {"--fit-groups", "two"});
  CHECK(groups.exit_status == 2);
  CHECK(groups.err.find("--fit-groups 'two'") != std::string::npos);
  auto one = run(good, {"--fit-groups", "1"});
  CHECK(one.exit_status == 2);
  auto absent = run(good, {"--fit-groups", "8"});
  CHECK(absent.exit_status == 2);
  CHECK(absent.err.find("no measurement on 8 GPUs") != std::string::npos);
  auto gpu = run(good, {"--gpu", "h900"});
  CHECK(gpu.exit_status == 2);
  CHECK(gpu.err.find("h900") != std::string::npos);
  auto both = run(good, {"--fit", good});
  CHECK(both.exit_status == 2);
  write_text(dir / "file", "x");
  auto not_dir = run_gcsim({"calibrate", "--collectives", good, "-o", (dir / "file").string()});
  CHECK(not_dir.exit_status == 2);
  CHECK(not_dir.err.find("cannot create the directory") != std::string::npos);
}
